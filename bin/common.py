"""Flags and error handling shared by the t2t-* commands (no library logic here)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable, Sequence

# Errors that bad input produces: printed as one line, exit status 2.
USER_ERRORS = (KeyError, ValueError, OSError, UnicodeDecodeError)


class CommandParser(argparse.ArgumentParser):
    """argparse with a one-line error (an unknown flag says so, and where to look),
    not a usage dump."""

    def error(self, message: str) -> None:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


class _Refused(argparse.Action):
    """A flag of tensor2tensor's that t2t-lite does another way: using it is an error
    that names that way, unless its value asks for what t2t-lite does anyway."""

    def __init__(self, option_strings, dest, reason: str, harmless: tuple[str, ...],
                 **kwargs):
        super().__init__(option_strings, dest, nargs="?", const="true",
                         help=f"(tensor2tensor) {reason}", **kwargs)
        self.reason, self.harmless = reason, harmless

    def __call__(self, parser, namespace, values, option_string=None):
        if str(values).lower() not in self.harmless:
            raise ValueError(f"{option_string} is not a t2t-lite flag: {self.reason}")


def refuse_flag(parser: argparse.ArgumentParser, flag: str, reason: str,
                harmless: tuple[str, ...] = ()) -> None:
    """``flag`` fails with one line that gives ``reason``; values in ``harmless``
    (what t2t-lite does anyway, e.g. ``--use_tpu=false``) pass."""
    parser.add_argument(flag, action=_Refused, reason=reason, harmless=harmless,
                        default=argparse.SUPPRESS)


def add_registry_flags(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--problem", help="registered problem name (see --registry_help)")
    parser.add_argument("--model", help="registered model name, e.g. transformer")
    parser.add_argument("--hparams_set", help="registered hparams set, e.g. transformer_base")
    parser.add_argument("--hparams", default="",
                        help="overrides of the hparams set: 'a=1,b=0.5,c=[1,2],d=true'")
    parser.add_argument("--data_dir", help="folder of the vocabulary and TFRecord shards")
    parser.add_argument("--output_dir", required=required,
                        help="folder of checkpoints, hparams.json and summaries")
    add_usr_dir_flags(parser)


def add_usr_dir_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--t2t_usr_dir", default="",
                        help="a Python package of your own problems/models/hparams to import")
    parser.add_argument("--registry_help", action="store_true",
                        help="list every registered problem, model and hparams set, and exit")


def load_registrations(args: argparse.Namespace) -> bool:
    """Imports built-ins and the user's dir; prints the registry if asked.

    Returns True when the command should stop (``--registry_help``).
    """
    from t2t_lite import registry
    registry.load_builtins()
    if args.t2t_usr_dir:
        registry.import_usr_dir(args.t2t_usr_dir)
    if args.registry_help:
        print(registry.registry_help())
        return True
    return False


def run_main(prog: str, main: Callable[[Sequence[str] | None], int | None],
             argv: Sequence[str] | None = None) -> int:
    """Runs ``main``; a bad-input error becomes one line on stderr and exit 2."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S")
    try:
        return main(argv) or 0
    except USER_ERRORS as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
