"""Problems: what a dataset is, how its data is generated, and how it is read back.

A ``Problem`` subclass is registered with ``@register_problem`` and instantiated
with no arguments. ``generate_data`` writes a vocabulary file and sharded
TFRecords into ``data_dir`` (raw downloads go to ``tmp_dir``); ``dataset``
reads a split back as int32 id sequences ending in ``EOS_ID``.

``Text2TextProblem`` covers every text-to-text task: a subclass only yields
``{"inputs": str, "targets": str}`` samples per split from ``generate_samples``
and, when bytes are not the right vocabulary, overrides ``build_vocab`` and
``encoder_class``.
"""
from __future__ import annotations

import abc
import contextlib
import functools
import hashlib
import json
import logging
import os
import shlex
from typing import Any, Iterator

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data import parallel_encoding, tfrecords
from t2t_lite.data.alignment_links import ALIGNMENTS, token_links, word_indices
from t2t_lite.data.augmentation import Augment, chained
from t2t_lite.data.encoders import ByteTextEncoder, TextEncoder
from t2t_lite.data.subword_sampling import sampled_encoders, subword_sampling
from t2t_lite.hparam import HParams, HParamsError

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
# vocab_fingerprint by (problem class, sha256 of the vocabulary files): a command asks
# for it several times (run record, checkpoint, each split read), and hashing the
# file is cheap where decoding every id is not.
_FINGERPRINTS: dict[tuple[type, str], str] = {}


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")


