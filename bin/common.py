"""Flags and error handling shared by the t2t-* commands (no library logic here)."""
from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import math
import os
import sys
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from t2t_lite import disk_space, interrupts

if TYPE_CHECKING:  # not at run time: the problem module starts TensorFlow
    from t2t_lite.data.problem import Problem

# Errors that bad input produces: printed as one line, exit status 2.
USER_ERRORS = (KeyError, ValueError, OSError, UnicodeDecodeError)


def _number(cast: type, allows: Callable[[float], bool], what: str) -> Callable[[str], float]:
    """An argparse ``type``: ``cast(text)``, finite and ``allows``d, or argparse's
    one-line error "argument --flag: must be WHAT, got TEXT"."""
    def parse(text: str) -> float:
        try:
            number = cast(text)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and allows(number)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return number
    return parse


# Numeric flags: every int or float flag of a command declares its range with one of these.
def at_least(least: int) -> Callable[[str], int]:
    """An int >= ``least`` (counts, steps; 0 often means "off": see each flag's help)."""
    return _number(int, lambda n: n >= least, f"an int >= {least}")


def between(low: int, high: int) -> Callable[[str], int]:
    """An int in [``low``, ``high``]."""
    return _number(int, lambda n: low <= n <= high, f"an int in [{low}, {high}]")


non_negative_float = _number(float, lambda x: x >= 0, "a finite number >= 0")
positive_float = _number(float, lambda x: x > 0, "a finite number > 0")


def list_of(item: Callable[[str], float]) -> Callable[[str], str]:
    """A comma-separated list, each part checked by the argparse type ``item``: the
    text as given (a sweep's grid, read before hours of work, not after)."""
    def parse(text: str) -> str:
        for part in text.split(","):
            try:
                item(part)
            except argparse.ArgumentTypeError as error:
                raise argparse.ArgumentTypeError(f"each value {error} (in {text!r})") from None
        return text
    return parse


class FlagParser(argparse.ArgumentParser):
    """argparse as every t2t-lite command and benchmark script reads flags: full names
    only, a one-line error (an unknown flag named with the nearest known one, not a
    usage dump), and a flag given twice with two values refused."""

    def __init__(self, *args, **kwargs):
        # Flags are their full names, as --help lists them (tensor2tensor's absl flags and
        # fairseq's parser take no abbreviations either): a prefix that happens to be
        # unique today would silently mean another flag once one is added.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._acting: list[tuple[str, str, Callable[[argparse.Namespace], bool]]] = []

    def acts_only(self, flag: str, when: str,
                  holds: Callable[[argparse.Namespace], bool]) -> None:
        """Refuses ``flag`` typed while ``holds(args)`` is false: argparse would take it
        and it would change nothing, while whoever typed it expects it to (an early
        stop, an export, an output file). ``when`` completes "acts only ..."."""
        self._acting.append((flag, when, holds))

    def error(self, message: str) -> None:
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(self, args=None, namespace=None) -> argparse.Namespace:
        args = sys.argv[1:] if args is None else list(args)
        given = self._check_flags(args)
        parsed = super().parse_args(args, namespace)
        for flag, when, holds in self._acting:
            typed = given.get(self._option_string_actions[flag].dest)
            if typed and not holds(parsed):
                self.error(f"{typed[0][0]} acts only {when}; here it would change "
                           f"nothing: leave it out")
        return parsed

    def _check_flags(self, args: list[str]) -> dict[str, list[tuple[str, str]]]:
        """Names every unknown flag first (argparse would first complain of a missing
        required flag, when the user had typed it wrong), then refuses a flag given
        twice with different values: argparse would keep the last value and drop the
        first without a word (``--hparams=a=1 --hparams=b=2`` trains without a=1;
        ``--translation`` twice scores the second file). The same value twice, or a
        flag of no value twice, is harmless and passes, as does a flag meant to be
        repeated (``action="append"``). Returns each given flag's (name as typed,
        value) pairs by destination."""
        values: dict[str, list[tuple[str, str]]] = {}
        for index, token in enumerate(args):
            if token == "--":
                break
            if not token.startswith("--"):
                continue
            name, has_value, value = token.partition("=")
            action = self._option_string_actions.get(name)
            if action is None:
                close = difflib.get_close_matches(name, self._option_string_actions, n=1)
                self.error(f"unrecognized arguments: {token}"
                           + (f" (did you mean {close[0]}?)" if close else ""))
            if isinstance(action, (_Refused, argparse._AppendAction)):
                continue
            if not has_value and action.nargs != 0:
                value = args[index + 1] if index + 1 < len(args) else ""
            values.setdefault(action.dest, []).append((name, value))
        for given in values.values():
            if len({value for _, value in given}) > 1:
                shown = ", then ".join(f"{name}={value}" for name, value in given)
                times = "twice" if len(given) == 2 else f"{len(given)} times"
                self.error(f"{given[0][0]} is given {times} with different values "
                           f"({shown}); only the last would count: give it once"
                           + (" (hparams go in one comma-separated list)"
                              if "hparams" in given[0][0] else ""))
        return values


