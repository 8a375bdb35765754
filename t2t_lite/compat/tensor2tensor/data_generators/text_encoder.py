"""tensor2tensor.data_generators.text_encoder: T2T's encoders, constructed as T2T's were.

The reserved ids are T2T's (PAD 0, EOS 1). ``TokenTextEncoder(vocab_filename,
replace_oov=...)`` reads one token a line; ``SubwordTextEncoder(filename)`` reads the
vocabulary a t2t-lite problem wrote (sentencepiece): T2T's own subtoken files are
refused in one line, since their segmentation is not sentencepiece's.
"""
from __future__ import annotations

from t2t_lite.compat.refusals import T2TNameError, missing_names, refuse, users_place
from t2t_lite.contracts.reserved_ids import EOS_ID, NUM_RESERVED_IDS, PAD_ID  # noqa: F401
from t2t_lite.data import encoders, subword
from t2t_lite.data.encoders import ByteTextEncoder, TextEncoder  # noqa: F401

PAD, EOS = encoders.RESERVED_TOKENS
RESERVED_TOKENS = list(encoders.RESERVED_TOKENS)


class TokenTextEncoder(encoders.TokenTextEncoder):
    """T2T's signature: a vocabulary file or ``vocab_list``; ``replace_oov`` names the
    token unknown words become (T2T raised on them without one; here they become
    ``<UNK>``, which the vocabulary gains)."""

    def __init__(self, vocab_filename: str | None, reverse: bool = False,
                 vocab_list: list[str] | None = None, replace_oov: str | None = None,
                 num_reserved_ids: int = NUM_RESERVED_IDS):
        if reverse or num_reserved_ids != NUM_RESERVED_IDS:
            raise refuse(f"TokenTextEncoder(reverse={reverse}, "
                         f"num_reserved_ids={num_reserved_ids})",
                         "reverse the text yourself; PAD and EOS are the reserved ids")
        if vocab_filename is not None:
            loaded = encoders.TokenTextEncoder.load_from_file(vocab_filename,
                                                              replace_oov or "<UNK>")
            vocab_list = loaded.tokens
        super().__init__(vocab_list or [], oov_token=replace_oov or "<UNK>")


def SubwordTextEncoder(filename: str | None = None) -> subword.SubwordTextEncoder:  # noqa: N802
    """The subword vocabulary at ``filename``, written by a t2t-lite problem."""
    if filename is None:
        raise refuse("SubwordTextEncoder() built in user code",
                     "a Text2TextProblem builds its vocabulary from approx_vocab_size")
    try:
        return subword.SubwordTextEncoder.load_from_file(filename)
    except FileNotFoundError:
        raise
    except Exception:  # noqa: BLE001 - not a sentencepiece model: T2T's own format
        raise T2TNameError(f"{filename} is not a vocabulary t2t-lite wrote (T2T's own "
                           "subtoken list?): t2t-lite's subword vocabularies are "
                           "sentencepiece models; remove the file and run t2t-datagen to "
                           "build one", users_place()) from None


def native_to_unicode(text: str | bytes) -> str:
    return text.decode("utf-8") if isinstance(text, bytes) else text


to_unicode = native_to_unicode


def unicode_to_native(text: str) -> str:
    return text


def strip_ids(ids: list[int], ids_to_strip: list[int]) -> list[int]:
    """``ids`` without the trailing ones of ``ids_to_strip``."""
    ids = list(ids)
    while ids and ids[-1] in ids_to_strip:
        ids.pop()
    return ids


__getattr__ = missing_names("data_generators.text_encoder", {
    "ImageEncoder": "t2t-lite's problems are text to text",
    "ClassLabelEncoder": "t2t-lite has no classification models",
})