class Problem(abc.ABC):
    """A dataset with its vocabulary, stored as sharded TFRecords per split."""

    has_inputs: bool = True  # False for problems with targets only (language models)
    # How decodes are scored: a metric registered by name (t2t_lite/metrics/scoring.py),
    # called with eval_metric_options(). Named, so that data/ imports no metric.
    eval_metric: str = "bleu"
    # Processes that encode a large split (t2t-datagen --num_concurrent_processes):
    # None, the CPUs this process may use (at most 8); 1, this process alone.
    encode_processes: int | None = None

    @property
    def name(self) -> str:
        """The registered name (snake_case of the class name unless a subclass says otherwise)."""
        return registry.snake_case(type(self).__name__)

    def num_shards(self, split: str) -> int:
        """How many TFRecord files ``split`` is written to."""
        return 10 if split == "train" else 1

    @property
    def feature_keys(self) -> tuple[str, ...]:
        """The keys of every example: ("inputs", "targets"), or ("targets",)."""
        return ("inputs", "targets") if self.has_inputs else ("targets",)

    @abc.abstractmethod
    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        """Writes the vocabulary and the shards of every split, skipping finished work."""

    @abc.abstractmethod
    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        """``{"inputs": encoder, "targets": encoder}`` (the two may be one object)."""

    def vocab_size(self, data_dir: str) -> int:
        """The size of the targets' vocabulary: the ids the model predicts."""
        return self.feature_encoders(data_dir)["targets"].vocab_size

    def input_vocab_size(self, data_dir: str) -> int:
        """The size of the inputs' vocabulary: the ids the model's encoder embeds
        (``vocab_size`` when the vocabulary is shared or there are no inputs)."""
        encoders = self.feature_encoders(data_dir)
        return encoders.get("inputs", encoders["targets"]).vocab_size

    def shares_vocabulary(self, data_dir: str) -> bool:
        """Whether inputs and targets are one vocabulary (one encoder object, or no
        inputs). Two vocabularies of one size are still two: their ids mean other
        tokens, so no embedding may serve both."""
        encoders = self.feature_encoders(data_dir)
        return encoders.get("inputs", encoders["targets"]) is encoders["targets"]

    def vocab_files(self, data_dir: str) -> list[str]:
        """The vocabulary files in ``data_dir`` (``vocab_filename``'s by default; a
        problem with a file per side names both): ``vocab_fingerprint`` caches by
        their contents."""
        name = getattr(self, "vocab_filename", "")
        return [os.path.join(data_dir, name)] if name else []

    def vocab_fingerprint(self, data_dir: str) -> str:
        """A short hash of the vocabulary: tells runs, checkpoints and shards written
        with another one (of the same size) from this one."""
        paths = self.vocab_files(data_dir)
        cache_key = None
        if paths and all(os.path.isfile(path) for path in paths):
            files = hashlib.sha256()
            for path in paths:
                with open(path, "rb") as f:
                    files.update(hashlib.sha256(f.read()).digest())
            cache_key = (type(self), files.hexdigest())
            if cache_key in _FINGERPRINTS:
                return _FINGERPRINTS[cache_key]
        encoders = self.feature_encoders(data_dir)
        digest = hashlib.sha256()
        for feature in sorted(encoders):
            encoder = encoders[feature]
            digest.update(feature.encode())
            digest.update(str(encoder.vocab_size).encode())
            for i in range(encoder.vocab_size):
                digest.update(encoder.decode([i]).encode("utf-8", "replace"))
        fingerprint = digest.hexdigest()[:16]
        if cache_key:
            _FINGERPRINTS[cache_key] = fingerprint
        return fingerprint

    def data_options(self) -> HParams | None:
        """The options a user gives this problem's data (``--data_options``: its
        files, its vocabulary), declared with their ranges; None (the default): the
        class fixes its data. ``data/data_options.py`` records them in ``data_dir``."""
        return None

    def resolve_data_options(self, options: HParams, tmp_dir: str) -> HParams:
        """``options`` as given, made whole: paths absolute, files found, keys that
        go together checked (one-line errors); ``tmp_dir`` is the datagen's."""
        return options

    def check_data_inputs(self, options: HParams) -> None:
        """Reads the input that ``options`` name through before anything is written,
        raising one line naming FILE:LINE at the first fault."""

    def decode_hparams_defaults(self) -> dict:
        """Decoding settings this problem needs (e.g. beam size, alpha); none by default."""
        return {}

    def eval_metric_options(self) -> dict:
        """Keyword options of the ``eval_metric`` scorer (none by default)."""
        return {}

    def postprocess_decode(self, source_line: str, decoded: str) -> str:
        """The output line for input ``source_line`` given the model's decoded target text
        (e.g. parsing rebuilds a tree over the input's words); ``decoded`` by default."""
        return decoded

    def graph_postprocess(self, sources: tf.Tensor, decoded: tf.Tensor) -> tf.Tensor:
        """``postprocess_decode`` inside a TensorFlow graph (an export runs it): string
        [N] source lines and [N] decoded texts -> [N] output lines, equal to
        ``postprocess_decode`` on what this problem's ``decode_constraint`` allows."""
        return decoded

    def eval_file_names(self, split: str) -> tuple[str, str]:
        """The file names of ``split``'s raw inputs and references (``t2t-datagen
        --eval_files_dir`` writes them; a split the problem lacks is refused here,
        before any work)."""
        raise ValueError(f"problem {self.name} has no raw evaluation files to write")

    def eval_lines(self, tmp_dir: str, split: str) -> tuple[list[str], list[str]]:
        """``split``'s raw inputs and their references, one a line, line-aligned: what
        ``t2t-decoder --decode_from_file=SOURCE --decode_reference=REFERENCE`` reads."""
        raise TypeError(f"{type(self).__name__} overrides eval_file_names but not "
                        "eval_lines; a problem with evaluation files gives both")

    def training_augmentation(self, data_dir: str, hparams: HParams) -> Augment | None:
        """A random change of each training example, drawn afresh each time it is read
        (``batch_examples`` applies it after shuffling), or None: the subword
        sampling ``sentencepiece_alpha`` asks for (``subword_sampling.py``), then the
        problem's own (``word_dropout_augmentation``)."""
        augments = [self.word_dropout_augmentation(data_dir, hparams)]
        if hparams.sentencepiece_alpha:
            sampled = sampled_encoders(self.name, self.feature_encoders(data_dir), hparams)
            augments.insert(0, subword_sampling(sampled, hparams.sentencepiece_alpha,
                                                hparams.sentencepiece_nbest_size))
        return chained([augment for augment in augments if augment is not None])

    def word_dropout_augmentation(self, data_dir: str, hparams: HParams) -> Augment | None:
        """Word dropout's change of a training example (``hparams.word_dropout``), or None.

        None here; ``word_dropout`` needs a word-level vocabulary, so a problem
        without one refuses it rather than train as if it were off.
        """
        if hparams.word_dropout:
            raise HParamsError(f"word_dropout={hparams.word_dropout}: problem {self.name} has "
                               "no word-level vocabulary to drop words from (the parsing "
                               "problems have one); leave word_dropout at 0")
        return None

    def decode_constraint(self, data_dir: str) -> DecodeConstraint | None:
        """A constraint restricting which tokens beam search may produce (e.g.
        parsing: only well-formed trees); None = no limit."""
        return None

    def shard_paths(self, data_dir: str, split: str) -> list[str]:
        check_split(split)
        return tfrecords.shard_filenames(data_dir, self.name, split, self.num_shards(split))

    def datagen_command(self, data_dir: str) -> str:
        """The shell command that generates this problem's data into ``data_dir``."""
        return (f"t2t-datagen --problem={self.name} "
                f"--data_dir={shlex.quote(os.path.abspath(data_dir))} --tmp_dir=/tmp/t2t_datagen")

    def require_data(self, split: str, data_dir: str) -> list[str]:
        """The shard paths of ``split``; ``FileNotFoundError`` naming them and the
        t2t-datagen command that writes them when any is missing, ``ValueError``
        when they were encoded with another vocabulary (``check_shards_vocabulary``)."""
        paths = self.shard_paths(data_dir, split)
        missing = [path for path in paths if not os.path.exists(path)]
        if missing:
            pattern = tfrecords.shard_pattern(data_dir, self.name, split, len(paths))
            raise FileNotFoundError(
                f"no complete {split} data for problem {self.name}: {len(missing)} of "
                f"{len(paths)} shards {pattern} are missing; write them with: "
                f"{self.datagen_command(data_dir)}")
        self.check_shards_vocabulary(data_dir)
        return paths

    def shards_record_path(self, data_dir: str) -> str:
        """``NAME.shards.json`` beside the shards: the fingerprint of the vocabulary
        they were encoded with (shards written before it have none)."""
        train_shard = os.path.basename(self.shard_paths(data_dir, "train")[0])
        return os.path.join(data_dir, train_shard.rsplit("-train-", 1)[0] + ".shards.json")

    def record_shards_vocabulary(self, data_dir: str) -> None:
        """Notes, unless noted already, that the shards about to be written are encoded
        with the vocabulary in ``data_dir`` (before they are: a killed run leaves a
        true record)."""
        path = self.shards_record_path(data_dir)
        if os.path.exists(path):  # checked against the vocabulary before any writing
            return
        with open(path + ".incomplete", "w") as f:
            json.dump({"vocab_fingerprint": self.vocab_fingerprint(data_dir)}, f)
        os.replace(path + ".incomplete", path)

    def check_shards_vocabulary(self, data_dir: str) -> None:
        """Refuses shards encoded with another vocabulary than the one in ``data_dir``
        (one rebuilt after they were written): their ids would mean other tokens."""
        path = self.shards_record_path(data_dir)
        if not os.path.exists(path):
            return
        with open(path) as f:
            recorded = json.load(f).get("vocab_fingerprint")
        current = self.vocab_fingerprint(data_dir)
        if recorded != current:
            vocabulary = " and ".join(self.vocab_files(data_dir)) or "the problem's"
            raise ValueError(
                f"the {self.name} shards in {data_dir} were encoded with another vocabulary "
                f"than {vocabulary} (fingerprint "
                f"{recorded}, now {current}): their ids would mean other tokens. Remove the "
                f"shards and {os.path.basename(path)}, then run: "
                f"{self.datagen_command(data_dir)}")

    def check_data(self, split: str, data_dir: str) -> list[str]:
        """``require_data``, and every shard read to the end: a truncated or corrupt
        one raises ``CorruptShardError`` naming it and the command that rewrites it."""
        paths = self.require_data(split, data_dir)
        tfrecords.check_shards(paths, remedy=f"Delete it and re-run: "
                                             f"{self.datagen_command(data_dir)}")
        return paths

    def dataset(self, split: str, data_dir: str, shuffle_files: bool = False,
                with_corpus: bool = False, with_alignments: bool = False) -> tf.data.Dataset:
        """Examples ``{"inputs": int32[None], "targets": int32[None]}``, each ending in EOS
        (``with_corpus``: and ``tfrecords.CORPUS``, int32[1], its training corpus;
        ``with_alignments``: and ``ALIGNMENTS``, its token links, empty without any).

        The shards are checked first (``check_data``), so a corrupt one fails here, by name.
        """
        paths = self.check_data(split, data_dir)
        keys = (self.feature_keys + ((tfrecords.CORPUS,) if with_corpus else ())
                + ((ALIGNMENTS,) if with_alignments else ()))
        return tfrecords.read_shards(paths, keys, shuffle_files=shuffle_files)

    def corpus_weights(self, data_dir: str) -> list[float]:
        """Each training corpus's weight, when the train split holds several that
        training samples by weight (``tfrecords.CORPUS``); [] for one corpus."""
        return []

    def has_alignments(self, data_dir: str) -> bool:
        """Whether training examples hold word alignments' token links (``ALIGNMENTS``),
        which guided alignment training reads; none by default."""
        return False