class CommandParser(FlagParser):
    """A t2t-* command's flags: FlagParser's rules, every command's --verbosity and
    thread-pool flags, and TensorFlow started quietly once they are read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument("--verbosity", type=int, default=0, choices=(0, 1, 2),
                          help="0: t2t-lite's own messages; 1: also TensorFlow's start-up "
                               "messages (device probing) and warnings; 2: all of TensorFlow's")
        # tensor2tensor's names for TensorFlow's two thread pools.
        self.add_argument("--intra_op_parallelism_threads", type=at_least(0), default=0,
                          help="threads one op (a matmul) may use; 0: TensorFlow's choice, "
                               "one per core")
        self.add_argument("--inter_op_parallelism_threads", type=at_least(0), default=0,
                          help="ops that may run at once; 0: TensorFlow's choice")
        self._before_start: list[Callable[[argparse.Namespace], None]] = []

    def before_start(self, announce: Callable[[argparse.Namespace], None]) -> None:
        """``announce(args)`` runs once the flags are read, before TensorFlow starts
        (seconds of silence): what a person at a terminal should see at once."""
        self._before_start.append(announce)

    def parse_args(self, args=None, namespace=None) -> argparse.Namespace:
        parsed = super().parse_args(args, namespace)
        for announce in self._before_start:
            announce(parsed)
        start_tensorflow(parsed.verbosity)
        set_threads(parsed.intra_op_parallelism_threads, parsed.inter_op_parallelism_threads)
        return parsed


def start_tensorflow(verbosity: int) -> None:
    """Imports TensorFlow and lets it probe devices, quietly unless ``verbosity`` > 0.

    TensorFlow's C++ start-up messages (oneDNN notes, CUDA probing errors on a
    machine without a GPU) are printed before its log level applies, so at
    verbosity 0 stderr is closed while they happen, and its Python INFO log is
    off. Python errors still show:
    they are raised after stderr is back.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", {0: "2", 1: "1", 2: "0"}[verbosity])
    # TensorFlow's own Python INFO lines ("Sharding callback duration" at every
    # checkpoint, logged through absl) would otherwise pass through the commands'
    # INFO log.
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).setLevel(
            {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}[verbosity])
    if "tensorflow" in sys.modules or verbosity > 0:
        return
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        import tensorflow as tf
        # Listing the devices probes CUDA (the cuInit error) but runs no op, so
        # devices stay configurable (split_cpu) and collectives (TF_CONFIG) too.
        tf.config.list_physical_devices()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def set_threads(intra_op: int, inter_op: int) -> None:
    """Sizes TensorFlow's thread pools (0 leaves one as TensorFlow chooses). Only
    before TensorFlow runs its first op: in-process callers (tests) that already
    ran one keep the pools they have."""
    import tensorflow as tf
    for size, setter in ((intra_op, tf.config.threading.set_intra_op_parallelism_threads),
                         (inter_op, tf.config.threading.set_inter_op_parallelism_threads)):
        if size:
            try:
                setter(size)
            except RuntimeError:  # the context is already initialized
                logging.warning("TensorFlow is running already: its thread pools keep "
                                "their size")


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


