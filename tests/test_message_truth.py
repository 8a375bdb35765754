"""The checker of error lines (tests/message_truth.py) catches what it is for."""
from message_truth import untrue


def test_a_flag_the_command_lacks_is_caught_unless_the_user_typed_it():
    assert untrue("t2t-decoder: error: give --decode_from_fle=FILE", []) == [
        "names --decode_from_fle, a flag of none of t2t-decoder"]
    assert untrue("t2t-trainer: error: unrecognized arguments: --train_stpes=3",
                  ["--train_stpes=3"]) == []
    # A flag of another command the line names is that command's.
    assert untrue("t2t-decoder: error: no data: run t2t-datagen --tmp_dir=DIR first", []) == []


def test_a_missing_path_is_caught_unless_given_or_made_from_one(tmp_path):
    given = str(tmp_path / "out.txt")
    assert untrue(f"t2t-decoder: error: {tmp_path}/elsewhere.txt has 3 lines", []) == [
        f"names {tmp_path}/elsewhere.txt, which does not exist and was not given"]
    assert untrue(f"t2t-decoder: error: {given}.shard-1-of-2 is missing",
                  [f"--decode_to_file={given}"]) == []
    assert untrue(f"t2t-decoder: error: see https://example.org/x and ~/a; {tmp_path}", []) == []
    assert untrue(f"t2t-decoder: error: trained on the data in {tmp_path}/old, which is not "
                  "there now; give --data_dir", []) == []


def test_a_bare_boolean_is_caught_but_an_echoed_value_passes():
    assert untrue("t2t-decoder: error: True lines were cut", []) == [
        "prints True where a count or a name belongs"]
    assert untrue("t2t-trainer: error: --xla=True is refused here", ["--xla=True"]) == []
