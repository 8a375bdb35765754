"""tensor2tensor's ``Text2TextProblem`` contract, with T2T's meaning.

A problem written for T2T says what it wants through properties: the vocabulary
(``vocab_type``, ``approx_vocab_size``, ``vocab_filename``, ``oov_token``,
``max_subtoken_length``, ``generate_text_for_vocab``), the splits
(``dataset_splits``, ``is_generate_per_split``) and its metrics (``eval_metrics``).
``T2TText2TextProblem`` reads every one of them:

- SUBWORD: a sentencepiece BPE vocabulary (byte fallback: nothing is unknown) trained
  on ``generate_text_for_vocab`` at ``approx_vocab_size`` ids, or at the size the text
  allows, with one warning (T2T's builder also gave what the text allowed);
  CHARACTER: UTF-8 bytes, T2T's ids; TOKEN: the user's ``vocab_filename`` (found in
  data_dir, else copied from tmp_dir), unknown words as ``oov_token``.
- ``is_generate_per_split`` False: one ``generate_samples(TRAIN)`` call, its samples
  dealt round robin over the shards of every split of ``dataset_splits`` (100 train
  and 1 dev by default), as T2T did: the dev split holds samples train never sees.
- What t2t-lite cannot honour (``has_inputs`` False, ``packed_length``, a metric it
  lacks, a T2T hook it never calls) is refused when the class is registered
  (``check_problem_class``), in one line naming the user's FILE:LINE.
"""
from __future__ import annotations

import glob
import inspect
import itertools
import logging
import os
import shutil
from typing import Any, Iterator

from t2t_lite.compat.refusals import T2TNameError
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data import tfrecords
from t2t_lite.data.encoders import ByteTextEncoder, TextEncoder, TokenTextEncoder
from t2t_lite.data.problem import SPLITS, Text2TextProblem
from t2t_lite.data.subword import SubwordTextEncoder

logger = logging.getLogger(__name__)


class DatasetSplit:
    """T2T's split names; EVAL is t2t-lite's "dev", as T2T's own string was."""
    TRAIN = "train"
    EVAL = "dev"
    TEST = "test"


class VocabType:
    CHARACTER = "character"
    SUBWORD = "subwords"
    TOKEN = "tokens"


# T2T's metric names -> what a t2t-lite run computes for them.
TEACHER_FORCED_METRICS = {"accuracy", "neg_log_perplexity"}  # every dev evaluation
DECODE_METRICS = {"approx_bleu_score": "bleu", "accuracy_per_sequence": "sequence_accuracy"}
METRIC_ADVICE = {
    "rouge_2_fscore": "ROUGE is not computed here: score the decodes with a ROUGE tool "
                      "(t2t-decoder --decode_to_file writes them)",
    "rouge_L_fscore": "ROUGE is not computed here: score the decodes with a ROUGE tool "
                      "(t2t-decoder --decode_to_file writes them)",
    "accuracy_top5": "the dev evaluation gives top-1 accuracy and the loss only",
}

