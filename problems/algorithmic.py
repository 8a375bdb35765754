"""Algorithmic problems: reverse, copy and add sequences of digits.

As in T2T, every symbol is one token of a fixed vocabulary (the digits, plus
"+" for addition), written space-separated, so the data needs no download and
no learned vocabulary. Sequences have 1..40 symbols in every split (dev too,
so that sequence accuracy on dev measures the task that was trained); each
split is drawn from its own fixed seed, so generation is reproducible.
"""
from __future__ import annotations

import abc
import random
from typing import Iterator

from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.data.problem import Text2TextProblem
from t2t_lite.registry import register_problem


class AlgorithmicProblem(Text2TextProblem):
    """Random symbol sequences mapped to a target by a fixed rule."""

    eval_metric = "sequence_accuracy"
    num_symbols: int = 10  # the digits 0 .. num_symbols-1
    min_length: int = 1
    max_length: int = 40
    split_sizes: dict[str, int] = {"train": 100_000, "dev": 1000, "test": 1000}
    split_seeds: dict[str, int] = {"train": 1, "dev": 2, "test": 3}
    encoder_class = TokenTextEncoder

    def vocab_tokens(self) -> list[str]:
        return [str(digit) for digit in range(self.num_symbols)]

    def build_vocab(self, data_dir: str, tmp_dir: str) -> TokenTextEncoder:
        return TokenTextEncoder(self.vocab_tokens())

    @abc.abstractmethod
    def sample(self, rng: random.Random) -> tuple[list[str], list[str]]:
        """One (input tokens, target tokens) pair drawn with ``rng``."""

    def generate_samples(self, data_dir: str, tmp_dir: str,
                         split: str) -> Iterator[dict[str, str]]:
        rng = random.Random(self.split_seeds[split])
        for _ in range(self.split_sizes[split]):
            inputs, targets = self.sample(rng)
            yield {"inputs": " ".join(inputs), "targets": " ".join(targets)}


class _SequenceProblem(AlgorithmicProblem):
    """Inputs of ``min_length..max_length`` random symbols; targets by ``transform``."""

    @abc.abstractmethod
    def transform(self, symbols: list[str]) -> list[str]:
        """The target for the input ``symbols``."""

    def sample(self, rng: random.Random) -> tuple[list[str], list[str]]:
        length = rng.randint(self.min_length, self.max_length)
        symbols = [str(rng.randrange(self.num_symbols)) for _ in range(length)]
        return symbols, self.transform(symbols)


@register_problem
class AlgorithmicReverseBinary40(_SequenceProblem):
    """Reverse a sequence of 1..40 binary digits."""

    num_symbols = 2

    def transform(self, symbols: list[str]) -> list[str]:
        return symbols[::-1]


@register_problem
class AlgorithmicIdentityDecimal40(_SequenceProblem):
    """Copy a sequence of 1..40 decimal digits."""

    def transform(self, symbols: list[str]) -> list[str]:
        return list(symbols)


@register_problem
class AlgorithmicAdditionDecimal40(AlgorithmicProblem):
    """Add two decimal numbers: input "a + b", target the digits of a+b.

    Numbers are written big-endian (most significant digit first, as people
    write them; T2T wrote them least significant first) without leading zeros,
    and each has 1..(max_length-1)//2 digits so that the input fits in max_length.
    """

    def vocab_tokens(self) -> list[str]:
        return super().vocab_tokens() + ["+"]

    def random_number(self, rng: random.Random) -> int:
        num_digits = rng.randint(self.min_length, (self.max_length - 1) // 2)
        return rng.randrange(10 ** (num_digits - 1) if num_digits > 1 else 0, 10**num_digits)

    def sample(self, rng: random.Random) -> tuple[list[str], list[str]]:
        a, b = self.random_number(rng), self.random_number(rng)
        return list(str(a)) + ["+"] + list(str(b)), list(str(a + b))


def fresh_binary_strings(per_length: int, seed: int, max_length: int = 40) -> list[str]:
    """``per_length`` random binary strings of every length 1..``max_length``,
    space-separated, drawn from ``seed`` (not a split's seed: past ~16 symbols
    almost all are strings training never saw)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice("01") for _ in range(length))
            for length in range(1, max_length + 1) for _ in range(per_length)]


def reversal_accuracy_by_length(inputs: list[str], outputs: list[str],
                                bucket_width: int = 10) -> dict[str, tuple[int, int]]:
    """(exact reversals, strings) per input-length bucket ("1-10", "11-20", ...)."""
    counts: dict[str, tuple[int, int]] = {}
    for source, output in zip(inputs, outputs, strict=True):
        length = len(source.split())
        low = (length - 1) // bucket_width * bucket_width + 1
        key = f"{low}-{low + bucket_width - 1}"
        right, total = counts.get(key, (0, 0))
        counts[key] = (right + (output.split() == source.split()[::-1]), total + 1)
    return counts
