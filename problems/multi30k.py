"""Multi30k task 1: English image descriptions with German and French translations.

The raw files are the gzipped text of the public Multi30k repository,
``data/task1/raw/{train,val,test_2016_flickr,...}.{en,de,fr}.gz``. Each is used
in place when it is already in ``tmp_dir`` and downloaded there otherwise.
Splits: train = ``train`` (29000 pairs), dev = ``val`` (1014), test =
``test_2016_flickr`` (1000); the 2017 and 2018 test sets are extra evaluation
sets (``test_pairs`` / ``write_eval_files``), fetched only when asked for.

Vocabulary: 8000 shared BPE ids. The training text has about 350k words per
language, and only about 4000 word types per language occur 5 or more times;
8000 ids cover nearly all of those (in both languages) as whole pieces and
split only the rare words, whose embeddings a larger vocabulary could not train.
"""
from __future__ import annotations

import gzip
from typing import Iterator

from t2t_lite.data.download import maybe_download
from t2t_lite.problems.translate import TranslateProblem, register_translate_problem

URL_BASE = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"


class Multi30kProblem(TranslateProblem):
    """English to another Multi30k language, with a shared 8000-id BPE vocabulary."""

    source_language = "en"
    subword_vocab_size = 8000
    subword_model_type = "bpe"
    url_base = URL_BASE
    split_files = {"train": "train", "dev": "val", "test": "test_2016_flickr"}
    extra_test_sets = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco",
                       "test_2018_flickr")

    def raw_filename(self, subset: str, language: str) -> str:
        return f"{self.split_files.get(subset, subset)}.{language}.gz"

    def _read_lines(self, tmp_dir: str, subset: str, language: str) -> list[str]:
        filename = self.raw_filename(subset, language)
        path = maybe_download(tmp_dir, filename, self.url_base + filename)
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines[-1] == "":  # the final newline ends the last line
            lines.pop()
        return lines

    def parallel_texts(self, tmp_dir: str, subset: str) -> Iterator[dict[str, str]]:
        columns = {language: self._read_lines(tmp_dir, subset, language)
                   for language in self.languages}
        counts = {self.raw_filename(subset, lang): len(lines) for lang, lines in columns.items()}
        if len(set(counts.values())) != 1:
            raise ValueError(f"Multi30k files in {tmp_dir} are not line-aligned ({counts}); "
                             "delete them so that they are downloaded again")
        return (dict(zip(columns, texts)) for texts in zip(*columns.values()))


@register_translate_problem
class TranslateEndeMulti30k(Multi30kProblem):
    """Multi30k English -> German."""

    target_language = "de"


@register_translate_problem
class TranslateEnfrMulti30k(Multi30kProblem):
    """Multi30k English -> French."""

    target_language = "fr"