# T2T Problem hooks that t2t-lite never calls: defined in a user's class, refused.
UNCALLED_HOOKS = {
    "hparams": "T2T's Problem.hparams set modalities and loss multipliers; t2t-lite's "
               "text problems have one symbol modality a side: remove the method",
    "preprocess_example": "t2t-lite applies no per-example preprocessing: change the text "
                          "in generate_samples, or cap lengths with the hparams "
                          "max_input_seq_length / max_target_seq_length",
    "example_reading_spec": "t2t-lite's examples hold int64 'inputs' and 'targets' only",
    "serving_input_fn": "t2t-exporter writes the serving signatures",
    "max_length": "set the hparam max_length instead",
    "decode_hooks": "t2t-lite runs no decode hooks",
    "additional_reserved_tokens": "t2t-lite's vocabularies reserve PAD and EOS only",
    "use_vocab_from_other_problem": "point vocab_filename at the other problem's file",
    "multiprocess_generate": "t2t-datagen generates in one process",
    "inputs_prefix": "put the prefix in the text generate_samples yields",
    "targets_prefix": "put the prefix in the text generate_samples yields",
    "generator": "tensor2tensor <= 1.4's Problem API: subclass "
                 "text_problems.Text2TextProblem and yield samples from generate_samples",
}
# What tensor2tensor (1.5 on) ignored in a Text2TextProblem, as t2t-lite does, saying so.
T2T_IGNORED = {
    "vocab_size": "approx_vocab_size sizes the vocabulary",
    "targeted_vocab_size": "approx_vocab_size sizes the vocabulary (2**15 unless defined)",
    "vocab_name": "vocab_filename names the vocabulary",
    "train_shards": "dataset_splits gives the shards",
    "dev_shards": "dataset_splits gives the shards",
    "use_subword_tokenizer": "vocab_type chooses the vocabulary",
    "is_character_level": "vocab_type chooses the vocabulary",
}


def _place_of(cls: type, attribute: str) -> str:
    """FILE:LINE where the user's code gives ``cls`` its ``attribute``: the definition
    in their class, or their class's own line when it inherits it from ours
    (``Text2SelfProblem``'s ``has_inputs``)."""
    for owner in _users_classes(cls):
        if attribute in vars(owner):
            value = vars(owner)[attribute]
            target = value.fget if isinstance(value, property) else value
            if callable(target):
                return _source_line(inspect.unwrap(target))
            return _source_line(owner)
    users = _users_classes(cls)
    return _source_line(users[0]) if users else cls.__module__


def _source_line(obj: Any) -> str:
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return getattr(obj, "__module__", "?")


def _users_classes(cls: type) -> list[type]:
    """The classes of ``cls``'s bases written outside t2t-lite (the user's)."""
    return [owner for owner in cls.__mro__
            if not owner.__module__.startswith("t2t_lite.") and owner is not object]


def check_problem_class(cls: type, name: str) -> None:
    """Refuses, before any work, what ``cls`` asks of T2T that t2t-lite cannot give."""
    for owner in _users_classes(cls):
        for attribute in list(vars(owner)):
            if attribute in UNCALLED_HOOKS:
                raise T2TNameError(f"problem {name} defines T2T's {attribute}, which "
                                   f"t2t-lite never calls: {UNCALLED_HOOKS[attribute]}",
                                   _place_of(owner, attribute))
            if attribute in T2T_IGNORED:
                logger.warning("%s: problem %s defines %s, which tensor2tensor ignored, as "
                               "t2t-lite does: %s", _place_of(owner, attribute), name,
                               attribute, T2T_IGNORED[attribute])
                if attribute == "vocab_size":  # it would hide Problem.vocab_size(data_dir)
                    delattr(owner, attribute)
    # Abstract methods left to define do not stop the check (T2T found them at datagen).
    probe = type(cls.__name__, (cls,), {method: lambda *args: None
                                         for method in cls.__abstractmethods__})
    probe.__module__ = cls.__module__
    problem = probe()
    if not problem.has_inputs:
        raise T2TNameError(
            f"problem {name} has has_inputs=False (a language model); t2t-lite's models "
            "are encoder-decoders: yield {'inputs': previous text, 'targets': next text}",
            _place_of(cls, "has_inputs"))
    if getattr(problem, "packed_length", None):
        raise T2TNameError(f"problem {name} sets packed_length={problem.packed_length}; "
                           "t2t-lite batches by length buckets and packs nothing: remove it",
                           _place_of(cls, "packed_length"))
    if problem.vocab_type not in (VocabType.SUBWORD, VocabType.CHARACTER, VocabType.TOKEN):
        raise T2TNameError(f"problem {name}: vocab_type {problem.vocab_type!r} is none of "
                           "VocabType.SUBWORD, CHARACTER, TOKEN", _place_of(cls, "vocab_type"))
    problem.eval_metric  # noqa: B018 - refuses a metric t2t-lite does not compute
    for split in problem.dataset_splits:
        if split.get("split") not in SPLITS or int(split.get("shards", 0)) < 1:
            raise T2TNameError(f"problem {name}: dataset_splits entry {split!r} needs a "
                               "split of DatasetSplit.TRAIN / EVAL / TEST and shards >= 1",
                               _place_of(cls, "dataset_splits"))


