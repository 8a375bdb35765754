"""A user's own registrations, imported with --t2t_usr_dir (used by the tests)."""
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.registry import register_hparams


@register_hparams
def my_very_small_transformer():
    hparams = transformer_tiny()
    hparams.hidden_size = 32
    hparams.filter_size = 64
    # One layer a side: what the CLI tests check does not depend on depth, and every
    # command they start traces half the graph (a trainer's start: 19 -> 15 s CPU).
    hparams.num_encoder_layers = 1
    hparams.num_decoder_layers = 1
    return hparams


from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40  # noqa: E402
from t2t_lite.registry import register_problem  # noqa: E402


@register_problem
class TinyReverseBinary(AlgorithmicReverseBinary40):
    """A user's problem: the library's reverse task, small enough for CLI tests."""
    split_sizes = {"train": 400, "dev": 20, "test": 20}
