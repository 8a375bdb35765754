"""tensor2tensor's LSTM hparams sets under T2T's names, holding T2T's values in our keys.

T2T's ``tensor2tensor/models/lstm.py`` builds every LSTM set on ``lstm_seq2seq``,
itself ``basic_params1`` with a smaller shape. Read into our keys:

* T2T's ``num_hidden_layers`` is both layer counts (its encoder and decoder have
  as many layers), and its embeddings are ``hidden_size`` wide (the symbol
  modality embeds into hidden_size): ``embedding_size = hidden_size``.
* T2T's ``lstm_seq2seq`` and ``lstm_seq2seq_attention`` models reverse the source
  (``reverse_source``); its bidirectional models read it in order whatever the set
  says (``t2t_lite/models/t2t_lstm.py``).
* T2T's attention sets pick the score of ``tf.contrib.seq2seq``'s AttentionWrapper:
  BahdanauAttention (additive, v . tanh(W_q h_t + W_m h_s), no bias) is our
  "concat", LuongAttention (multiplicative, h_t . W_a h_s, unscaled) our "general";
  T2T's depth (num_units) is the decoder's hidden_size: ``attention_size = 0``. The
  wrapper feeds the attention vector to the next step's input (input feeding) and
  outputs it (``output_attention=True``), which our Luong model does.
* Training: Adam (beta1 0.85, beta2 0.997, epsilon 1e-6), T2T's "legacy" schedule
  with no decay (an exponential warmup from 1% over 100 steps, then the constant
  learning_rate 0.1 times T2T's Adam correction 0.002: 2e-4), label smoothing 0.1,
  the loss a mean over target tokens, the global gradient norm clipped at 2,
  batches of 1024 tokens, and T2T's ``max_length=0``, which means batch_size.

Where the models differ from T2T's in a way no key expresses, the set's docstring
and docs/FROM_T2T.md say so; in every set: weights start as Keras's initializers
(T2T: uniform_unit_scaling with gain 1 over each whole LSTM kernel, input and
recurrent rows alike; embeddings N(0, hidden_size^-0.5) multiplied by
sqrt(hidden_size)), dropout is also applied before the softmax (T2T: on each
LSTM layer's input only), the softmax has a bias, Adam is Keras's (T2T: LazyAdam,
whose moments of the embedding rows a batch does not use stay unchanged), and
the reversed source keeps EOS last (T2T reversed it too: ``EOS c b a``).
"""
from t2t_lite.hparam import HParams
from t2t_lite.hparams.lstm import lstm_attention_base, lstm_base
from t2t_lite.registry import hparams_sets, register_hparams

# T2T's lstm_seq2seq shape (batch_size is tokens per GPU, as ours per replica).
T2T_HIDDEN_SIZE = 128
T2T_NUM_HIDDEN_LAYERS = 2
T2T_BATCH_SIZE = 1024


def _t2t_training(hparams: HParams) -> HParams:
    """basic_params1's training values as T2T's lstm_seq2seq keeps them, in our keys."""
    hparams.optimizer = "adam"
    hparams.optimizer_adam_beta1 = 0.85
    hparams.optimizer_adam_beta2 = 0.997
    hparams.optimizer_adam_epsilon = 1e-6
    # T2T's "legacy" schedule: learning_rate * 0.002 (Adam's correction) * a warmup
    # 0.01^((warmup - step) / warmup) before step 100 and the decay scheme's factor
    # after it ("none": 1). T2T's exp-decay keys, unused under "none", are copied too.
    hparams.learning_rate = 0.1
    hparams.learning_rate_schedule = "legacy"
    hparams.learning_rate_decay_scheme = "none"
    hparams.learning_rate_constant = 1.0
    hparams.learning_rate_warmup_steps = 100
    hparams.learning_rate_decay_steps = 5000
    hparams.learning_rate_decay_rate = 1.0
    hparams.learning_rate_decay_staircase = False
    hparams.label_smoothing = 0.1
    hparams.loss_normalizer = "tokens"  # T2T's loss: a mean over the target tokens
    hparams.clip_grad_norm = 2.0
    hparams.weight_decay = 0.0  # lstm_seq2seq's (basic_params1's is 1e-6)
    hparams.batch_size = T2T_BATCH_SIZE
    hparams.max_length = T2T_BATCH_SIZE  # T2T's max_length=0: "use batch_size instead"
    hparams.length_bucket_step = 1.1
    return hparams


