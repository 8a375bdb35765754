"""Shared subword vocabularies (BPE or word-pieces) backed by sentencepiece.

The paper used a shared BPE vocabulary of about 37000 tokens for En-De and a
32000 word-piece vocabulary for En-Fr. ``model_type="bpe"`` gives the former;
``model_type="unigram"`` (sentencepiece's unigram language model, which like
word-pieces picks the segmentation by likelihood) stands in for the latter.

Models are trained so that they fit the ``TextEncoder`` contract:
id 0 = PAD, 1 = EOS, 2 = unknown, no BOS; ``byte_fallback`` spells any
character outside the vocabulary as UTF-8 byte pieces, so nothing is ever
unknown; ``identity`` normalization and kept whitespace make
``decode(encode(text)) == text`` exactly. The one exception is U+2581
(LOWER ONE EIGHTH BLOCK), sentencepiece's own whitespace marker, which comes
back as a space.

``tf_encode`` / ``tf_decode`` do the same inside a TensorFlow graph (e.g. in a
``tf.data`` pipeline) with tensorflow-text and give the same ids and text as
``encode`` / ``decode``.
"""
from __future__ import annotations

import functools
import io
import logging
import math
import os
import random
import re
import threading
import time
from typing import Iterable, Sequence

import sentencepiece as spm
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, NUM_RESERVED_IDS, PAD_ID
from t2t_lite.data.encoders import TextEncoder, trim_ids
from t2t_lite.progress import progress

logger = logging.getLogger(__name__)

UNK_ID = NUM_RESERVED_IDS  # the first id after PAD and EOS
MODEL_TYPES = ("bpe", "unigram")
DEFAULT_CHARACTER_COVERAGE = 0.9995  # sentencepiece's own default
_WHITESPACE_MARK = "\u2581"
# sentencepiece's sampling reads one process-wide seed: set and read under this lock.
_SAMPLING_SEED = threading.Lock()
# sentencepiece's refusals of a size, and the size each names as possible.
_SIZE_BOUNDS = (re.compile(r"Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+)"),
                re.compile(r"Vocabulary size is smaller than required_chars\. \d+ vs (\d+)"))


def graph_trim_ids(ids: tf.Tensor) -> tf.RaggedTensor:
    """In-graph ``trim_ids``: int [N, L] -> int32 ragged [N, None], each row before its
    first EOS with PAD dropped (the content a decode turns into text)."""
    ids = tf.cast(ids, tf.int32)
    before_eos = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=-1), 0)
    return tf.ragged.boolean_mask(ids, before_eos & tf.not_equal(ids, PAD_ID))


def _size_bound(message: str) -> int | None:
    """The vocabulary size sentencepiece's ``message`` says it can train, if it says one."""
    for pattern in _SIZE_BOUNDS:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