class Text2TextProblem(Problem):
    """Text in, text out: samples of strings are encoded with one shared vocabulary."""

    encoder_class: type[TextEncoder] = ByteTextEncoder  # reads back what build_vocab wrote

    @abc.abstractmethod
    def generate_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, str]]:
        """Yields ``{"inputs": str, "targets": str}`` for ``split`` (no "inputs"
        when ``has_inputs`` is False); downloads go to ``tmp_dir``."""

    def build_vocab(self, data_dir: str, tmp_dir: str) -> TextEncoder:
        """The vocabulary to write, an ``encoder_class``; bytes by default (nothing to learn)."""
        return ByteTextEncoder()

    @property
    def vocab_filename(self) -> str:
        return f"vocab.{self.name}.txt"

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        path = os.path.join(data_dir, self.vocab_filename)
        if not os.path.exists(path):
            raise FileNotFoundError(f"vocabulary {path} of problem {self.name} does not "
                                    f"exist; write it with: {self.datagen_command(data_dir)}")
        encoder = self.encoder_class.load_from_file(path)
        return {key: encoder for key in self.feature_keys}

    def _write_vocab(self, data_dir: str, tmp_dir: str) -> None:
        path = os.path.join(data_dir, self.vocab_filename)
        if os.path.exists(path):
            logger.info("%s: vocabulary %s exists, keeping it", self.name, path)
            return
        encoder = self.build_vocab(data_dir, tmp_dir)
        if not isinstance(encoder, self.encoder_class):
            raise TypeError(f"{type(self).__name__}.build_vocab returned a "
                            f"{type(encoder).__name__} but encoder_class is "
                            f"{self.encoder_class.__name__}; make them agree")
        encoder.store_to_file(path + ".incomplete")
        os.replace(path + ".incomplete", path)
        logger.info("%s: wrote vocabulary of %d ids to %s", self.name, encoder.vocab_size, path)

    def generated_splits(self, data_dir: str) -> tuple[str, ...]:
        """The splits ``generate_data`` writes: all (a problem of the user's files
        writes those given)."""
        return SPLITS

    def _checked_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, Any]]:
        """``generate_samples``, each refused when a feature is missing."""
        for sample in self.generate_samples(data_dir, tmp_dir, split):
            missing = [key for key in self.feature_keys if key not in sample]
            if missing:
                raise KeyError(f"{type(self).__name__}.generate_samples yielded a sample "
                               f"without {missing}: {sample!r}")
            yield sample

    def _encode_sample(self, encoders: dict[str, TextEncoder],
                       sample: dict[str, Any]) -> bytes:
        """One sample's record: its features' ids with EOS (in a worker process of
        ``parallel_encoding`` on a large split)."""
        encoded = {key: encoders[key].encode(sample[key]) + [EOS_ID]
                   for key in self.feature_keys}
        if tfrecords.CORPUS in sample:  # an int: the sample's training corpus
            encoded[tfrecords.CORPUS] = [sample[tfrecords.CORPUS]]
        if ALIGNMENTS in sample:  # word links: made token links here
            encoded[ALIGNMENTS] = token_links(
                word_indices(encoders["inputs"], encoded["inputs"][:-1]),
                word_indices(encoders["targets"], encoded["targets"][:-1]),
                sample[ALIGNMENTS])
        return tfrecords.serialize(encoded)

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        os.makedirs(data_dir, exist_ok=True)
        os.makedirs(tmp_dir, exist_ok=True)
        self._write_vocab(data_dir, tmp_dir)
        encoders = self.feature_encoders(data_dir)
        self.check_shards_vocabulary(data_dir)  # shards kept below must be this vocabulary's
        for split in self.generated_splits(data_dir):
            paths = self.shard_paths(data_dir, split)
            if all(os.path.exists(path) for path in paths):
                logger.info("%s: %s shards exist, skipping", self.name, split)
                continue
            self.record_shards_vocabulary(data_dir)
            logger.info("%s: generating %s data into %d shards", self.name, split, len(paths))
            records = parallel_encoding.encoded_records(
                self._checked_samples(data_dir, tmp_dir, split),
                functools.partial(self._encode_sample, encoders), self.encode_processes)
            with contextlib.closing(records):  # its workers stop with an error too
                tfrecords.write_records(records, paths)
