"""Decodes are scored by the metric their problem names (t2t_lite/metrics/scoring.py)."""
import re

import pytest

from t2t_lite.data.problem import Problem
from t2t_lite.metrics.scoring import score_decodes, sequence_accuracy
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40
from t2t_lite.registry import UnknownNameError, metrics, register_metric

seen = []


@register_metric("first_words_for_test")
def first_words(hypotheses, references, prefix=""):
    seen.append((hypotheses, references))
    return [prefix + " ".join(h.split()[0] for h in hypotheses)]


class NamedMetricProblem(Problem):
    eval_metric = "first_words_for_test"

    def eval_metric_options(self):
        return {"prefix": "> "}

    def generate_data(self, data_dir, tmp_dir):
        raise NotImplementedError

    def feature_encoders(self, data_dir):
        raise NotImplementedError


def test_a_problem_names_its_metric_and_options():
    assert score_decodes(NamedMetricProblem(), ("a b", "c d"), ["x", "y"]) == ["> a c"]
    assert seen[-1] == (["a b", "c d"], ["x", "y"])


def test_an_unknown_metric_lists_the_registered_ones():
    problem = NamedMetricProblem()
    problem.eval_metric = "blue"
    with pytest.raises(UnknownNameError,
                       match="(?s)unknown metric 'blue'.*bleu.*evalb.*sequence_accuracy"):
        score_decodes(problem, ["a"], ["a"])
    assert {"bleu", "evalb", "sequence_accuracy"} <= set(metrics.names())


def test_algorithmic_problems_count_whole_sequences():
    assert AlgorithmicReverseBinary40().eval_metric == "sequence_accuracy"
    assert sequence_accuracy(["1 0 1", "1  1", "0 1", ""], ["1 0 1", "1 1", "1 0", "1"]) == [
        "sequence accuracy 50.00% (2/4)"]
    with pytest.raises(ValueError, match="3 hypotheses but 2 references"):
        sequence_accuracy(["1", "0", "1"], ["1", "0"])


@pytest.mark.parametrize("metric, hypotheses, references, figure", [
    ("bleu", ["a dog runs in the park"], ["a dog runs in the park"], 100.0),
    ("evalb", ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"],
     ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"], 100.0),
    ("evalb", ["(S (DT the) (NN dog) (VBZ barks))"],
     ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"], 50.0),
    ("sequence_accuracy", ["1 0", "1"], ["1 0", "0"], 50.0),
])
def test_each_report_starts_with_its_headline_figure(metric, hypotheses, references, figure):
    """What sweeps, learning curves and the CTranslate2 benchmark rank by when no line is
    named (benchmarks/sweep_decode.py's headline): the first number of the first line."""
    first = metrics[metric](hypotheses, references)[0]
    assert float(re.search(r"\d+\.\d+", first).group()) == pytest.approx(figure, abs=0.01)
