import pytest

from t2t_lite.hparam import HParams, HParamsError


def make():
    return HParams(a=1, b=0.5, c=[1, 2], d=True, e="timing", f=[0.1])


def test_parse_uses_types_of_defaults():
    h = make().parse("a=3,b=2,c=[4,5,6],d=false,e=learned,f=[1,2.5]")
    assert h.a == 3 and isinstance(h.a, int)
    assert h.b == 2.0 and isinstance(h.b, float)
    assert h.c == [4, 5, 6]
    assert h.d is False
    assert h.e == "learned"
    assert h.f == [1.0, 2.5]


def test_parse_empty_list_and_spaces():
    h = make().parse(" a = 7 , c=[] ")
    assert h.a == 7 and h.c == []


@pytest.mark.parametrize("text,pattern", [
    ("zz=1", "unknown hparam 'zz'"),
    ("a=1.5", "hparam 'a' expects an int"),
    ("d=maybe", "hparam 'd' expects a bool"),
    ("c=5", "hparam 'c' expects a list of int"),
    ("c=[1,x]", "hparam 'c' expects an int"),
    ("a", "malformed hparams string"),
    ("a=1,,b=2", "malformed hparams string"),
])
def test_parse_errors_name_key_and_type(text, pattern):
    with pytest.raises(HParamsError, match=pattern):
        make().parse(text)


def test_failed_parse_changes_nothing():
    h = make()
    with pytest.raises(HParamsError):
        h.parse("a=5,b=oops")
    assert h.a == 1


def test_set_checks_type_and_json_round_trip():
    h = make()
    with pytest.raises(HParamsError, match="expects an int"):
        h.a = "x"
    with pytest.raises(HParamsError, match="unknown hparam"):
        h.nope = 1
    h.b = 3  # an int where a float is expected is fine
    assert isinstance(h.b, float)
    assert HParams.from_json(h.to_json()) == h


def test_override_from_dict_rejects_unknown_keys():
    with pytest.raises(HParamsError, match="unknown hparam 'x'"):
        make().override_from_dict({"x": 1})
