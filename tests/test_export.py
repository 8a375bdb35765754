"""t2t-exporter: string-to-string SavedModels that equal t2t-decoder and load without
t2t_lite."""
import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.decoding.decoder import decode_lines
from t2t_lite.decoding.factory import build_decoding
from t2t_lite.decoding.input_rules import InputRules, encode_input
from t2t_lite.decoding.settings import decode_settings
from t2t_lite.experiment import resolve
from t2t_lite.export import graph_rules
from t2t_lite.export.exporter import ExportModule
from t2t_lite.export.graph_text import graph_codec
from t2t_lite.parsing.graph_trees import graph_delinearize
from t2t_lite.parsing.linearize import SlotToken, delinearize
from toys import NumberWordsToDigits  # noqa: F401 (registers number_words_to_digits)
from toys import TranslateEnxxExportTest  # noqa: F401 (registers translate_enxx_export_test)
from t2t_lite.training.checkpoints import restore_model
from treebank_files import write_ldc_layout

DECODE = "beam_size=3,alpha=0.6,extra_length=12"


def train(problem, model, hparams_set, root, hparams=""):
    """A run of one step, without evaluations: the export tests need its checkpoint, not
    what it learned (a step in warm-up barely moves the initial weights, and those
    already decode to real, non-blank outputs; a dev evaluation and more steps, each a
    new trace for a new batch shape, only cost time)."""
    data_dir, output_dir = str(root / "data"), str(root / "train")
    tmp_dir = write_ldc_layout(root / "raw") if problem.startswith("parsing") else data_dir
    assert t2t_trainer.main([f"--problem={problem}", f"--model={model}",
                             f"--hparams_set={hparams_set}", f"--hparams={hparams}",
                             f"--data_dir={data_dir}", f"--output_dir={output_dir}",
                             f"--tmp_dir={tmp_dir}", "--generate_data", "--train_steps=1",
                             "--schedule=train", "--log_every_steps=1"]) == 0
    return output_dir


def export_and_decode(output_dir, root, lines):
    export_dir = str(root / "export" / "1")
    assert t2t_exporter.main([f"--output_dir={output_dir}", f"--export_dir={export_dir}",
                              f"--decode_hparams={DECODE}"]) == 0
    source = root / "lines.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--decode_hparams={DECODE}",
                             f"--decode_from_file={source}",
                             f"--decode_to_file={root / 'decoded.txt'}"]) == 0
    return export_dir, (root / "decoded.txt").read_text(encoding="utf-8").splitlines()


TRANSLATION_LINES = ["the dog runs", "a green house under the tree", "", "cat",
                     "red red red tree sleeps on a dog"]
PARSING_LINES = ["The dog barks .", "Kim runs fast .", "", "A cat sat ."]


TINY_TRANSFORMER = "hidden_size=16,filter_size=32,num_encoder_layers=1,num_decoder_layers=1"
NUMBER_LINES = ["one two three", "nine 7", "", "five five zero"]


def trained_and_exported(tmp_path_factory, name: str, problem: str, model: str,
                         hparams_set: str, hparams: str, lines: list[str]):
    root = tmp_path_factory.mktemp(f"export_{name}")
    return export_and_decode(train(problem, model, hparams_set, root, hparams), root, lines)


@pytest.fixture(scope="session")
def translation(tmp_path_factory):
    return trained_and_exported(tmp_path_factory, "translation", "translate_enxx_export_test",
                                "transformer", "transformer_tiny", TINY_TRANSFORMER,
                                TRANSLATION_LINES)


@pytest.fixture(scope="session")
def parsing(tmp_path_factory):
    return trained_and_exported(
        tmp_path_factory, "parsing", "parsing_english_ptb16k_lexical",
        "lstm_seq2seq_attention_luong", "lstm_attention_parsing",
        "hidden_size=16,embedding_size=16,num_encoder_layers=1,num_decoder_layers=1",
        PARSING_LINES)


@pytest.fixture(scope="session")
def separate_vocabularies(tmp_path_factory):
    """Number words in, digits out: each side through its own vocabulary's twin."""
    return trained_and_exported(tmp_path_factory, "separate_vocabularies",
                                "number_words_to_digits", "transformer", "transformer_tiny",
                                TINY_TRANSFORMER, NUMBER_LINES)


@functools.cache
def load(export_dir):
    """Each export loaded once a session (a load takes seconds; the tests only call it)."""
    return tf.saved_model.load(export_dir)


