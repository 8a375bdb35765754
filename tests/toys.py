"""The small things many tests build: a tiny Transformer, a trainer of one, and the
small algorithmic problems they learn (conftest.py's ``reverse_data`` and
``copy_data`` fixtures generate those once a session).

Test modules import these from here, never from each other
(``tests/test_import_layers.py`` checks that).
"""
from __future__ import annotations

import os
import random

import tensorflow as tf

from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.data.problem import Problem, Text2TextProblem
from t2t_lite.experiment import Experiment
from t2t_lite.hparam import HParams
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.models.transformer import Transformer
from t2t_lite.problems import translate
from t2t_lite.problems.algorithmic import (AlgorithmicIdentityDecimal40,
                                          AlgorithmicReverseBinary40)
from t2t_lite.registry import register_problem
from t2t_lite.training.train_options import TrainOptions
from t2t_lite.training.trainer import Trainer


def tiny_transformer_hparams(**overrides) -> HParams:
    """transformer_tiny cut to 16 channels, d_ff 32 and 2 heads: every test of the
    model's behaviour runs on it in milliseconds."""
    return transformer_tiny().override_from_dict(
        {"hidden_size": 16, "filter_size": 32, "num_heads": 2, **overrides})


def tiny_transformer(vocab_size: int, seed: int | None = None,
                     input_vocab_size: int | None = None, **overrides) -> Transformer:
    """An untrained tiny Transformer; ``seed`` fixes its initial weights;
    ``input_vocab_size``: a source vocabulary of its own."""
    if seed is not None:
        tf.keras.utils.set_random_seed(seed)
    return Transformer(tiny_transformer_hparams(**overrides), vocab_size, input_vocab_size)


class SmallReverse(AlgorithmicReverseBinary40):
    """Binary strings to reverse, 20k of them: enough to learn on, quick to write."""
    split_sizes = {"train": 20000, "dev": 300, "test": 10}
    name = "algorithmic_reverse_binary40"


class ShortCopy(AlgorithmicIdentityDecimal40):
    """Copy 1..8 symbols of 5."""
    num_symbols = 5
    max_length = 8
    split_sizes = {"train": 5000, "dev": 200, "test": 10}
    name = "algorithmic_identity_decimal40"


def generated_data(problem: Problem, folder: str) -> str:
    """``problem``'s vocabulary and shards written to ``folder`` (also its tmp dir)."""
    problem.generate_data(folder, folder)
    return folder


def training_hparams(overrides: str = "") -> HParams:
    """A tiny Transformer that trains in a few steps: 1+1 layers of 32 channels (each
    layer more costs every test that traces a step), no dropout (so replicas and
    repeated runs compute the same step), batches of 512 tokens."""
    return transformer_tiny().parse(
        "hidden_size=32,filter_size=64,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "layer_prepostprocess_dropout=0.0,batch_size=512").parse(overrides)


def fixed_reverse_batches() -> tf.data.Dataset:
    """One global batch of 4 binary strings (ids 2-3, EOS 1, padding 0) and their
    reversals, repeated: the batch the replica and multi-worker tests step on."""
    batch = {"inputs": tf.constant([[2, 3, 3, 1], [3, 2, 1, 0], [2, 1, 0, 0], [3, 3, 2, 1]]),
             "targets": tf.constant([[3, 3, 2, 1], [2, 3, 1, 0], [2, 1, 0, 0], [2, 3, 3, 1]])}
    return tf.data.Dataset.from_tensors(batch).repeat()


def make_trainer(data_dir: str, output_dir, hparams: HParams,
                 strategy: tf.distribute.Strategy | None = None,
                 model_name: str = "transformer", problem: Problem | None = None,
                 trainer_class: type[Trainer] = Trainer, **options) -> Trainer:
    """A ``trainer_class`` of ``model_name`` on ``problem`` (SmallReverse unless given);
    ``options`` are TrainOptions fields."""
    experiment = Experiment(problem or SmallReverse(), model_name, "test_hparams", hparams,
                            data_dir, str(output_dir))
    return trainer_class(experiment, TrainOptions(**options), strategy)


@translate.register_translate_problem
class TranslateEnxxExportTest(translate.TranslateProblem):
    """Sentences of a few words, "translated" by upper-casing them."""

    source_language, target_language = "en", "xx"
    subword_vocab_size = 300
    words = "the a dog cat runs sleeps on under green red house tree".split()

    def parallel_texts(self, tmp_dir, subset):
        size = {"train": 200, "dev": 4, "test": 4}[subset]
        for i in range(size):
            sentence = " ".join(self.words[(i * 7 + k * 5) % len(self.words)]
                                for k in range(2 + i % 4))
            yield {"en": sentence, "xx": sentence.upper()}


NUMBER_WORDS = "zero one two three four five six seven eight nine".split()


@register_problem
class NumberWordsToDigits(Text2TextProblem):
    """Number words to their digits, reversed ("one two" -> "2 1"): a source vocabulary
    of words and a target one of digits and signs, of another size (15 ids, 13 ids),
    each in its own file."""

    eval_metric = "sequence_accuracy"
    encoder_class = TokenTextEncoder
    target_tokens = [str(digit) for digit in range(10)] + ["+", "-"]
    split_sizes = {"train": 2000, "dev": 20, "test": 4}

    def build_vocab(self, data_dir: str, tmp_dir: str) -> TokenTextEncoder:
        return TokenTextEncoder(NUMBER_WORDS)

    @property
    def target_vocab_filename(self) -> str:
        return f"vocab.{self.name}.targets.txt"

    def vocab_files(self, data_dir: str) -> list[str]:
        return [*super().vocab_files(data_dir),
                os.path.join(data_dir, self.target_vocab_filename)]

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        os.makedirs(data_dir, exist_ok=True)
        target_path = os.path.join(data_dir, self.target_vocab_filename)
        if not os.path.exists(target_path):
            TokenTextEncoder(self.target_tokens).store_to_file(target_path)
        super().generate_data(data_dir, tmp_dir)

    def feature_encoders(self, data_dir: str) -> dict[str, TokenTextEncoder]:
        source = super().feature_encoders(data_dir)["inputs"]
        target_path = os.path.join(data_dir, self.target_vocab_filename)
        return {"inputs": source, "targets": TokenTextEncoder.load_from_file(target_path)}

    def generate_samples(self, data_dir, tmp_dir, split):
        rng = random.Random(split)
        for _ in range(self.split_sizes[split]):
            digits = [rng.randrange(10) for _ in range(rng.randint(1, 5))]
            yield {"inputs": " ".join(NUMBER_WORDS[d] for d in digits),
                   "targets": " ".join(str(d) for d in reversed(digits))}


@register_problem
class NumberWordsToDigitsSameSize(NumberWordsToDigits):
    """NumberWordsToDigits with a target vocabulary of the source's size (13 ids):
    two vocabularies still, whose ids mean other tokens."""

    target_tokens = [str(digit) for digit in range(10)]
