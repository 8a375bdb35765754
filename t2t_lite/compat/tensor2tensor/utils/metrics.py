"""tensor2tensor.utils.metrics: T2T's metric names (what each means here:
``problem_contract``'s tables; a name t2t-lite does not compute is refused when the
problem naming it is registered)."""
from t2t_lite.compat.refusals import missing_names, refuse


class _Refusing(type):
    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise refuse(f"metrics.Metrics.{name}", "t2t-lite computes accuracy, "
                     "neg_log_perplexity, BLEU (APPROX_BLEU) and ACC_PER_SEQ")


class Metrics(metaclass=_Refusing):
    ACC = "accuracy"
    ACC_TOP5 = "accuracy_top5"
    ACC_PER_SEQ = "accuracy_per_sequence"
    NEG_LOG_PERPLEXITY = "neg_log_perplexity"
    APPROX_BLEU = "approx_bleu_score"
    ROUGE_2_F = "rouge_2_fscore"
    ROUGE_L_F = "rouge_L_fscore"
    EDIT_DISTANCE = "edit_distance"
    WORD_ERROR_RATE = "word_error_rate"


__getattr__ = missing_names("utils.metrics", {})