def serve(export_dir, lines, signature="serving_default"):
    result = load(export_dir).signatures[signature](inputs=tf.constant(lines, tf.string))
    return {key: value.numpy() for key, value in result.items()}


@pytest.mark.parametrize("case, lines", [("translation", TRANSLATION_LINES),
                                         ("parsing", PARSING_LINES),
                                         ("separate_vocabularies", NUMBER_LINES)])
def test_export_equals_the_decoder_line_for_line(request, case, lines):
    export_dir, decoded = request.getfixturevalue(case)
    result = serve(export_dir, lines)
    assert [s.decode("utf-8") for s in result["outputs"]] == decoded
    assert result["scores"].shape == (len(lines),) and result["scores"][2] == 0.0
    assert all(decoded[i] for i in range(len(lines)) if lines[i])  # real outputs, not blanks
    beams = serve(export_dir, lines, "beams")
    assert beams["outputs"].shape == beams["scores"].shape == (len(lines), 3)
    np.testing.assert_array_equal(beams["outputs"][:, 0], result["outputs"])
    assert np.all(np.diff(beams["scores"][[0, 1, 3]], axis=1) <= 1e-6)  # best first


def test_a_bfloat16_export_holds_bfloat16_weights_and_equals_the_decoder(translation,
                                                                        tmp_path):
    """Under a mixed dtype, both commands take the inference model (its weights in
    the compute dtype): the export is the same as the decoder's output, line for line."""
    export_dir, _ = translation
    output_dir = os.path.join(os.path.dirname(os.path.dirname(export_dir)), "train")
    mixed = "--hparams=dtype=mixed_bfloat16"
    assert t2t_exporter.main([f"--output_dir={output_dir}", f"--export_dir={tmp_path / 'x'}",
                              f"--decode_hparams={DECODE}", mixed]) == 0
    source = tmp_path / "lines.txt"
    source.write_text("".join(line + "\n" for line in TRANSLATION_LINES), encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--decode_hparams={DECODE}",
                             f"--decode_from_file={source}", mixed,
                             f"--decode_to_file={tmp_path / 'decoded.txt'}"]) == 0
    reader = tf.train.load_checkpoint(str(tmp_path / "x" / "variables" / "variables"))
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    matrices = [key for key, shape in shapes.items() if len(shape) == 2]
    assert matrices and all(dtypes[key] == tf.bfloat16 for key in matrices)
    result = load(str(tmp_path / "x")).signatures["serving_default"](
        inputs=tf.constant(TRANSLATION_LINES))
    assert ([s.decode("utf-8") for s in result["outputs"].numpy()]
            == (tmp_path / "decoded.txt").read_text(encoding="utf-8").splitlines())


# Loads the export twice in a process without t2t_lite: as TF2 code does
# (tf.saved_model.load), and into a TF1 session from the signature's tensor names,
# as TensorFlow Serving and `saved_model_cli run` do.
FRESH_PROCESS = """
import json, sys
import tensorflow as tf, tensorflow_text  # noqa: F401
export_dir, lines = sys.argv[1], json.loads(sys.argv[2])
out = tf.saved_model.load(export_dir).signatures["serving_default"](inputs=tf.constant(lines))
print(json.dumps([s.decode() for s in out["outputs"].numpy()]))
with tf.compat.v1.Session(graph=tf.Graph()) as session:
    meta_graph = tf.compat.v1.saved_model.load(session, ["serve"], export_dir)
    signature = meta_graph.signature_def["serving_default"]
    outputs = session.run(signature.outputs["outputs"].name,
                          {signature.inputs["inputs"].name: lines})
print(json.dumps([s.decode() for s in outputs]))
assert not [m for m in sys.modules if m.startswith("t2t_lite")], "t2t_lite imported"
"""


def test_export_runs_without_t2t_lite_in_a_fresh_process(translation):
    export_dir, decoded = translation
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, export_dir, json.dumps(TRANSLATION_LINES)],
        capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    tf2_outputs, session_outputs = result.stdout.strip().splitlines()[-2:]
    assert json.loads(tf2_outputs) == json.loads(session_outputs) == decoded


