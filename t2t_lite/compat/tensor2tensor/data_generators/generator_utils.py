"""tensor2tensor.data_generators.generator_utils: the download helpers user code calls."""
from __future__ import annotations

from t2t_lite.compat.refusals import missing_names
from t2t_lite.compat.translate_sources import gunzip_file  # noqa: F401
from t2t_lite.data import download


def maybe_download(directory: str, filename: str, uri: str) -> str:
    """``directory/filename``, downloaded from ``uri`` unless it is there already."""
    return download.maybe_download(directory, filename, uri)


__getattr__ = missing_names("data_generators.generator_utils", {
    "get_or_generate_vocab": "a Text2TextProblem builds its vocabulary from "
                             "approx_vocab_size and generate_text_for_vocab",
    "get_or_generate_vocab_inner": "a Text2TextProblem builds its vocabulary from "
                                   "approx_vocab_size and generate_text_for_vocab",
    "generate_files": "a Text2TextProblem's samples are written by t2t-datagen",
    "generate_dataset_and_shuffle": "a Text2TextProblem's samples are written by "
                                    "t2t-datagen",
    "maybe_download_from_drive": "download the file into --tmp_dir yourself; "
                                 "maybe_download then finds it",
})
