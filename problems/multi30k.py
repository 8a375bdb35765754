"""Multi30k task 1: English image descriptions with German and French translations.

The raw files are the gzipped text of the public Multi30k repository,
``data/task1/raw/{train,val,test_2016_flickr,...}.{en,de,fr}.gz``. Each is used
in place when it is already in ``tmp_dir`` (and has the expected sha256) and
downloaded there otherwise, from a pinned commit of the repository. The 2017
and 2018 extra test sets are fetched unverified: their hashes were not taken.
Splits: train = ``train`` (29000 pairs), dev = ``val`` (1014), test =
``test_2016_flickr`` (1000); the 2017 and 2018 test sets are extra evaluation
sets (``test_pairs`` / ``write_eval_files``), fetched only when asked for.

Vocabulary: 8000 shared BPE ids. The training text has about 350k words per
language, and only about 4000 word types per language occur 5 or more times;
8000 ids cover nearly all of those (in both languages) as whole pieces and
split only the rare words, whose embeddings a larger vocabulary could not train.
"""
from __future__ import annotations

from typing import Iterator

from t2t_lite.data.download import maybe_download
from t2t_lite.data.text_files import read_utf8_lines
from t2t_lite.problems.translate import TranslateProblem, register_translate_problem

# Pinned to commits, not the moving master branch, and checked by sha256. The 2018
# test set came later than the rest.
RAW_URL = "https://raw.githubusercontent.com/multi30k/dataset/{commit}/data/task1/raw/{filename}"
COMMIT = "c9be912dc05a3ebf9ae5bb5f7f58c1791cda43ab"
LATER_COMMITS = {"test_2018_flickr.en.gz": "c60773c2a3db82db0e05655b3d01cf391e810800",
                 "test_2018_flickr.de.gz": "c40b37b23d6387214f8ab37335b5a8672b9745f2",
                 "test_2018_flickr.fr.gz": "c40b37b23d6387214f8ab37335b5a8672b9745f2"}
SHA256 = {
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
}


class Multi30kProblem(TranslateProblem):
    """English to another Multi30k language, with a shared 8000-id BPE vocabulary."""

    source_language = "en"
    subword_vocab_size = 8000
    subword_model_type = "bpe"
    split_files = {"train": "train", "dev": "val", "test": "test_2016_flickr"}
    extra_test_sets = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco",
                       "test_2018_flickr")

    def raw_filename(self, subset: str, language: str) -> str:
        return f"{self.split_files.get(subset, subset)}.{language}.gz"

    def raw_url(self, filename: str) -> str:
        """Where ``filename`` is downloaded from: the repository at a fixed commit."""
        return RAW_URL.format(commit=LATER_COMMITS.get(filename, COMMIT), filename=filename)

    def _read_lines(self, tmp_dir: str, subset: str, language: str) -> list[str]:
        filename = self.raw_filename(subset, language)
        path = maybe_download(tmp_dir, filename, self.raw_url(filename), SHA256.get(filename))
        # A tab is white space within a sentence here (train.de has one).
        return read_utf8_lines(path, allow_tab=True)

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
