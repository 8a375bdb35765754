"""The user's own sets, built on T2T's transformer_base."""
from tensor2tensor.models import transformer
from tensor2tensor.utils import registry


@registry.register_hparams
def transformer_chat_tiny():
  hparams = transformer.transformer_base()
  hparams.num_hidden_layers = 1
  hparams.hidden_size = 32
  hparams.filter_size = 64
  hparams.num_heads = 2
  hparams.batch_size = 512
  hparams.learning_rate_constant = 1.0
  hparams.learning_rate_warmup_steps = 50
  hparams.learning_rate_schedule = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"
  hparams.max_input_seq_length = 40
  return hparams
