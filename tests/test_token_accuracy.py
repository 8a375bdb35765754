"""benchmarks/token_accuracy.py's alignment table: which word slot of a tree belongs to
which input word, and what counts as attending to it."""
import importlib.util
import os

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID

PATH = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "token_accuracy.py")
SPEC = importlib.util.spec_from_file_location("token_accuracy", PATH)
token_accuracy = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(token_accuracy)

# ids 2-4 are words, 5 "(S", 6 ")": the tree "(S w2 w3 ) w4" of the input "w2 w3 w4".
IS_WORD = np.array([False, False, True, True, True, False, False])
IS_WORD[EOS_ID] = True  # as the kinds read it: EOS is no bracket, but it is no slot either
INPUTS = np.array([[2, 3, 4, EOS_ID, PAD_ID], [2, 3, EOS_ID, PAD_ID, PAD_ID]])
TARGETS = np.array([[5, 2, 3, 6, 4, EOS_ID], [5, 2, 6, EOS_ID, PAD_ID, PAD_ID]])


def attention(layers: int = 2, heads: int = 2) -> np.ndarray:
    return np.full([2, layers, heads, TARGETS.shape[1], INPUTS.shape[1]], 0.2)


def test_a_head_that_reads_each_slots_own_word_scores_all_of_them():
    weights = attention()
    for slot, word in ((1, 0), (2, 1), (4, 2)):  # slots 1, 2, 4 hold words 0, 1, 2
        weights[0, 0, 1, slot, word] = 1.0
    weights[0, 1, :, :, 3] = 1.0  # layer 1 looks at EOS whatever the slot
    alignment = token_accuracy.WordAlignment()
    alignment.add(weights, INPUTS, TARGETS, IS_WORD)
    # The second sentence has one slot for two words: not counted.
    assert alignment.slots == 3
    assert alignment.rows() == [
        ["layer 0 (mean of heads)", "100.0%", "0.0%", "0.0%", "0.600"],
        ["layer 1 (mean of heads)", "0.0%", "0.0%", "33.3%", "0.200"],  # word 2's "after"
        ["best head: layer 0, head 1", "100.0%", "0.0%", "0.0%", "1.000"]]


def test_one_head_is_one_row_and_nothing_counted_is_no_table():
    weights = attention(layers=1, heads=1)
    alignment = token_accuracy.WordAlignment()
    alignment.add(weights[1:], INPUTS[1:], TARGETS[1:], IS_WORD)
    assert alignment.rows() == []
    weights[0, 0, 0, :, 4] = 1.0  # everything on the last position: no word's
    alignment.add(weights[:1], INPUTS[:1], TARGETS[:1], IS_WORD)
    assert alignment.rows() == [["layer 0 (mean of heads)", "0.0%", "0.0%", "0.0%", "0.200"]]

    weights[0, 0, 0] = 0.0
    for slot, word in ((1, 0), (2, 1), (4, 2)):  # each slot on the word before its own
        weights[0, 0, 0, slot, max(word - 1, 0)] = 1.0
    shifted = token_accuracy.WordAlignment()
    shifted.add(weights[:1], INPUTS[:1], TARGETS[:1], IS_WORD)
    assert shifted.rows() == [["layer 0 (mean of heads)", "33.3%", "66.7%", "0.0%", "0.333"]]
    assert alignment.slots == 3