def test_any_batch_and_length_one_trace(translation):
    export_dir, _ = translation
    output_dir = os.path.join(os.path.dirname(os.path.dirname(export_dir)), "train")
    experiment = resolve(None, None, None, "", None, output_dir, must_exist=True)
    model = experiment.build_model()
    restore_model(model, output_dir)
    module = ExportModule(model, experiment.problem, experiment.data_dir,
                          decode_settings(DECODE, experiment.problem, experiment.hparams))
    for lines in (["the dog"], ["a cat", "the green house under a red tree on the dog", ""],
                  ["tree"] * 7):
        assert module.serve(tf.constant(lines))["outputs"].shape == (len(lines),)
    assert module.serve.experimental_get_tracing_count() == 1


def test_a_sampling_export_draws_the_decoders_samples(translation):
    """Settings fixed at export, seed included: input k of a request draws as line k of
    a file in t2t-decoder; ``beams`` holds every sample, serving_default the first."""
    export_dir, _ = translation
    output_dir = os.path.join(os.path.dirname(os.path.dirname(export_dir)), "train")
    experiment = resolve(None, None, None, "", None, output_dir, must_exist=True)
    model = experiment.build_model()
    restore_model(model, output_dir)
    settings = decode_settings("sampling_method=random,beam_size=1,num_samples=2,"
                               "sampling_temp=1.5,extra_length=12", experiment.problem,
                               experiment.hparams)
    module = ExportModule(model, experiment.problem, experiment.data_dir, settings)
    beams = module.beams(tf.constant(TRANSLATION_LINES))
    outputs = [[text.decode("utf-8") for text in row] for row in beams["outputs"].numpy()]
    decoded = decode_lines(TRANSLATION_LINES, build_decoding(
        model, experiment.problem, experiment.data_dir, settings))
    assert ["\t".join(row) if line else "" for row, line in zip(outputs, TRANSLATION_LINES)
            ] == decoded
    first = module.serve(tf.constant(TRANSLATION_LINES))["outputs"].numpy()
    assert [text.decode("utf-8") for text in first] == [row[0] for row in outputs]


