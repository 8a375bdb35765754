"""tensor2tensor.data_generators.text_problems: T2T's Text2TextProblem and helpers."""
from __future__ import annotations

from typing import Iterable, Iterator

from t2t_lite.compat.problem_contract import T2TText2TextProblem, VocabType  # noqa: F401
from t2t_lite.compat.refusals import missing_names
from t2t_lite.compat.text_iterators import (  # noqa: F401
    text2self_txt_iterator, text2text_distill_iterator, text2text_txt_iterator,
    text2text_txt_tab_iterator, txt_line_iterator)
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import TextEncoder

Text2TextProblem = T2TText2TextProblem


class Text2SelfProblem(T2TText2TextProblem):
    """T2T's language-model problem; refused when registered (has_inputs False)."""

    @property
    def has_inputs(self) -> bool:
        return False


def text2text_generate_encoded(sample_generator: Iterable[dict[str, str]],
                               vocab: TextEncoder, targets_vocab: TextEncoder | None = None,
                               has_inputs: bool = True) -> Iterator[dict[str, list[int]]]:
    """Samples of text encoded, each side ending in EOS, as T2T's helper gave them."""
    targets_vocab = targets_vocab or vocab
    for sample in sample_generator:
        encoded = {"targets": targets_vocab.encode(sample["targets"]) + [EOS_ID]}
        if has_inputs:
            encoded["inputs"] = vocab.encode(sample["inputs"]) + [EOS_ID]
        yield encoded


__getattr__ = missing_names("data_generators.text_problems", {
    "Text2ClassProblem": "t2t-lite has no classification models: make the label the "
                         "target text of a Text2TextProblem",
    "QuestionAndContext2TextProblem": "join question and context into the inputs text of "
                                      "a Text2TextProblem",
    "ChoppedTextProblem": "a language model: t2t-lite's models are encoder-decoders",
    "Text2textTmpdir": "--problem=text2text_tmpdir is registered as T2T's",
})
