import json

import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.experiment import resolve
from t2t_lite.hparam import (HParams, HParamsError, at_least, between, fraction, off_or_above,
                             one_of, positive)
from t2t_lite.hparams.transformer import transformer_tiny


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
    ("a=2,e=x,a=3", r"hparam 'a' is given twice \(a=2, then a=3\): give it once"),
])
def test_parse_errors_name_key_and_type(text, pattern):
    with pytest.raises(HParamsError, match=pattern):
        make().parse(text)


def test_a_key_repeated_with_its_value_passes():
    assert make().parse("a=2,e=x,a=2").a == 2


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


# Declared ranges (issue 24).
def ranged():
    return HParams(size=at_least(1, 4), drop=fraction(0.1), rate=positive(1.0),
                   alpha=at_least(0, 0.6), dpi=between(10, 1200, 110),
                   step=off_or_above(1, 1.1), opt=one_of("adam", "sgd"),
                   widths=at_least(1, [2, 3]), scales=positive([0.5, 2.0]), flag=False,
                   plain=0.5, count=3)


def test_ranges_take_their_defaults():
    h = ranged()
    assert (h.size, h.drop, h.rate, h.alpha, h.dpi, h.step, h.opt, h.widths) == (
        4, 0.1, 1.0, 0.6, 110, 1.1, "adam", [2, 3])
    assert h.range_of("drop").text == "in [0, 1)" and h.range_of("plain") is None


@pytest.mark.parametrize("text,pattern", [
    ("size=0", "'size' must be >= 1, got 0"),
    ("drop=1.5", r"'drop' must be in \[0, 1\), got 1.5"),
    ("drop=1", r"'drop' must be in \[0, 1\), got 1.0"),
    ("drop=-0.1", r"'drop' must be in \[0, 1\)"),
    ("rate=0", "'rate' must be > 0, got 0.0"),
    ("dpi=5", r"'dpi' must be in \[10, 1200\], got 5"),
    ("step=0.5", r"'step' must be 0 \(off\) or > 1, got 0.5"),
    ("opt=adamw", "'opt' must be one of 'adam', 'sgd', got 'adamw'"),
    ("widths=[4,0]", "'widths' must be >= 1, got 0"),
    ("scales=[1,nan]", "'scales' must be finite and > 0, got nan"),
    ("alpha=nan", "'alpha' must be finite and >= 0, got nan"),
    ("alpha=inf", "'alpha' must be finite and >= 0, got inf"),
    ("alpha=1e999", "'alpha' must be finite and >= 0, got inf"),
    ("rate=-inf", "'rate' must be finite and > 0, got -inf"),
    ("plain=NaN", "'plain' must be finite, got nan"),
    ("size=1e999", "'size' expects an int"),
])
def test_parse_refuses_values_out_of_range_naming_the_source(text, pattern):
    h = ranged()
    with pytest.raises(HParamsError, match=f"^--hparams: hparam {pattern}"):
        h.parse(text, source="--hparams")
    assert h == ranged()


def test_every_way_in_is_checked():
    h = ranged()
    with pytest.raises(HParamsError, match="'drop' must be in"):
        h.drop = 1.0
    with pytest.raises(HParamsError, match="'rate' must be finite"):
        h.set_hparam("rate", float("nan"))
    with pytest.raises(HParamsError, match=r"^hparams.json in /run: hparam 'size' must be >= 1"):
        h.override_from_dict({"drop": 0.2, "size": -1}, source="hparams.json in /run")
    assert h.drop == 0.1  # a failed override changes nothing
    with pytest.raises(HParamsError, match="'scales' must be finite and > 0, got inf"):
        h.scales = [1.0, float("inf")]
    with pytest.raises(HParamsError, match="'size' must be >= 1, got 0"):
        HParams(size=at_least(1, 0))  # a default outside its own range
    with pytest.raises(HParamsError, match="'extra' must be finite"):
        h.extend(extra=float("inf"))


def test_plain_keys_are_typed_and_finite_only():
    h = ranged().parse("count=-7,plain=-2.5")  # a user's own keys: any finite value
    assert (h.count, h.plain) == (-7, -2.5)
    with pytest.raises(HParamsError, match="'count' expects an int"):
        h.parse("count=inf")