def _t2t_shape(hparams: HParams) -> HParams:
    hparams.hidden_size = T2T_HIDDEN_SIZE
    hparams.embedding_size = T2T_HIDDEN_SIZE
    hparams.num_encoder_layers = T2T_NUM_HIDDEN_LAYERS
    hparams.num_decoder_layers = T2T_NUM_HIDDEN_LAYERS
    hparams.dropout = 0.2
    hparams.reverse_source = True
    hparams.shared_embedding = False
    hparams.shared_embedding_and_softmax_weights = False
    # T2T's uniform_unit_scaling scales each kernel by its fan-in; of ours, Keras's
    # initializers scale by fan-in and fan-out, and give the zero biases with the
    # forget gate's at 1 that T2T's LSTMCell (forget_bias=1) computes with.
    hparams.initializer = "keras"
    hparams.initializer_gain = 1.0
    return hparams


@register_hparams
def lstm_seq2seq() -> HParams:
    """T2T's ``lstm_seq2seq``, for the ``lstm_seq2seq`` model (also T2T's
    ``lstm_seq2seq_bidirectional_encoder``): 2 layers of 128 cells, 128-dim
    embeddings, reversed source, dropout 0.2, batches of 1024 tokens, Adam at
    T2T's legacy schedule (2e-4 after an exponential warmup of 100 steps), label
    smoothing 0.1, gradient norm at most 2. The differences every T2T LSTM set
    shares are in this module's docstring."""
    return _t2t_training(_t2t_shape(lstm_base()))


def _t2t_attention(score: str) -> HParams:
    """T2T's ``lstm_attention_base`` (lstm_seq2seq with one attention head of
    hidden_size) with the score of T2T's attention_mechanism."""
    hparams = _t2t_training(_t2t_shape(lstm_attention_base()))
    hparams.attention_score = score
    hparams.attention_scope = "global"
    hparams.attention_size = 0  # T2T's num_units: the decoder's hidden_size
    hparams.input_feeding = True  # the AttentionWrapper's cell_input_fn
    hparams.bidirectional_encoder = False
    # basic_params1's scheduled sampling: off. T2T's warmup to a probability set
    # later was exponential by default; ours is linear over the same steps.
    hparams.scheduled_sampling_prob = 0.0
    hparams.scheduled_sampling_warmup_steps = 50_000
    return hparams


@register_hparams
def lstm_bahdanau_attention() -> HParams:
    """T2T's ``lstm_bahdanau_attention``, for ``lstm_seq2seq_attention`` (our
    ``lstm_seq2seq_attention_luong``) and its bidirectional twin: lstm_seq2seq's
    values with additive attention (``attention_score=concat``) of 128 units,
    queried with the decoder's current top state and fed to the next step.

    That is T2T's model, not Bahdanau et al.'s (our lstm_bahdanau set and
    lstm_seq2seq_attention_bahdanau model query the previous state and add a
    maxout layer). Beyond the module's list: T2T's attention vector was W [h_t; c_t]
    with no tanh (ours tanh(W [c_t; h_t]), Luong's), T2T attended over the padding
    after each source too (no memory_sequence_length; ours never does), and T2T
    kept the attention vector 128 wide when hidden_size was overridden (its
    attention_layer_size was fixed in the set; ours is hidden_size)."""
    return _t2t_attention("concat")


@register_hparams
def lstm_luong_attention() -> HParams:
    """T2T's ``lstm_luong_attention``: lstm_bahdanau_attention with the
    multiplicative score h_t . W_a h_s (``attention_score=general``), with the
    same differences from T2T as that set."""
    return _t2t_attention("general")


# T2T: "For backwards compatibility, defaults to bahdanau" -- the same set.
register_hparams("lstm_attention")(lstm_bahdanau_attention)

# T2T's sets whose models have no twin here, refused in one line each.
_MULTI_HEAD = ("T2T gave the AttentionWrapper the same attention mechanism 4 times, each "
               "with its own attention layer, their outputs projected back to hidden_size; "
               "no key of ours expresses that: use --hparams_set={}")
hparams_sets.refuse("lstm_bahdanau_attention_multi",
                    _MULTI_HEAD.format("lstm_bahdanau_attention"))
hparams_sets.refuse("lstm_luong_attention_multi", _MULTI_HEAD.format("lstm_luong_attention"))
hparams_sets.refuse("lstm_asr_v1", "a speech-recognition set (audio features in, 600,000 "
                    "samples long); t2t-lite has no audio problems; for text use "
                    "--hparams_set=lstm_bahdanau_attention")
_AREA = ("T2T's area attention (Li et al. 2019, keys and values pooled over spans of "
         "2 positions, 4 heads) does not exist here; the nearest is --hparams_set="
         "lstm_luong_attention --hparams='hidden_size=1024,embedding_size=1024,"
         "batch_size={batch},dropout={dropout}'")
for _name, _batch, _dropout in (("lstm_area_attention_base", 16384, 0.2),
                                ("lstm_area_attention_enfr", 16384, 0.1),
                                ("lstm_area_attention_char", 20480, 0.2),
                                ("lstm_area_attention_char_enfr", 20480, 0.1)):
    hparams_sets.refuse(_name, _AREA.format(batch=_batch, dropout=_dropout))
