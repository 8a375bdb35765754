"""Flags and error handling shared by the t2t-* commands (no library logic here)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Callable, Sequence

# Errors that bad input produces: printed as one line, exit status 2.
USER_ERRORS = (KeyError, ValueError, OSError, UnicodeDecodeError)


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