def test_rules_between_keys_are_checked_after_each_parse_and_override():
    def even_split(h):
        return None if h.size % h.count == 0 else f"size={h.size} is not divisible by count"
    h = ranged().parse("size=6").add_rule(even_split)
    with pytest.raises(HParamsError, match="^--hparams: size=7 is not divisible by count"):
        h.parse("size=7", source="--hparams")
    assert h.size == 6
    h.parse("size=4,count=2")  # one parse moves both keys at once
    with pytest.raises(HParamsError, match="size=5 is not divisible"):
        h.override_from_dict({"size": 5})
    assert (h.size, h.count) == (4, 2) and h.copy().range_of("size").text == ">= 1"
    with pytest.raises(HParamsError):
        h.copy().parse("size=5")  # a copy keeps the rules


def test_json_never_holds_nan():
    h = ranged()
    h._values["plain"] = float("nan")  # only a bug could get here
    with pytest.raises(ValueError):
        h.to_json()


def test_every_registered_set_declares_every_key_within_its_range():
    load_builtins()
    assert len(registry.hparams_sets.names()) >= 30
    for name in registry.hparams_sets.names():
        hparams = registry.hparams_sets[name]().check()
        undeclared = [key for key in hparams if hparams.range_of(key) is None
                      and not isinstance(getattr(hparams, key), bool)]
        assert undeclared == [], name
        for key in hparams:
            hparams.set_hparam(key, getattr(hparams, key))  # each default in its range


def test_transformer_heads_must_split_the_channels():
    hparams = transformer_tiny()
    with pytest.raises(HParamsError, match="hidden_size=128 is not divisible by num_heads=3"):
        hparams.parse("num_heads=3")
    with pytest.raises(HParamsError, match="attention_key_channels=102 is not divisible"):
        hparams.parse("attention_key_channels=102")
    hparams.parse("num_heads=8,attention_value_channels=64")


def test_resolve_names_each_source(tmp_path):
    record = {"problem": "algorithmic_reverse_binary40", "model": "transformer",
              "hparams_set": "transformer_tiny", "data_dir": str(tmp_path),
              "hparams": {"layer_prepostprocess_dropout": float("nan")}}
    (tmp_path / "hparams.json").write_text(json.dumps(record))
    with pytest.raises(HParamsError, match=f"^hparams.json in {tmp_path}: hparam "
                       r"'layer_prepostprocess_dropout' must be finite and in \[0, 1\), got nan"):
        resolve(None, None, None, "", None, str(tmp_path))
    record["hparams"] = {"layer_prepostprocess_dropout": 0.2}
    (tmp_path / "hparams.json").write_text(json.dumps(record))
    with pytest.raises(HParamsError, match=r"^--hparams: hparam 'label_smoothing' must be in"):
        resolve(None, None, None, "label_smoothing=1.0", None, str(tmp_path))
    hparams = resolve(None, None, None, "", None, str(tmp_path)).hparams
    assert hparams.layer_prepostprocess_dropout == 0.2


def test_a_set_out_of_range_is_named(monkeypatch):
    def broken_set():
        hparams = transformer_tiny()
        hparams.relu_dropout = 1.0
        return hparams
    monkeypatch.setitem(registry.hparams_sets._entries, "broken_set", broken_set)
    with pytest.raises(HParamsError, match=r"^hparams set broken_set: \S*test_hparam.py:\d+ hparam 'relu_dropout'"):
        resolve("algorithmic_reverse_binary40", "transformer", "broken_set", "", "d", "/nowhere")


def test_alias_and_refused_key_on_plain_hparams():
    from t2t_lite.hparam import Alias
    h = HParams(size=at_least(1, 4))
    h.add_alias("width", Alias(0, lambda hp, v: {"size": v * 2}, lambda hp: hp.size // 2,
                               "half of size", ("size",)))
    h.refuse_key("old", "use size")
    h.width = 3
    assert (h.size, h.width, h.values(), "width" in h, h.given("width")) == \
        (6, 3, {"size": 6}, True, 3)
    with pytest.raises(HParamsError, match=r"^hparam 'width' \(half of size\): hparam 'size' "
                       "must be >= 1, got 0"):
        h.parse("width=0")
    with pytest.raises(HParamsError, match="^hparam 'old' is tensor2tensor's and t2t-lite "
                       "does not have it: use size$"):
        h.old = 1
    h.size = 8  # set directly: the alias forgets what it was given
    assert h.given("width") is None and h.copy().width == 4
    with pytest.raises(HParamsError, match="a real key"):
        h.add_alias("size", h.aliases()["width"])
    h.extend(width=1)  # a real key takes the alias's place
    assert h.values() == {"size": 8, "width": 1}
