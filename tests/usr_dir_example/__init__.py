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


from t2t_lite.data.problem import check_split  # noqa: E402
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40  # noqa: E402
from t2t_lite.registry import register_problem  # noqa: E402


@register_problem
class TinyReverseBinary(AlgorithmicReverseBinary40):
    """A user's problem: the library's reverse task, small enough for CLI tests."""
    split_sizes = {"train": 400, "dev": 20, "test": 20}

    # Raw evaluation files (t2t-datagen --eval_files_dir), as a user's problem gives them.
    def eval_file_names(self, split: str) -> tuple[str, str]:
        check_split(split)
        return f"{self.name}.{split}.inputs", f"{self.name}.{split}.targets"

    def eval_lines(self, tmp_dir: str, split: str) -> tuple[list[str], list[str]]:
        samples = list(self.generate_samples("", tmp_dir, split))
        return [s["inputs"] for s in samples], [s["targets"] for s in samples]


@register_problem
class TinyCopyBinary(AlgorithmicReverseBinary40):
    """Another problem with the same vocabulary (a checkpoint of it means other things)."""
    split_sizes = {"train": 40, "dev": 4, "test": 4}

    def transform(self, symbols: list[str]) -> list[str]:
        return symbols
