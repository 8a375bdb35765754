"""tensor2tensor.layers.common_hparams: T2T's basic_params1 has no twin of its own."""
from t2t_lite.compat.refusals import missing_names

__getattr__ = missing_names("layers.common_hparams", {
    "basic_params1": "build on transformer.transformer_base() or lstm.lstm_seq2seq(), "
                     "which hold T2T's keys and a model's",
})