class SubwordTextEncoder(TextEncoder):
    """A sentencepiece model behind the ``TextEncoder`` interface."""

    def __init__(self, model_proto: bytes):
        processor = spm.SentencePieceProcessor(model_proto=model_proto)
        reserved = (processor.pad_id(), processor.eos_id(), processor.unk_id(),
                    processor.bos_id())
        if reserved != (PAD_ID, EOS_ID, UNK_ID, -1):
            raise ValueError(f"sentencepiece model has (pad, eos, unk, bos) ids {reserved}, "
                             f"expected ({PAD_ID}, {EOS_ID}, {UNK_ID}, -1); build it with "
                             "SubwordTextEncoder.build")
        self._model_proto = model_proto
        self._processor = processor

    @classmethod
    def build(cls, text_iterator: Iterable[str], vocab_size: int, model_type: str = "bpe",
              *, path_prefix: str, max_sentences: int = 0, seed: int = 1,
              character_coverage: float = DEFAULT_CHARACTER_COVERAGE,
              symbols: Sequence[str] = ()) -> "SubwordTextEncoder":
        """Trains a vocabulary on ``text_iterator`` and saves it as ``path_prefix + ".model"``.

        When that file already exists it is loaded instead and ``text_iterator`` is
        not read. ``text_iterator`` yields sentences of every language that shares
        the vocabulary. ``vocab_size`` counts every id (reserved and byte pieces
        included). ``max_sentences`` > 0 trains on that many sentences sampled with
        ``seed``; 0 uses all. ``character_coverage``: the share of the text's
        characters that get pieces of their own (the rarest others are spelled in
        bytes). Training is deterministic: fixed seed, one thread
        (multi-threaded unigram training is not reproducible). ``symbols``: tokens
        that are pieces of their own, never split (sentencepiece's user-defined
        symbols: the tags of tagged back-translation).
        """
        model_path = path_prefix + ".model"
        if os.path.exists(model_path):
            return cls.load_from_file(model_path)
        encoder = cls.train(text_iterator, vocab_size, model_type, max_sentences=max_sentences,
                            seed=seed, character_coverage=character_coverage, symbols=symbols)
        encoder.store_to_file(model_path)
        logger.info("wrote the vocabulary to %s", model_path)
        return encoder

    @classmethod
    def train(cls, text_iterator: Iterable[str], vocab_size: int, model_type: str = "bpe", *,
              max_sentences: int = 0, seed: int = 1,
              character_coverage: float = DEFAULT_CHARACTER_COVERAGE,
              fit_to_data: bool = False, max_piece_length: int = 16,
              symbols: Sequence[str] = ()) -> "SubwordTextEncoder":
        """``build``'s vocabulary, in memory. With ``fit_to_data``, a size the text
        cannot give (more pieces than it has, or fewer than its characters and the
        byte pieces need) is moved to the nearest it can, with one warning, as
        tensor2tensor's builder gave what the text allowed; without, it is refused.
        ``max_piece_length``: the longest piece, in characters."""
        if model_type not in MODEL_TYPES:
            raise ValueError(f"model_type {model_type!r} is not one of {MODEL_TYPES}")
        sentences = list(text_iterator) if fit_to_data else text_iterator
        asked = vocab_size
        for _ in range(4):  # each retry takes the bound sentencepiece names
            try:
                encoder = cls._train_once(sentences, vocab_size, model_type, max_sentences,
                                          seed, character_coverage, max_piece_length,
                                          symbols=symbols)
            except ValueError as error:
                bound = _size_bound(str(error)) if fit_to_data else None
                if bound is None or bound == vocab_size:
                    raise
                vocab_size = bound
                continue
            if vocab_size != asked:
                logger.warning("a %d-id vocabulary was asked for, but this text gives %d "
                               "(sentencepiece's bound): built %d ids", asked, vocab_size,
                               vocab_size)
            return encoder
        raise ValueError(f"sentencepiece could not train a vocabulary near {asked} ids")

    @classmethod
    def _train_once(cls, sentences: Iterable[str], vocab_size: int, model_type: str,
                    max_sentences: int, seed: int, character_coverage: float,
                    max_piece_length: int, *, symbols: Sequence[str] = ()
                    ) -> "SubwordTextEncoder":
        spm.set_random_generator_seed(seed)
        model = io.BytesIO()
        started = time.monotonic()
        logger.info("training a %d-id %s vocabulary with sentencepiece", vocab_size, model_type)
        text = progress(iter(sentences), "reading text for the vocabulary", unit="sentences")
        if max_sentences:
            text = sample_in_order(text, max_sentences, seed)
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(text), model_writer=model,
                vocab_size=vocab_size, model_type=model_type,
                pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
                byte_fallback=True, normalization_rule_name="identity",
                remove_extra_whitespaces=False,
                character_coverage=character_coverage,
                max_sentencepiece_length=max_piece_length,
                user_defined_symbols=list(symbols),
                num_threads=1, minloglevel=2)
        except RuntimeError as err:
            raise ValueError(f"sentencepiece could not train a {vocab_size}-token "
                             f"{model_type} vocabulary: {err}") from None
        logger.info("trained the vocabulary in %.0f s", time.monotonic() - started)
        return cls(model.getvalue())

    @classmethod
    def adopt(cls, path: str, symbols: Sequence[str] = ()) -> "SubwordTextEncoder":
        """A user's own sentencepiece model (``path``), its special pieces moved to
        this project's reserved ids: PAD 0, EOS 1, unknown 2, no BOS (a model trained
        with sentencepiece's defaults has unknown 0, BOS 1, EOS 2 and no PAD). Every
        other piece keeps its text, score and order: the model splits text as before,
        only the ids move (by up to 3 places, and its size by up to +1 or -1).
        ``symbols`` the model lacks are added after its pieces, as user-defined ones
        (one id each); one it holds as another kind of piece is refused."""
        from sentencepiece import sentencepiece_model_pb2

        model = sentencepiece_model_pb2.ModelProto()
        try:
            with open(path, "rb") as f:
                model.ParseFromString(f.read())
        except FileNotFoundError:
            raise FileNotFoundError(f"no such sentencepiece model: {path}") from None
        except Exception as error:  # protobuf's DecodeError and its kin
            raise ValueError(f"{path} is not a sentencepiece model ({error})") from None
        piece_type = sentencepiece_model_pb2.ModelProto.SentencePiece
        if not any(p.type == piece_type.NORMAL for p in model.pieces):
            raise ValueError(f"{path} is not a sentencepiece model (it has no pieces)")
        spec = model.trainer_spec
        special = {spec.pad_id, spec.eos_id, spec.unk_id, spec.bos_id} - {-1}
        kept = [piece for i, piece in enumerate(model.pieces) if i not in special]
        del model.pieces[:]
        for text, kind in (("<pad>", piece_type.CONTROL), ("</s>", piece_type.CONTROL),
                           ("<unk>", piece_type.UNKNOWN)):
            model.pieces.add(piece=text, score=0.0, type=kind)
        model.pieces.extend(kept)
        held = {piece.piece: piece.type for piece in model.pieces}
        for symbol in symbols:
            if symbol not in held:
                model.pieces.add(piece=symbol, score=0.0, type=piece_type.USER_DEFINED)
            elif held[symbol] != piece_type.USER_DEFINED:
                raise ValueError(f"{path} holds {symbol} as a piece of kind "
                                 f"{piece_type.Type.Name(held[symbol])}, so it cannot be a "
                                 "tag: choose a token it does not hold")
        spec.pad_id, spec.eos_id, spec.unk_id, spec.bos_id = PAD_ID, EOS_ID, UNK_ID, -1
        spec.pad_piece, spec.eos_piece, spec.unk_piece = "<pad>", "</s>", "<unk>"
        spec.vocab_size = len(model.pieces)
        return cls(model.SerializeToString())

    @property
    def vocab_size(self) -> int:
        return self._processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self._processor.encode(text)

    @functools.cached_property
    def model_type(self) -> str:
        """"bpe" or "unigram" (what ``sample_encode``'s ``alpha`` means depends on it)."""
        from sentencepiece import sentencepiece_model_pb2

        model = sentencepiece_model_pb2.ModelProto.FromString(self._model_proto)
        return sentencepiece_model_pb2.TrainerSpec.ModelType.Name(
            model.trainer_spec.model_type).lower()

    def sample_encode(self, text: str, alpha: float, nbest_size: int, seed: int) -> list[int]:
        """One segmentation of ``text`` drawn at random, the same for the same ``seed``
        (an unsigned 32-bit int): a BPE vocabulary drops each merge with probability
        ``alpha`` (BPE-dropout); a unigram one samples from its ``nbest_size`` best
        segmentations (-1: all of them) with their probabilities to the power ``alpha``
        (Kudo 2018)."""
        with _SAMPLING_SEED:
            spm.set_random_generator_seed(seed)
            return self._processor.encode(text, enable_sampling=True, alpha=alpha,
                                          nbest_size=nbest_size if nbest_size else -1)

    def decode(self, ids: Sequence[int]) -> str:
        content = trim_ids(ids)
        bad = [i for i in content if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"ids {bad[:5]} are outside the subword vocabulary "
                             f"[0, {self.vocab_size})")
        return self._processor.decode(content)

    def _token_string(self, token_id: int) -> str:
        return self._processor.id_to_piece(token_id)

    def store_to_file(self, path: str) -> None:
        """Writes the sentencepiece model (atomically, so a partial file is never seen)."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        partial = path + ".partial"
        with open(partial, "wb") as f:
            f.write(self._model_proto)
        os.replace(partial, path)

    @classmethod
    def load_from_file(cls, path: str) -> "SubwordTextEncoder":
        try:
            with open(path, "rb") as f:
                return cls(f.read())
        except FileNotFoundError:
            raise FileNotFoundError(f"subword model {path} does not exist; generate the "
                                    "problem's data (t2t-datagen) first") from None

    @functools.cached_property
    def graph_tokenizer(self):
        """The ``tensorflow_text.SentencepieceTokenizer`` of this model (a tf.Module
        whose model proto a SavedModel saves)."""
        import tensorflow_text  # heavy import, only for the in-graph path
        return tensorflow_text.SentencepieceTokenizer(model=self._model_proto,
                                                      out_type=tf.int32)

    def tf_encode(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """In-graph ``encode``: string[B] -> int32 ragged [B, None] (a string -> int32[None])."""
        return self.graph_tokenizer.tokenize(strings)

    def tf_decode(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
        """In-graph ``decode``: int [B, L] (dense or ragged) -> string[B].

        Like ``decode``, each row stops at its first EOS and drops PAD.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = ids.to_tensor(default_value=PAD_ID)
        content = graph_trim_ids(ids)
        text = self.graph_tokenizer.detokenize(content)
        # tensorflow-text drops every leading whitespace mark; sentencepiece's Python
        # decode drops only the first (the dummy prefix). Put the others back.
        pieces = tf.strings.reduce_join(self.graph_tokenizer.id_to_string(content), axis=-1)
        extra_marks = tf.strings.regex_replace(
            pieces, f"^(?:{_WHITESPACE_MARK}({_WHITESPACE_MARK}*))?(?s:.*)$", r"\1")
        return tf.strings.regex_replace(extra_marks, _WHITESPACE_MARK, " ") + text


def sample_in_order(items: Iterable[str], size: int, seed: int) -> list[str]:
    """A uniform sample of ``size`` of ``items`` drawn with ``seed``, in their order,
    holding ``size`` items at most (reservoir sampling, Li's algorithm L): all of
    them, unchanged, when there are no more than ``size``, so a corpus below the
    sample trains the vocabulary it would with no sample. Logs how many were drawn."""
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    weight, next_index, count = 1.0, size, 0
    for count, item in enumerate(items, start=1):
        index = count - 1
        if index < size:
            reservoir.append((index, item))
            if index == size - 1:
                weight = math.exp(math.log(rng.random()) / size)
                next_index = size + _skip(rng, weight)
        elif index == next_index:
            reservoir[rng.randrange(size)] = (index, item)
            weight *= math.exp(math.log(rng.random()) / size)
            next_index += 1 + _skip(rng, weight)
    if count > size:
        logger.info("the vocabulary trains on a seeded sample of %d of the %d sentences",
                    size, count)
    return [item for _, item in sorted(reservoir)]


def _skip(rng: random.Random, weight: float) -> int:
    """How many items algorithm L passes over before the next one it takes."""
    return int(math.log(rng.random()) / math.log1p(-weight))
