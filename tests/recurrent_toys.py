"""Small RNN models and batches the recurrent tests share: one vocabulary of 12 ids,
three padded pairs, each model name, and the tiny hparams they train with."""
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.hparams.lstm import lstm_attention_base

VOCAB = 12
INPUTS = tf.constant([[3, 4, 5, 6, 1, 0], [7, 1, 0, 0, 0, 0], [2, 9, 8, 3, 10, 1]])
TARGETS = tf.constant([[8, 9, 1, 0, 0], [5, 6, 7, 2, 1], [4, 1, 0, 0, 0]])

SEQ2SEQ = "lstm_seq2seq"
BAHDANAU = "lstm_seq2seq_attention_bahdanau"
LUONG = "lstm_seq2seq_attention_luong"
# (model, hparams overrides): every model, score, scope, and input feeding on and off.
CONFIGS = [
    (SEQ2SEQ, "reverse_source=true"),
    (SEQ2SEQ, "reverse_source=false,num_encoder_layers=1,num_decoder_layers=1"),
    (BAHDANAU, "reverse_source=false"),
    (LUONG, "attention_score=general,input_feeding=true"),
    (LUONG, "attention_score=dot,input_feeding=false"),
    (LUONG, "attention_score=concat,input_feeding=false,attention_scope=local_m"),
    (LUONG, "attention_score=general,attention_scope=local_p,reverse_source=false"),
    (LUONG, "attention_score=concat,embedding_size=8,shared_embedding=true,"
            "shared_embedding_and_softmax_weights=true"),
    (LUONG, "attention_score=dot,bidirectional_encoder=true,reverse_source=false"),
]
IDS = [f"{model.removeprefix('lstm_seq2seq')}[{over}]" for model, over in CONFIGS]


def small_hparams(overrides: str = ""):
    hparams = lstm_attention_base().extend(maxout_units=6)
    hparams.parse("hidden_size=8,embedding_size=6,num_encoder_layers=2,num_decoder_layers=2,"
                  "attention_size=5,attention_window=1,initializer_gain=0.5")
    return hparams.parse(overrides) if overrides else hparams


def make_model(name: str, overrides: str = "", input_vocab_size: int | None = None):
    """``input_vocab_size``: a source vocabulary of its own (None: shared)."""
    tf.keras.utils.set_random_seed(7)
    return registry.models[name](small_hparams(overrides), VOCAB, input_vocab_size)