def test_a_guided_request_equals_the_decoders_prefixes_and_constraints(translation,
                                                                       tmp_path):
    export_dir, _ = translation
    output_dir = os.path.join(os.path.dirname(os.path.dirname(export_dir)), "train")
    prefixes = ["the", "a green", "", "", "red red red red red red"]
    constraints = ["house\tred", "", "", "dog", "tree"]
    source, prefix_file = tmp_path / "in.txt", tmp_path / "prefixes.txt"
    constraint_file = tmp_path / "constraints.txt"
    for path, lines in ((source, TRANSLATION_LINES), (prefix_file, prefixes),
                        (constraint_file, constraints)):
        path.write_text("".join(line + "\n" for line in lines))
    for guided in ([prefix_file], [prefix_file, constraint_file]):
        assert t2t_decoder.main([f"--output_dir={output_dir}", f"--decode_hparams={DECODE}",
                                 f"--decode_from_file={source}",
                                 f"--decode_prefixes={prefix_file}",
                                 *([f"--decode_constraints={constraint_file}"]
                                   if len(guided) == 2 else []),
                                 f"--decode_to_file={tmp_path / 'out.txt'}"]) == 0
        decoded = (tmp_path / "out.txt").read_text().splitlines()
        function = load(export_dir).signatures["guided"]
        held = constraints if len(guided) == 2 else [""] * len(prefixes)
        result = function(inputs=tf.constant(TRANSLATION_LINES),
                          prefixes=tf.constant(prefixes), constraints=tf.constant(held))
        assert result["outputs"].shape == (len(prefixes), 3)
        assert [text.decode() for text in result["outputs"].numpy()[:, 0]] == decoded
        assert all(text.startswith(prefix) for text, prefix in zip(decoded, prefixes))
        assert all(phrase in text for text, phrases in zip(decoded, held)
                   for phrase in phrases.split("\t") if phrase), decoded
    # A model with 6 learned positions has room for prefixes of 5 tokens, and for
    # phrases of 5 tokens beside them.
    codec, rules = graph_codec(ByteTextEncoder()), InputRules(4, 6)
    assert graph_rules.prefix_ids(rules, codec, tf.constant(["abcde", ""])).shape == (2, 5)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="(?s)prefixes leave the model no position.*positions.*1"):
        graph_rules.prefix_ids(rules, codec, tf.constant(["", "abcdef"]))
    no_prefix = tf.zeros([2, 0], tf.int32)
    phrases = graph_rules.phrase_ids(rules, codec, tf.constant(["ab\t c\t", ""]), no_prefix)
    assert phrases.numpy().tolist() == [[[ord("a") + 2, ord("b") + 2], [ord("c") + 2, 0]],
                                        [[0, 0], [0, 0]]]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="(?s)phrases .*do not fit.*positions.*0"):
        graph_rules.phrase_ids(rules, codec, tf.constant(["abc\tde", ""]),
                               tf.constant([[5], [0]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="one prefix an input"):
        function(inputs=tf.constant(["a", "b"]), prefixes=tf.constant([""]),
                 constraints=tf.constant(["", ""]))


def test_bad_inputs(translation):
    export_dir, _ = translation
    function = load(export_dir).signatures["serving_default"]
    # An input far longer than the model's max_length is truncated, not a failed batch:
    # beyond the limit, more words change nothing.
    long, longer = (" ".join(["green house"] * n) for n in (400, 800))
    outputs = function(inputs=tf.constant(["the dog", long]))["outputs"].numpy()
    assert outputs.shape == (2,) and outputs[1]
    np.testing.assert_array_equal(
        outputs, function(inputs=tf.constant(["the dog", longer]))["outputs"].numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="valid UTF-8.*positions.*1"):
        function(inputs=tf.constant([b"the dog", b"caf\xe9"]))


def test_export_refuses_a_folder_in_use(translation, capsys):
    export_dir, _ = translation
    output_dir = os.path.join(os.path.dirname(os.path.dirname(export_dir)), "train")
    assert t2t_exporter.main([f"--output_dir={output_dir}", f"--export_dir={export_dir}"]) == 2
    assert "holds files t2t-exporter did not write" in capsys.readouterr().err


@pytest.mark.parametrize("rules", [InputRules(4, 6), InputRules(0, None)])
def test_graph_rules_equal_the_python_rules(rules):
    """The export's TensorFlow rules read the same InputRules as t2t-decoder's Python."""
    encoder = ByteTextEncoder()
    lines = ["abcdef", "ab", "", "caf\u00e9"]
    ids = graph_rules.source_ids(rules, graph_codec(encoder), tf.constant(lines)).numpy()
    for row, line in zip(ids.tolist(), lines):
        expected, _ = encode_input(line, encoder, rules.max_input_length)
        assert row[:len(expected)] == expected and not any(row[len(expected):])
    assert [int(graph_rules.decode_length(rules, tf.constant(n))) for n in (3, 9)] == [
        rules.decode_length(n) for n in (3, 9)]
    texts = ["a\n", "a\r\nb", "a\n\nb", "a\u2028b\x85", "\n\r", "a\tb", "a\rb\x0c"]
    graph = graph_rules.one_line(rules, tf.constant(texts)).numpy()
    assert [s.decode("utf-8") for s in graph] == [rules.one_line(t) for t in texts]


@pytest.mark.parametrize("encoder, texts", [
    (TokenTextEncoder(["the", "dog", "(S", ")"]), ["the dog", "(S the cat )", "", "dog  dog"]),
    (ByteTextEncoder(), ["héllo", "", "a b"]),
])
def test_graph_codecs_equal_the_python_encoders(encoder, texts):
    codec = graph_codec(encoder)
    ids = codec.encode(tf.constant(texts))
    assert ids.to_list() == [encoder.encode(t) for t in texts]
    padded = ids.to_tensor() if ids.shape[0] else ids
    decoded = [s.decode("utf-8") for s in codec.decode(padded).numpy()]
    assert decoded == [encoder.decode(row) for row in padded.numpy().tolist()]


def test_graph_codec_refuses_other_encoders():
    class Letters(ByteTextEncoder):
        pass
    assert graph_codec(Letters())  # subclasses of a supported encoder are fine
    with pytest.raises(ValueError, match="no in-graph twin"):
        graph_codec(object())


@pytest.mark.parametrize("slot_token, decoded", [
    (SlotToken.WORD, "(S (NP The dog ) (VP barks ) . )"),
    (SlotToken.PLACEHOLDER, "(S (NP XX XX ) (VP XX ) XX )"),
    (SlotToken.POS, "(S (NP (DT The (NN dog ) (VP (VBZ barks ) (. . )"),
])
def test_graph_delinearize_equals_delinearize_on_constrained_decodes(slot_token, decoded):
    source = "The dog barks ."
    expected = str(delinearize(decoded, source.split(), slot_token))
    got = graph_delinearize(tf.constant([source, source]), tf.constant([decoded, decoded]),
                            slot_token)
    assert [line.decode() for line in got.numpy()] == [expected, expected]
