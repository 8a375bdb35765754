"""One-line refusals of tensor2tensor names t2t-lite does not have.

Each refusal names the T2T element, the user's line that reached it (the innermost
frame outside t2t-lite) and what to use instead, so a usr_dir written for T2T stops
before any work with a sentence, not with an AttributeError or a traceback.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, Mapping

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FROM_T2T_DOC = "docs/FROM_T2T.md"


class T2TNameError(ValueError):
    """A tensor2tensor name, module or value t2t-lite does not honour; the message
    already names the user's FILE:LINE (``place``)."""

    def __init__(self, message: str, place: str = ""):
        super().__init__(f"{place}: {message}" if place else message)
        self.place = place


def users_place() -> str:
    """``FILE:LINE`` of the innermost frame outside t2t-lite and Python's import
    machinery: the user's line that asked for the refused name ('' when none)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        ours = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
        if not ours and not filename.startswith("<frozen importlib"):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def refuse(element: str, advice: str) -> T2TNameError:
    """The error for T2T's ``element``, placed at the user's line."""
    return T2TNameError(f"tensor2tensor's {element} has no t2t-lite twin: {advice}",
                        users_place())


def missing_names(module: str, advice: Mapping[str, str],
                  default: str = "") -> Callable[[str], Any]:
    """A module ``__getattr__`` refusing every T2T name the module lacks: ``advice``
    says what to use instead of a known one; others get ``default``."""
    fallback = default or f"{FROM_T2T_DOC} lists what {module} has here"

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # Python's own probes (__path__, __wrapped__, ...)
            raise AttributeError(name)
        raise T2TNameError(f"tensor2tensor's {module}.{name} has no t2t-lite twin: "
                           f"{advice.get(name, fallback)}", users_place())
    return __getattr__


# T2T's modules without a twin, by prefix: what to use instead.
MODULE_ADVICE = {
    "tensor2tensor.bin": "use the t2t-datagen, t2t-trainer and t2t-decoder commands",
    "tensor2tensor.models.research": "T2T's research models are not in t2t-lite; "
                                     "--registry_help lists the models there are",
    "tensor2tensor.models.evolved_transformer": "the Evolved Transformer is not in "
                                                "t2t-lite: build on transformer_base()",
    "tensor2tensor.utils.trainer_lib": "t2t-trainer trains; a usr_dir registers problems "
                                       "and hparams sets only",
    "tensor2tensor.utils.t2t_model": "t2t-lite's models are Keras models "
                                     "(t2t_lite/models/): a T2TModel's body() does not "
                                     "carry over",
    "tensor2tensor.layers.common_layers": "T2T's layer functions are not in t2t-lite; "
                                          "t2t_lite/layers/ has its Keras layers",
    "tensor2tensor.layers.common_attention": "t2t_lite/layers/attention.py has the "
                                             "attention layers",
    "tensor2tensor.layers.modalities": "t2t-lite's text problems have one symbol "
                                       "modality a side: drop the modality settings",
    "tensor2tensor.data_generators.wiki_lm": "T2T's Wikipedia problems are not in "
                                             "t2t-lite: build the vocabulary from your text",
    "tensor2tensor.data_generators.lm1b": "T2T's lm1b problems are not in t2t-lite",
}


def module_refusal(t2t_name: str) -> T2TNameError:
    """The one line for ``import t2t_name``, a T2T module without a twin."""
    advice = next((text for prefix, text in MODULE_ADVICE.items()
                   if t2t_name == prefix or t2t_name.startswith(prefix + ".")),
                  f"{FROM_T2T_DOC} lists the modules t2t-lite has")
    return T2TNameError(f"tensor2tensor's module {t2t_name} has no t2t-lite twin: {advice}",
                        users_place())


def missing_modules(package: str) -> Callable[[str], Any]:
    """A twin package's ``__getattr__``: ``from tensor2tensor.layers import X`` imports
    the twin module X when there is one (Python asks the package first, by its own
    name), and refuses X in one line when there is none."""
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        twin = f"{package}.{name}"
        if importlib.util.find_spec(twin) is not None:
            return importlib.import_module(twin)
        raise module_refusal("tensor2tensor" + twin.split(".tensor2tensor", 1)[1])
    return __getattr__
