"""Sampling decode: the distribution drawn from, scores, reproducibility whatever the
batching, and the decode hparams that refuse combinations that mean nothing."""
import io

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import ByteTextEncoder
from t2t_lite.decoding.decoder import decode_interactive, decode_lines
from t2t_lite.decoding.ensemble import Ensemble
from t2t_lite.decoding.factory import Decoding
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.sampling import SamplingOptions, draw
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams, decode_settings
from t2t_lite.hparam import HParams, HParamsError
from toy_models import ScriptedModel, ToyRecurrentModel
from toys import tiny_transformer

INPUTS = np.array([[2, 3, 4, 1], [5, 1, 0, 0], [3, 3, 5, 1], [4, 2, 1, 0]], np.int32)
# First-step logits of a 7-token vocabulary (PAD never drawn); then EOS for sure.
FIRST = [-30.0, 0.3, 1.2, -0.4, 0.9, 2.0, 0.1]
THEN_EOS = [-30.0, 10.0, -30.0, -30.0, -30.0, -30.0, -30.0]
OTHER = [-30.0, 1.5, -1.0, 0.8, 0.0, -0.5, 1.1]


def softmax(scores):
    scores = np.asarray(scores, np.float64)
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def expected_distribution(probs, temperature, top_k, top_p):
    """The reference: probs ** (1 / temperature), renormalized, cut to the top k, then to
    the fewest most probable tokens holding top_p of the rest."""
    p = softmax(np.log(probs) / temperature)
    order = np.argsort(-p, kind="stable")
    keep = np.zeros(len(p), bool)
    keep[order[:top_k or len(p)]] = True
    p = np.where(keep, p, 0.0) / p[keep].sum()
    mass_before = np.cumsum(p[order]) - p[order]
    keep[order[mass_before >= top_p]] = False
    return np.where(keep, p, 0.0) / p[keep].sum()


DRAW_CASES = [(1.0, 0, 1.0, False), (0.5, 0, 1.0, False), (2.0, 3, 1.0, False),
              (1.0, 0, 0.6, False), (1.5, 4, 0.7, False), (1.0, 0, 1.0, True),
              (1.5, 4, 0.7, True)]


@pytest.mark.parametrize("temperature, top_k, top_p, ensemble", DRAW_CASES, ids=[
    f"{'ensemble' if ensemble else 'model'}-{t}-{k}-{p}" for t, k, p, ensemble in DRAW_CASES])
def test_draws_follow_the_tempered_cut_distribution(temperature, top_k, top_p, ensemble):
    """Over many inputs (each line its own draw), the first tokens' frequencies are the
    reference distribution's; an ensemble draws from its models' mean distribution.
    (An ensemble tempers and cuts its mean with the model's code: two ensemble cases, its
    plain mean and the mean tempered and cut by top-k and top-p at once, where tempering
    or cutting each model before the mean would show.)"""
    model = ScriptedModel([FIRST, THEN_EOS])
    probs = softmax(FIRST)
    if ensemble:
        model = Ensemble([model, ScriptedModel([OTHER, THEN_EOS])])
        probs = (softmax(FIRST) + softmax(OTHER)) / 2
    draws = 4000
    options = SamplingOptions(temperature=temperature, top_k=top_k, top_p=top_p, seed=7)
    ids, _ = BeamSearchDecoder(model, SearchOptions(beam_size=1, sampling=options))(
        np.ones([draws, 1], np.int32), 2)
    frequencies = np.bincount(ids.numpy()[:, 0, 0], minlength=len(FIRST)) / draws
    expected = expected_distribution(probs, temperature, top_k, top_p)
    assert np.all(frequencies[expected == 0] == 0)  # cut tokens are never drawn
    np.testing.assert_array_less(np.abs(frequencies - expected),
                                 4 * np.sqrt(expected * (1 - expected) / draws) + 1e-3)


@pytest.mark.parametrize("uniform", [2.0 ** -54, 0.5, 1 - 2.0 ** -54])
def test_a_draw_never_lands_on_a_token_of_probability_zero(uniform):
    scores = np.array([[0.0, 1.0, -np.inf, -np.inf], [-np.inf, 2.0, -np.inf, 0.5],
                       [-np.inf, -np.inf, -np.inf, -80.0]], np.float32)
    tokens = draw(tf.constant(scores), tf.fill([3], tf.constant(uniform, tf.float64))).numpy()
    assert np.isfinite(scores[np.arange(3), tokens]).all()


