"""tensor2tensor.data_generators.generator_utils: the download helpers user code calls."""
from __future__ import annotations

import itertools
from typing import Callable, Iterable, Mapping, Sequence

from t2t_lite.compat.refusals import missing_names, refuse
from t2t_lite.compat.translate_sources import gunzip_file  # noqa: F401
from t2t_lite.data import download, tfrecords

Example = Mapping[str, Sequence[int]]


def maybe_download(directory: str, filename: str, uri: str) -> str:
    """``directory/filename``, downloaded from ``uri`` unless it is there already."""
    return download.maybe_download(directory, filename, uri)


def generate_files(generator: Iterable[Example], output_filenames: Sequence[str],
                   max_cases: int | None = None, cycle_every_n: int = 1) -> None:
    """Encoded examples dealt round robin over the shards, as T2T's did (whole shards
    or none: ``tfrecords.write_shards``)."""
    if cycle_every_n != 1:
        raise refuse(f"generate_files(cycle_every_n={cycle_every_n})",
                     "examples are dealt one a shard in turn")
    tfrecords.write_shards(itertools.islice(generator, max_cases), output_filenames)


def generate_dataset_and_shuffle(train_gen: Iterable[Example], train_paths: Sequence[str],
                                 dev_gen: Iterable[Example], dev_paths: Sequence[str],
                                 shuffle: bool = True) -> None:
    generate_files(train_gen, train_paths)
    generate_files(dev_gen, dev_paths)


def shuffle_dataset(filenames: Sequence[str], extra_fn: Callable | None = None) -> None:
    """Nothing to do: training reads the shards in a shuffled order through a shuffle
    buffer (t2t_lite/data/pipeline.py), which T2T's shuffle of each shard was for."""
    if extra_fn is not None:
        raise refuse("shuffle_dataset(extra_fn=...)", "packing is not done here")


__getattr__ = missing_names("data_generators.generator_utils", {
    "get_or_generate_vocab": "a Text2TextProblem builds its vocabulary from "
                             "approx_vocab_size and generate_text_for_vocab",
    "get_or_generate_vocab_inner": "a Text2TextProblem builds its vocabulary from "
                                   "approx_vocab_size and generate_text_for_vocab",
    "maybe_download_from_drive": "download the file into --tmp_dir yourself; "
                                 "maybe_download then finds it",
})