def add_data_options_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data_options", default="",
        help="for a problem made from your own files (translate_files, parsing_files, "
             "text2text_tmpdir): KEY=VALUE,... naming the files and the vocabulary, "
             "recorded in --data_dir for every later command (README: 'Your own data')")


def add_encode_processes_flag(parser: argparse.ArgumentParser) -> None:
    """--num_concurrent_processes, for the commands that write a problem's data."""
    parser.add_argument(
        "--num_concurrent_processes", type=at_least(1), default=None,
        help="(tensor2tensor) processes that encode the samples of a large split, in order "
             "(default: the CPUs this command may use, at most 8; 1: this process alone)")


def generated_problem(name: str, args: argparse.Namespace) -> Problem:
    """The problem ``name`` (the registry's), set to encode with ``args``' processes."""
    from t2t_lite import registry
    problem = registry.problems[name]()
    problem.encode_processes = args.num_concurrent_processes
    return problem


def add_raw_weights_flag(parser: argparse.ArgumentParser) -> None:
    """--raw_weights, for the commands that read a trained run's weights."""
    parser.add_argument("--raw_weights", action="store_true",
                        help="read the weights as trained, not their moving averages (which "
                             "a run with moving_average_decay > 0 keeps, and which are read "
                             "by default)")


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
    from t2t_lite.builtins import load_builtins
    load_builtins()
    if args.t2t_usr_dir:
        registry.import_usr_dir(args.t2t_usr_dir)
    if args.registry_help:
        print(registry.registry_help())
        return True
    return False


@contextlib.contextmanager
def writing(what: str, flag: str, path: str, left: str = "") -> Iterator[None]:
    """The block writes the output ``flag``=``path`` (``what``: "while decoding
    in.txt"), whole at the end or not at all (``left`` says otherwise): an interrupt
    (t2t_lite/interrupts.py) or a full disk in it ends in one line that says so."""
    unwritten = "(nothing partial is left; an earlier output is kept as it was)"
    interrupts.describe(what, f"{left or f'{flag}={path} was not written {unwritten}'}; "
                              "run the same command again")
    try:
        yield
    except Exception as error:  # noqa: BLE001 - only a full disk's is replaced
        if disk_space.is_full_disk(error):
            raise disk_space.full_disk_error(error, flag, path, what, left or (
                f"nothing was written there {unwritten}")) from None
        raise


def generate_data(problem, data_dir: str, tmp_dir: str, options) -> None:
    """--generate_data's work (t2t-datagen, t2t-trainer --generate_data): refused
    before it where the disk has not a block for each shard still to write (shards
    are sized by what the problem generates, known only once written); a full disk
    or an interrupt in it ends in one line, the files written whole kept."""
    from t2t_lite.data import data_options
    from t2t_lite.data.problem import SPLITS
    with writing(f"while writing the data of {problem.name}", "--data_dir", data_dir,
                 left="the files written whole are kept and the one being written was "
                      "removed (it skips what is done)"):
        shards = [path for split in SPLITS for path in problem.shard_paths(data_dir, split)
                  if not os.path.exists(path)]
        if shards:
            folder, _ = disk_space.free_bytes(data_dir)
            disk_space.require_free("--data_dir", data_dir,
                                    len(shards) * os.statvfs(folder).f_frsize,
                                    f"{len(shards)} shards still to write")
        data_options.generate(problem, data_dir, tmp_dir, options)


def run_main(prog: str, main: Callable[[Sequence[str] | None], int | None],
             argv: Sequence[str] | None = None) -> int:
    """Runs ``main``; a bad-input error becomes one line on stderr and exit 2, and
    Ctrl-C or SIGTERM one line saying what was interrupted, what is left and how to
    go on, with exit 130 or 143 (t2t_lite/interrupts.py)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s",
                        datefmt="%H:%M:%S")
    with interrupts.handling_signals():
        try:
            return main(argv) or 0
        except (KeyboardInterrupt, Exception) as error:
            if interrupts.interrupted(error):
                line, status = interrupts.report(prog, error)
                print(line, file=sys.stderr)
                return status
            if not isinstance(error, USER_ERRORS):
                raise
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            print(f"{prog}: error: {message}", file=sys.stderr)
            return 2