def teacher_forced_log_prob(model, input_row, ids):
    features = {"inputs": input_row[None], "targets": np.asarray([ids], np.int32)}
    log_probs = tf.nn.log_softmax(model(features)[0]).numpy()
    return log_probs[np.arange(len(ids)), ids].sum()


def test_a_sample_is_scored_by_its_log_probability_under_the_model():
    """Not under the temperature it was drawn with: what --score_file would give it.
    An input's samples stop at the decode length less its padding."""
    model = ToyRecurrentModel(seed=2)
    options = SamplingOptions(temperature=3.0, num_samples=3)
    ids, scores = (t.numpy() for t in BeamSearchDecoder(model, SearchOptions(beam_size=1,
                                                                             sampling=options))(
        INPUTS, 8))
    for row, input_row in enumerate(INPUTS):
        for k in range(3):
            sample = ids[row, k, :8 - list(input_row).count(PAD_ID)].tolist()
            sample = sample[:sample.index(EOS_ID) + 1] if EOS_ID in sample else sample
            assert scores[row, k] == pytest.approx(
                teacher_forced_log_prob(model, input_row, sample), abs=1e-4)
            assert all(token == PAD_ID for token in ids[row, k, len(sample):])


def test_top_k_of_one_is_greedy_search():
    model = ToyRecurrentModel(seed=5)
    greedy_ids, greedy_scores = BeamSearchDecoder(model, SearchOptions(beam_size=1, alpha=0.0))(
        INPUTS, 9)
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=1,
                                                         sampling=SamplingOptions(top_k=1)))(
        INPUTS, 9)
    np.testing.assert_array_equal(ids, greedy_ids)
    np.testing.assert_allclose(scores, greedy_scores, atol=1e-5)


def test_samples_depend_on_the_seed_line_and_sample_number_alone():
    model = ToyRecurrentModel(seed=1)

    def draw(seed=3, num_samples=2, line_numbers=(0, 1, 2, 3), inputs=INPUTS):
        options = SamplingOptions(temperature=2.0, num_samples=num_samples, seed=seed)
        ids, _ = BeamSearchDecoder(model, SearchOptions(beam_size=1, sampling=options))(
            inputs, 8, line_numbers)
        return ids.numpy()

    first = draw()
    np.testing.assert_array_equal(first, draw())  # reproducible
    assert not np.array_equal(first, draw(seed=4))
    assert not np.array_equal(first[:, 0], first[:, 1])  # samples of an input differ
    four = draw(num_samples=4)  # sample k is the same whatever num_samples
    np.testing.assert_array_equal(four[:, :2, :first.shape[2]], first[:, :, :four.shape[2]])
    # An input alone, as line 2, draws what it drew in its batch.
    alone = draw(line_numbers=[2], inputs=INPUTS[2:3])
    np.testing.assert_array_equal(alone[0], first[2, :, :alone.shape[2]])


def settings(overrides, xla=False):
    return DecodeSettings.from_hparams(decode_hparams(overrides), HParams(xla=xla))


LINES = ["a cat", "", "the green house", "x", "dogs run fast on grass", "hi", "abcdefgh",
         "on a tree", "q"]


def sampling_decoding(model, overrides, xla=False, search=None):
    """The decoding of ``overrides``; ``search``: a BeamSearchDecoder of the same sampling
    options to reuse (it traces once for any batch), else a new one."""
    encoder = ByteTextEncoder()
    chosen = settings(f"sampling_method=random,beam_size=1,{overrides}", xla)
    if search is None:
        search = BeamSearchDecoder(model, SearchOptions(beam_size=1, sampling=chosen.sampling),
                                   jit_compile=xla)
    assert search.options.sampling == chosen.sampling
    rules = InputRules.for_model(0, 64, getattr(model, "max_positions", None))
    return Decoding(search, chosen, rules, encoder, encoder)


def sampled_lines(model, overrides, xla=False, lines=tuple(LINES), search=None):
    return decode_lines(list(lines), sampling_decoding(model, overrides, xla, search))


def test_interactive_lines_draw_as_the_lines_of_a_file():
    model = ToyRecurrentModel(ByteTextEncoder().vocab_size, seed=1)
    out = io.StringIO()
    decode_interactive(sampling_decoding(model, "num_samples=2,extra_length=4"),
                       io.BytesIO("".join(line + "\n" for line in LINES).encode()), out)
    assert out.getvalue().splitlines() == sampled_lines(model, "num_samples=2,extra_length=4")


