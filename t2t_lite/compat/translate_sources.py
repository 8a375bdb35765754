"""tensor2tensor's ``TranslateProblem`` and the corpus entries it names.

``source_data_files(split)`` gives entries ``[url, (source_file, target_file)]``
(or ``[url, ("tsv", source_column, target_column, glob)]``): the archive at ``url`` is
downloaded into ``tmp_dir`` unless it is there already (a user's machine without a
network puts it there), unpacked when the files it holds are missing (tar, tgz,
zip; ``.gz`` files gunzipped), and the pairs of every entry are concatenated into
``NAME-compiled-SPLIT.lang1`` / ``.lang2``, kept for the next run, as T2T did. SGML
test sets lose their markup. T2T compiled the test split into the dev split's file
(both "dev"); each split has its own file here, so a test set never reads dev's.
"""
from __future__ import annotations

import glob
import gzip
import os
import shutil
import tarfile
import zipfile
from typing import Iterator, Sequence

from t2t_lite.compat.problem_contract import DatasetSplit, T2TText2TextProblem
from t2t_lite.compat.refusals import T2TNameError
from t2t_lite.compat.text_iterators import text2text_txt_iterator
from t2t_lite.data import download
from t2t_lite.data.text_files import iter_utf8_lines


def _unpack(archive: str, tmp_dir: str) -> None:
    """Unpacks ``archive`` into ``tmp_dir``; members may not leave it (tar's data filter)."""
    if not os.path.exists(archive):
        raise FileNotFoundError(f"{archive} is missing: the corpus entry's files are not in "
                                f"{tmp_dir} and neither is the archive that holds them")
    if archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as packed:
            packed.extractall(tmp_dir)
        return
    with tarfile.open(archive, "r:*") as packed:
        packed.extractall(tmp_dir, filter="data")


def gunzip_file(gz_path: str, new_path: str) -> None:
    """``gz_path`` decompressed to ``new_path`` (kept when it exists), atomically."""
    if os.path.exists(new_path):
        return
    with gzip.open(gz_path, "rb") as packed, open(new_path + ".incomplete", "wb") as out:
        shutil.copyfileobj(packed, out)
    os.replace(new_path + ".incomplete", new_path)


def _plain(path: str) -> str:
    """``path``, gunzipped beside itself first when it is a ``.gz``."""
    if not path.endswith(".gz"):
        return path
    gunzip_file(path, path[:-3])
    return path[:-3]


def _strip_sgm(line: str) -> str:
    """A segment's text from an SGML test-set line; '' for the markup lines."""
    line = line.strip()
    if line.startswith("<seg") and line.endswith("</seg>"):
        return line[line.index(">") + 1:-len("</seg>")]
    return "" if line.startswith("<") else line


def _entry_pairs(entry: Sequence, tmp_dir: str) -> Iterator[tuple[str, str]]:
    """The (source, target) pairs of one ``source_data_files`` entry."""
    url, files = entry[0], entry[1]
    archive = os.path.join(tmp_dir, os.path.basename(url))
    if url.startswith(("http://", "https://", "ftp://")):
        download.maybe_download(tmp_dir, os.path.basename(url), url)
    if files[0] == "tsv":
        _, source_column, target_column, pattern = files
        found = sorted(glob.glob(os.path.join(tmp_dir, pattern)))
        if not found:
            _unpack(archive, tmp_dir)
            found = sorted(glob.glob(os.path.join(tmp_dir, pattern)))
        for path in found:
            for line in iter_utf8_lines(_plain(path), allow_tab=True):
                parts = line.split("\t")
                if len(parts) > max(source_column, target_column):
                    source, target = parts[source_column].strip(), parts[target_column].strip()
                    if source and target:
                        yield source, target
        return
    if files[0] == "tmx":
        raise T2TNameError("tensor2tensor's tmx corpus entries are not read here: convert "
                           "the .tmx file to two line-aligned text files")
    source_path, target_path = (os.path.join(tmp_dir, name) for name in files)
    if not (os.path.exists(source_path) and os.path.exists(target_path)):
        _unpack(archive, tmp_dir)
    sgm = source_path.endswith("sgm") and target_path.endswith("sgm")
    sources = iter_utf8_lines(_plain(source_path))
    targets = iter_utf8_lines(_plain(target_path))
    for source, target in zip(sources, targets, strict=True):
        if sgm:
            source, target = _strip_sgm(source), _strip_sgm(target)
        if source.strip() and target.strip():
            yield source.strip(), target.strip()


def compile_data(tmp_dir: str, datasets: Sequence[Sequence], filename: str) -> str:
    """The entries' pairs in ``tmp_dir/filename.lang1`` / ``.lang2`` (kept when both
    exist); the path prefix, as T2T's ``translate.compile_data`` returned it."""
    prefix = os.path.join(tmp_dir, filename)
    paths = (prefix + ".lang1", prefix + ".lang2")
    if all(os.path.exists(path) for path in paths):
        return prefix
    with open(paths[0] + ".incomplete", "w", encoding="utf-8") as lang1, \
            open(paths[1] + ".incomplete", "w", encoding="utf-8") as lang2:
        for entry in datasets:
            for source, target in _entry_pairs(entry, tmp_dir):
                lang1.write(source + "\n")
                lang2.write(target + "\n")
    for path in paths:
        os.replace(path + ".incomplete", path)
    return prefix


class TranslateProblem(T2TText2TextProblem):
    """T2T's ``translate.TranslateProblem``: one split a call, pairs from
    ``source_data_files``; a subclass may instead override ``generate_samples``."""

    @property
    def is_generate_per_split(self) -> bool:
        return True

    def eval_metrics(self) -> list[str]:
        return ["accuracy", "accuracy_top5", "accuracy_per_sequence", "neg_log_perplexity",
                "approx_bleu_score"]

    @property
    def eval_metric(self) -> str:
        if type(self).eval_metrics is TranslateProblem.eval_metrics:
            return "bleu"
        return super().eval_metric

    def source_data_files(self, dataset_split: str) -> list:
        raise T2TNameError(f"problem {self.name} is a TranslateProblem that neither "
                           "defines source_data_files(dataset_split) nor overrides "
                           "generate_samples: give one of them")

    def vocab_data_files(self) -> list:
        return self.source_data_files(DatasetSplit.TRAIN)

    def generate_samples(self, data_dir: str, tmp_dir: str,
                         dataset_split: str) -> Iterator[dict[str, str]]:
        prefix = compile_data(tmp_dir, self.source_data_files(dataset_split),
                              f"{self.name}-compiled-{dataset_split}")
        return text2text_txt_iterator(prefix + ".lang1", prefix + ".lang2")

    def generate_text_for_vocab(self, data_dir: str, tmp_dir: str) -> Iterator[str]:
        if type(self).generate_samples is not TranslateProblem.generate_samples:
            yield from super().generate_text_for_vocab(data_dir, tmp_dir)
            return
        files = self.vocab_data_files()
        same = files == self.source_data_files(DatasetSplit.TRAIN)
        prefix = compile_data(tmp_dir, files,
                              f"{self.name}-compiled-{'train' if same else 'vocab'}")
        for path in (prefix + ".lang1", prefix + ".lang2"):
            yield from iter_utf8_lines(path)
