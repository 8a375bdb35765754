"""WMT English-German and English-French, read through tensorflow-datasets builders.

The builders download the statmt.org archives and prepare them once under
``tmp_dir/tensorflow_datasets``; later runs reuse what is prepared there.

- ``translate_ende_wmt32k``: tensor2tensor's En-De data (``wmt_t2t_translate``:
  Europarl v7, Common Crawl, News Commentary v13), 32768 shared BPE ids.
- ``translate_enfr_wmt32k``: tensor2tensor's En-Fr data, which is WMT 2014's
  (``wmt14_translate/fr-en``), 32768 shared word-pieces.
- ``translate_ende_wmt14_bpe37k``: the paper's En-De setup, WMT 2014
  (``wmt14_translate/de-en``, about 4.5M pairs), 37000 shared BPE ids.
- ``translate_enfr_wmt14_wp32k``: the paper's En-Fr setup, WMT 2014
  (``wmt14_translate/fr-en``, 36M pairs), 32000 shared word-pieces
  (sentencepiece's unigram model).

Every one uses newstest2013 as dev and newstest2014 as test. Word-pieces and
BPE come from ``SubwordTextEncoder``; each vocabulary is trained on a seeded
sample of ``vocab_max_sentences`` training sentences.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

from t2t_lite.data.download import DownloadError
from t2t_lite.problems.translate import TranslateProblem, register_translate_problem

if TYPE_CHECKING:
    import tensorflow_datasets as tfds

TFDS_DIRNAME = "tensorflow_datasets"  # under tmp_dir


class WmtTranslateProblem(TranslateProblem):
    """English and another language from the tensorflow-datasets builder ``tfds_name``."""

    tfds_name: str
    tfds_splits = {"train": "train", "dev": "validation", "test": "test"}
    vocab_max_sentences = 1_000_000

    def num_shards(self, split: str) -> int:
        return 100 if split == "train" else 1

    @property
    def tfds_config(self) -> str:
        """The builder config: "xx-en" for the language xx paired with English."""
        (other,) = set(self.languages) - {"en"}
        return f"{other}-en"

    def tfds_data_dir(self, tmp_dir: str) -> str:
        return os.path.join(tmp_dir, TFDS_DIRNAME)

    def prepared_builder(self, tmp_dir: str) -> tfds.core.DatasetBuilder:
        """The builder, its data downloaded and prepared under ``tmp_dir`` (once)."""
        import tensorflow_datasets as tfds  # heavy; only when WMT data is needed

        data_dir = self.tfds_data_dir(tmp_dir)
        builder = tfds.builder(self.tfds_name, config=self.tfds_config, data_dir=data_dir)
        try:
            builder.download_and_prepare()
        except Exception as error:  # tfds raises many types; each means the same to a user
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise DownloadError(
                f"tensorflow-datasets could not download and prepare "
                f"{self.tfds_name}/{self.tfds_config} in {data_dir} ({first_line}); its raw "
                f"files are {', '.join(_raw_urls(builder))}. Without network access, run the "
                f"same t2t-datagen on a machine that has it, then copy the folder it "
                f"prepared ({TFDS_DIRNAME} in its --tmp_dir) to {data_dir}") from error
        return builder

    def parallel_texts(self, tmp_dir: str, subset: str) -> Iterator[dict[str, str]]:
        import tensorflow_datasets as tfds

        builder = self.prepared_builder(tmp_dir)
        dataset = builder.as_dataset(split=self.tfds_splits[subset], shuffle_files=False)
        return ({language: example[language].decode("utf-8") for language in self.languages}
                for example in tfds.as_numpy(dataset))


def _raw_urls(builder: tfds.core.DatasetBuilder) -> list[str]:
    """The URLs of the archives a tensorflow-datasets WMT builder downloads."""
    from tensorflow_datasets.translate import wmt

    source = builder.builder_config.language_pair[0]
    urls = [url for names in builder.subsets.values() for name in names
            for url in wmt.DATASET_MAP[name].get_url(source)]
    return list(dict.fromkeys(urls))  # dev and test often share one archive


@register_translate_problem
class TranslateEndeWmt32k(WmtTranslateProblem):
    """tensor2tensor's WMT En-De with 32768 shared BPE ids."""

    source_language, target_language = "en", "de"
    tfds_name = "wmt_t2t_translate"
    subword_vocab_size = 32768
    subword_model_type = "bpe"


@register_translate_problem
class TranslateEnfrWmt32k(WmtTranslateProblem):
    """tensor2tensor's WMT En-Fr with 32768 shared word-pieces."""

    source_language, target_language = "en", "fr"
    tfds_name = "wmt14_translate"
    subword_vocab_size = 32768
    subword_model_type = "unigram"


@register_translate_problem
class TranslateEndeWmt14Bpe37k(WmtTranslateProblem):
    """The paper's WMT 2014 En-De: about 4.5M pairs, 37000 shared BPE ids."""

    source_language, target_language = "en", "de"
    tfds_name = "wmt14_translate"
    subword_vocab_size = 37000
    subword_model_type = "bpe"


@register_translate_problem
class TranslateEnfrWmt14Wp32k(WmtTranslateProblem):
    """The paper's WMT 2014 En-Fr: 36M pairs, 32000 shared word-pieces."""

    source_language, target_language = "en", "fr"
    tfds_name = "wmt14_translate"
    subword_vocab_size = 32000
    subword_model_type = "unigram"
