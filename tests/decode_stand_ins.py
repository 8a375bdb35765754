"""Stand-ins for decoding tests: a search that reverses its inputs, and the
Decoding / DecodeSettings of the library defaults with a test's overrides."""
import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import ByteTextEncoder
from t2t_lite.decoding.factory import Decoding
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams
from t2t_lite.hparam import HParams

ENCODER = ByteTextEncoder()
UNLIMITED = InputRules(max_input_length=0, max_positions=None)
# The sampling keys' defaults: search, no sampling.
SEARCH = {"sampling_method": "argmax", "sampling_temp": 1.0, "sampling_keep_top_k": 0,
          "sampling_keep_top_p": 1.0, "num_samples": 1, "sampling_seed": 1}


def settings(overrides="", xla=False):
    return DecodeSettings.from_hparams(decode_hparams(overrides), HParams(xla=xla))


def decoding(search, overrides="", rules=UNLIMITED, encoder=ENCODER, target_encoder=None,
             xla=False):
    """A Decoding of ``search`` under the library settings with ``overrides``."""
    return Decoding(search, settings(overrides, xla), rules, encoder, target_encoder or encoder)


class ReversingSearch:
    """A stand-in search: beam 0 reverses the input, beam 1 copies it, beam 2 is
    an empty slot (score -inf). Records every call."""

    def __init__(self, fail_on_call: int = -1):
        self.calls = []
        self.fail_on_call = fail_on_call

    def __call__(self, inputs, max_decode_length, line_numbers=None):
        if len(self.calls) == self.fail_on_call:
            raise RuntimeError("search failed")
        self.calls.append((inputs.copy(), max_decode_length))
        ids = np.zeros((len(inputs), 3, inputs.shape[1]), np.int32)
        for row, input_ids in enumerate(inputs.tolist()):
            content = input_ids[:input_ids.index(EOS_ID)]
            ids[row, 0, :len(content) + 1] = content[::-1] + [EOS_ID]
            ids[row, 1, :len(content) + 1] = content + [EOS_ID]
        return ids, np.tile([-1.0, -2.0, -np.inf], (len(inputs), 1))
