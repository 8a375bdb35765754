"""HParams: typed hyperparameters, each with the values it allows.

A key is declared once, with its default and its range, in an hparams set
(``t2t_lite/hparams/``)::

    HParams(hidden_size=at_least(1, 512),              # an int >= 1, default 512
            layer_prepostprocess_dropout=fraction(0.1),  # a float in [0, 1)
            learning_rate=positive(1.0),               # a float > 0
            optimizer=one_of("adam", "sgd"),            # the first choice is the default
            normalize_before=False)                    # a bool: its type is its range

A key keeps the type of its default (bool, int, float, str, or a list of one of
those, whose range then holds for each element). A plain default (a user's own
key: ``hparams.extend(my_size=3)``) declares the type only. Floats are finite
everywhere: NaN and infinities are refused whatever the key.

Every value is checked however it arrives: in the set, by attribute, from an
override string ``"a=1,b=0.5,c=[1,2],d=true"`` (``parse``: ``--hparams``) or a
dict (``override_from_dict``: ``hparams.json``). Rules between keys
(``add_rule``) are checked after each parse and override and by ``check()``.
A failed parse or override changes nothing. Unknown keys are never accepted.
Every refusal is an ``HParamsError`` that names the key, the value, what is
allowed and, given a ``source``, where the value came from::

    --hparams: hparam 'layer_prepostprocess_dropout' must be in [0, 1), got 1.5

tensor2tensor's names live beside the real keys (``hparams/t2t_keys.py``): an
alias (``add_alias``) is set and read like a key, everywhere a key is, but writes
and reads real keys and is never stored (``values()``, ``to_json()`` hold real
keys only); a refused key (``refuse_key``) stops in one line with advice. T2T's
HParams API is here too: ``add_hparam``, ``set_hparam``, ``del_hparam``,
``get``, ``values``, ``parse``, ``override_from_dict``, ``in``. Inside
``collecting_errors(source)`` each refused set, add or delete is noted with the
user's FILE:LINE and skipped; the block's end raises them all in one line.
"""
from t2t_lite.hparam.aliases import Alias, collecting_errors  # noqa: F401
from t2t_lite.hparam.ranges import (  # noqa: F401
    HParamsError, Range, Rule, at_least, between, fraction, from_source, off_or_above, one_of,
    positive)
from t2t_lite.hparam.values import HParams  # noqa: F401