def assert_same_samples(lines, others):
    """The same samples, and log-probabilities equal to the float32 rounding that a
    batch's shape may change (matrix kernels differ with it: 1e-4 of 155 seen on an AMD
    EPYC)."""
    assert len(lines) == len(others)
    for line, other in zip(lines, others):
        fields, other_fields = line.split("\t"), other.split("\t")
        assert fields[::2] == other_fields[::2]
        np.testing.assert_allclose([float(score) for score in fields[1::2]],
                                   [float(score) for score in other_fields[1::2]],
                                   rtol=1e-5)


def test_file_samples_do_not_depend_on_batches_and_fill_fields():
    """batch_size 1 and 7 (other batch mates, lengths and items leaving the batch) give
    the same file; num_samples fields, each with its log-probability."""
    model = tiny_transformer(ByteTextEncoder().vocab_size, seed=2, num_encoder_layers=1,
                             num_decoder_layers=1)
    overrides = "num_samples=3,write_beam_scores=true,extra_length=6,sampling_temp=1.5"
    # Both batchings through one search (one trace): only the batching differs.
    search = sampling_decoding(model, f"{overrides},batch_size=1").search
    one = sampled_lines(model, f"{overrides},batch_size=1", search=search)
    assert_same_samples(one, sampled_lines(model, f"{overrides},batch_size=7", search=search))
    assert one[1] == ""
    fields = one[0].split("\t")
    assert len(fields) == 6 and all(float(score) < 0 for score in fields[1::2])
    assert len(set(one[0].split("\t")[::2])) > 1
    assert one != sampled_lines(model, f"{overrides},batch_size=7,sampling_seed=2")


def test_compiled_sampling_draws_the_same_samples():
    model = tiny_transformer(ByteTextEncoder().vocab_size, seed=2, num_encoder_layers=1,
                             num_decoder_layers=1, xla=True)
    overrides = "num_samples=2,extra_length=5,batch_size=4,length_bucket=8"
    short = [line for line in LINES if len(line) < 8]  # one XLA program: it takes seconds
    assert (sampled_lines(model, overrides, xla=True, lines=short)
            == sampled_lines(model, overrides, lines=short))


@pytest.mark.parametrize("overrides, message", [
    ("sampling_method=random", "sampling_method=random draws each token, it does not search: "
                               "set beam_size=1, not 4"),
    ("sampling_method=random,beam_size=1,return_beams=true",
     "leave return_beams out"),
    ("sampling_temp=0.5", "sampling_temp=0.5 shapes sampling_method=random only"),
    ("num_samples=3,beam_size=1", "num_samples=3 shapes sampling_method=random only"),
    ("sampling_seed=9", "leave sampling_seed out"),
    ("sampling_method=top", "'sampling_method' must be one of 'argmax', 'random'"),
    ("sampling_temp=0", "'sampling_temp' must be > 0"),
    ("sampling_keep_top_k=-1", "'sampling_keep_top_k' must be >= 0 (0: every token)"),
    ("sampling_keep_top_p=0", "'sampling_keep_top_p' must be in (0, 1]"),
    ("sampling_keep_top_p=1.5", "'sampling_keep_top_p' must be in (0, 1]"),
    ("num_samples=0", "'num_samples' must be >= 1"),
    ("sampling_seed=-1", "'sampling_seed' must be in [0, 2147483647]"),
])
def test_meaningless_sampling_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises(HParamsError, match="^--decode_hparams: ") as error:
        decode_hparams(overrides)
    assert message in str(error.value) and "\n" not in str(error.value)


class Parsing:
    """A problem whose decode defaults set alpha, as parsing's do."""
    decode_hparams_defaults = staticmethod(lambda: {"beam_size": 21, "alpha": 0.3})


@pytest.mark.parametrize("key", ["alpha=1.0", "stop_rule=exact"])
def test_keys_sampling_does_not_read_are_refused_unless_left_at_their_defaults(key):
    chosen = decode_settings("sampling_method=random,beam_size=1", Parsing(), HParams(xla=False))
    assert chosen.sampling == SamplingOptions() and chosen.every_hypothesis
    with pytest.raises(HParamsError, match=f"{key.split('=')[0]} changes nothing here"):
        decode_settings(f"sampling_method=random,beam_size=1,{key}", Parsing(),
                        HParams(xla=False))