class T2TText2TextProblem(Text2TextProblem):
    """``text_problems.Text2TextProblem`` as T2T defined it (the module docstring)."""

    def __init__(self, was_reversed: bool = False, was_copy: bool = False):
        if was_reversed or was_copy:
            raise T2TNameError(f"{type(self).__name__}(was_reversed={was_reversed}, "
                               f"was_copy={was_copy}): T2T's reversed and copied problems "
                               "are not made here; register the reverse direction as its "
                               "own problem")

    # ----- T2T's properties, with T2T's defaults -----
    @property
    def approx_vocab_size(self) -> int:
        return 2**15

    @property
    def vocab_type(self) -> str:
        return VocabType.SUBWORD

    @property
    def oov_token(self) -> str:
        return "<UNK>"

    @property
    def max_subtoken_length(self) -> int | None:
        return None

    @property
    def max_samples_for_vocab(self) -> int | None:
        return None

    @property
    def dataset_splits(self) -> list[dict[str, Any]]:
        return [{"split": DatasetSplit.TRAIN, "shards": 100},
                {"split": DatasetSplit.EVAL, "shards": 1}]

    @property
    def is_generate_per_split(self) -> bool:
        raise T2TNameError(f"problem {self.name} does not say is_generate_per_split (T2T "
                           "required it): True when generate_samples gives each split its "
                           "own data, False to split one stream", _place_of(type(self),
                                                                              "generate_samples"))

    @property
    def packed_length(self) -> int | None:
        return None

    @property
    def input_space_id(self) -> int:
        return 0  # T2T's space ids name no embedding here: one problem a run

    @property
    def target_space_id(self) -> int:
        return 0

    def dataset_filename(self) -> str:
        return self.name

    @property
    def vocab_filename(self) -> str:
        if self.vocab_type == VocabType.SUBWORD:
            return f"vocab.{self.dataset_filename()}.{self.approx_vocab_size}.{VocabType.SUBWORD}"
        return f"vocab.{self.dataset_filename()}.{VocabType.TOKEN}"

    def eval_metrics(self) -> list[str]:
        return ["accuracy", "accuracy_top5", "accuracy_per_sequence", "neg_log_perplexity"]

    @property
    def eval_metric(self) -> str:
        """The decode metric T2T's ``eval_metrics`` names (BLEU unless it names another);
        its teacher-forced ones are the dev evaluation's loss and accuracy."""
        if type(self).eval_metrics is T2TText2TextProblem.eval_metrics:
            return "bleu"  # T2T's default list: nothing asked beyond the dev evaluation
        decode = []
        for metric in self.eval_metrics():
            if metric in DECODE_METRICS:
                decode.append(DECODE_METRICS[metric])
            elif metric not in TEACHER_FORCED_METRICS:
                raise T2TNameError(f"problem {self.name}: T2T's metric {metric!r} "
                                   f"{METRIC_ADVICE.get(metric, 'is not computed here')}; "
                                   "t2t-lite gives accuracy, neg_log_perplexity, "
                                   "approx_bleu_score (as BLEU) and accuracy_per_sequence",
                                   _place_of(type(self), "eval_metrics"))
        return decode[0] if decode else "bleu"

    # ----- what t2t-lite's Problem asks, answered from them -----
    def num_shards(self, split: str) -> int:
        return {s["split"]: int(s["shards"]) for s in self.dataset_splits}.get(split, 1)

    def generated_splits(self, data_dir: str) -> tuple[str, ...]:
        return tuple(s["split"] for s in self.dataset_splits)

    def shard_paths(self, data_dir: str, split: str) -> list[str]:
        """``dataset_splits``' shards of ``split``; or, when those are not all there, the
        one complete set of another count (a user's generate_data chose its own, and
        T2T read whatever shards it found)."""
        expected = tfrecords.shard_filenames(data_dir, self.dataset_filename(), split,
                                             self.num_shards(split))
        if all(os.path.exists(path) for path in expected):
            return expected
        prefix = glob.escape(self.dataset_filename())
        found = glob.glob(os.path.join(glob.escape(data_dir),
                                       f"{prefix}-{split}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9]*"))
        complete = [paths for paths in (
            tfrecords.shard_filenames(data_dir, self.dataset_filename(), split, count)
            for count in sorted({int(path.rsplit("-of-", 1)[1]) for path in found
                                 if path.rsplit("-of-", 1)[1].isdigit()}))
            if all(os.path.exists(path) for path in paths)]
        return complete[0] if len(complete) == 1 else expected

    # T2T's shard paths, which a user's own generate_data passes to generate_files.
    def training_filepaths(self, data_dir: str, num_shards: int,
                           shuffled: bool = True) -> list[str]:
        return tfrecords.shard_filenames(data_dir, self.dataset_filename(), DatasetSplit.TRAIN,
                                         num_shards)

    def dev_filepaths(self, data_dir: str, num_shards: int, shuffled: bool = True) -> list[str]:
        return tfrecords.shard_filenames(data_dir, self.dataset_filename(), DatasetSplit.EVAL,
                                         num_shards)

    def test_filepaths(self, data_dir: str, num_shards: int,
                       shuffled: bool = True) -> list[str]:
        return tfrecords.shard_filenames(data_dir, self.dataset_filename(), DatasetSplit.TEST,
                                         num_shards)

    def vocab_files(self, data_dir: str) -> list[str]:
        if self.vocab_type == VocabType.CHARACTER:
            return []
        return [os.path.join(data_dir, self.vocab_filename)]

    # ----- the vocabulary -----
    def generate_text_for_vocab(self, data_dir: str, tmp_dir: str) -> Iterator[str]:
        samples = self.generate_samples(data_dir, tmp_dir, DatasetSplit.TRAIN)
        for sample in itertools.islice(samples, self.max_samples_for_vocab):
            if self.has_inputs:
                yield sample["inputs"]
            yield sample["targets"]

    def get_or_create_vocab(self, data_dir: str, tmp_dir: str | None,
                            force_get: bool = False) -> TextEncoder:
        if self.vocab_type == VocabType.CHARACTER:
            return ByteTextEncoder()
        path = os.path.join(data_dir, self.vocab_filename)
        if self.vocab_type == VocabType.TOKEN:
            return self._token_vocab(path, tmp_dir)
        if os.path.exists(path):
            return SubwordTextEncoder.load_from_file(path)
        if force_get or tmp_dir is None:
            raise FileNotFoundError(f"vocabulary {path} of problem {self.name} does not "
                                    f"exist; write it with: {self.datagen_command(data_dir)}")
        encoder = SubwordTextEncoder.train(
            self.generate_text_for_vocab(data_dir, tmp_dir), self.approx_vocab_size,
            fit_to_data=True, max_piece_length=self.max_subtoken_length or 16)
        encoder.store_to_file(path)
        logger.info("%s: wrote a %d-id subword vocabulary to %s", self.name,
                    encoder.vocab_size, path)
        return encoder

    def _token_vocab(self, path: str, tmp_dir: str | None) -> TokenTextEncoder:
        """T2T's TOKEN vocabulary: the user's file, one token a line (PAD and EOS put
        first when the file lacks them, so no word takes their ids)."""
        if not os.path.exists(path) and tmp_dir:
            found = os.path.join(tmp_dir, self.vocab_filename)
            if os.path.exists(found):
                shutil.copyfile(found, path + ".incomplete")
                os.replace(path + ".incomplete", path)
        if not os.path.exists(path):
            where = f" nor in {tmp_dir}" if tmp_dir else ""
            raise FileNotFoundError(f"problem {self.name} has vocab_type TOKEN, but its "
                                    f"vocab_filename {self.vocab_filename} is not in "
                                    f"{os.path.dirname(path)}{where}: put the vocabulary "
                                    "there, one token a line")
        return TokenTextEncoder.load_from_file(path, oov_token=self.oov_token)

    def feature_encoders(self, data_dir: str) -> dict[str, TextEncoder]:
        encoder = self.get_or_create_vocab(data_dir, None, force_get=True)
        return {key: encoder for key in self.feature_keys}

    # ----- the data -----
    def generate_encoded_samples(self, data_dir: str, tmp_dir: str,
                                 dataset_split: str) -> Iterator[dict[str, list[int]]]:
        encoder = self.get_or_create_vocab(data_dir, tmp_dir)
        for sample in self.generate_samples(data_dir, tmp_dir, dataset_split):
            missing = [key for key in self.feature_keys if key not in sample]
            if missing:
                raise KeyError(f"{type(self).__name__}.generate_samples yielded a sample "
                               f"without {missing}: {sample!r}")
            yield {key: encoder.encode(sample[key]) + [EOS_ID] for key in self.feature_keys}

    def _checked_encoded(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, list[int]]]:
        """The user's encoded samples, with nothing in them that would be dropped."""
        for sample in self.generate_encoded_samples(data_dir, tmp_dir, split):
            extra = sorted(set(sample) - set(self.feature_keys))
            if extra:
                raise T2TNameError(f"problem {self.name}: generate_encoded_samples yields "
                                   f"the features {extra}, which t2t-lite would not read; "
                                   f"it reads {list(self.feature_keys)}",
                                   _place_of(type(self), "generate_encoded_samples"))
            yield sample

    def generate_data(self, data_dir: str, tmp_dir: str, task_id: int = -1) -> None:
        os.makedirs(data_dir, exist_ok=True)
        os.makedirs(tmp_dir, exist_ok=True)
        self.get_or_create_vocab(data_dir, tmp_dir)
        self.check_shards_vocabulary(data_dir)  # shards kept must be this vocabulary's
        splits = self.generated_splits(data_dir)
        if self.is_generate_per_split:
            batches = [(split,) for split in splits]
        else:  # one stream, dealt over every split's shards: dev never repeats train
            batches = [splits]
        for group in batches:
            paths = [path for split in group for path in self.shard_paths(data_dir, split)]
            if all(os.path.exists(path) for path in paths):
                logger.info("%s: %s shards exist, skipping", self.name, "/".join(group))
                continue
            self.record_shards_vocabulary(data_dir)
            logger.info("%s: generating %s data into %d shards", self.name, "/".join(group),
                        len(paths))
            written = tfrecords.write_shards(self._checked_encoded(data_dir, tmp_dir, group[0]),
                                             paths)
            self._warn_empty_splits(data_dir, group, written, len(paths))

    def _warn_empty_splits(self, data_dir: str, splits: tuple[str, ...], written: int,
                           shards: int) -> None:
        """One warning a split that got no sample (dealt one in ``shards`` to each
        shard, a split's later shards get none when there are fewer samples)."""
        first = 0
        for split in splits:
            count = self.num_shards(split)
            dealt = sum(written // shards + (1 if i < written % shards else 0)
                        for i in range(first, first + count))
            first += count
            if not dealt:
                logger.warning("%s: the %s split got none of the %d samples dealt over %d "
                               "shards (dataset_splits): its figures would measure nothing; "
                               "give more samples or fewer shards", self.name, split,
                               written, shards)
