"""A problem's data options: what a user chose for a problem made from their own files.

Most problems take none: their data is fixed by their class. A problem made from a
user's files (``translate_files``, ``parsing_files``, ``text2text_tmpdir``) declares
its options as an ``HParams`` of typed keys with ranges (``Problem.data_options()``),
and the user gives them once, when the data is generated (``t2t-datagen`` or
``t2t-trainer --generate_data``, ``--data_options='train=corpus/train,...'``).

They are recorded then as ``NAME.data_options.json`` in ``--data_dir`` (paths made
absolute, so that later commands work from any folder), and every later command
reads them from there: nothing else needs repeating. A later generation with
options that differ from the record is refused in one line naming the keys, as
another vocabulary is refused for shards (the data in that folder was made with
the recorded ones); ``t2t-trainer`` takes ``--data_options`` only with
``--generate_data``.

The record is written only after the problem has read all its input through
(``Problem.check_data_inputs``: a mismatched line count, an empty file, a bad line,
each one line naming FILE:LINE), so a refused input leaves nothing behind.
"""
from __future__ import annotations

import json
import os

from t2t_lite import interrupts
from t2t_lite.data.problem import SPLITS, Problem
from t2t_lite.hparam import HParams, HParamsError

SOURCE = "--data_options"


def record_path(problem: Problem, data_dir: str) -> str:
    return os.path.join(data_dir, f"{problem.name}.data_options.json")


def recorded(problem: Problem, data_dir: str) -> HParams | None:
    """The options recorded in ``data_dir``, checked against the problem's schema;
    None when nothing is recorded."""
    path = record_path(problem, data_dir)
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} is not readable JSON ({error}); remove it and generate "
                         "the data again") from None
    return _schema(problem).override_from_dict(values, source=path)


def _schema(problem: Problem) -> HParams:
    schema = problem.data_options()
    if schema is None:
        raise HParamsError(f"{SOURCE}: problem {problem.name} takes no data options "
                           "(its data is fixed by its class)")
    return schema


def parse(problem: Problem, text: str, tmp_dir: str) -> HParams:
    """``text`` (``key=value,...``) checked against the problem's schema, then resolved
    by the problem (paths made absolute, files found, keys that go together)."""
    options = _schema(problem).parse(text, source=SOURCE)
    derived = [key for key in getattr(problem, "derived_data_options", ())
               if options.values()[key] != _schema(problem).values()[key]]
    if derived:
        raise HParamsError(f"{SOURCE}: {problem.name} finds {', '.join(derived)} itself "
                           "(in --tmp_dir); leave them out")
    return problem.resolve_data_options(options, tmp_dir)


def differences(old: HParams, new: HParams) -> list[str]:
    """``key=old -> new`` for each key whose values differ."""
    return [f"{key}={old.values()[key]!r} -> {new.values()[key]!r}"
            for key in old if old.values()[key] != new.values()[key]]


def refuse_differences(problem: Problem, data_dir: str, old: HParams,
                       new: HParams) -> None:
    changed = differences(old, new)
    if changed:
        raise ValueError(
            f"{SOURCE}: {data_dir} holds {problem.name} data made with other options "
            f"({'; '.join(changed)}; recorded in {record_path(problem, data_dir)}); "
            "use another --data_dir, or give the recorded options")


def write_record(problem: Problem, data_dir: str, options: HParams) -> None:
    path = record_path(problem, data_dir)
    os.makedirs(data_dir, exist_ok=True)
    with open(path + ".incomplete", "w", encoding="utf-8") as f:
        f.write(options.to_json(indent=1) + "\n")
    os.replace(path + ".incomplete", path)


def prepare(problem: Problem, data_dir: str, text: str, tmp_dir: str) -> HParams | None:
    """Before any work: this generation's options, checked; the ones to record, or None.

    A problem without options refuses any. With options, they are resolved by the
    problem (which then holds them: eval file names, the metric's language); none
    given reuses the record (a rerun resumes; its files are resolved again, so
    text2text_tmpdir's from another ``--tmp_dir`` differ). Options that differ from
    the record are refused. New ones have their input read through and are returned
    for ``generate`` to record.
    """
    if problem.data_options() is None:
        if text.strip():
            _schema(problem)  # raises: this problem takes none
        return None
    old = recorded(problem, data_dir)
    if old is not None and not text.strip():
        new = problem.resolve_data_options(old.copy(), tmp_dir)
    else:
        new = parse(problem, text, tmp_dir)
    if old is not None:
        refuse_differences(problem, data_dir, old, new)
        return None
    problem.check_data_inputs(new)
    return new


def generate(problem: Problem, data_dir: str, tmp_dir: str,
             options: HParams | None) -> None:
    """Records ``options`` (``prepare``'s), then runs ``problem.generate_data``. When
    this call recorded them and generation fails (sentencepiece refuses the vocabulary
    size ...), the files of the problem it wrote are removed with the record: nothing
    is left that a corrected rerun would have to match or would silently keep. An
    interrupt (Ctrl-C, SIGTERM) keeps them: the same command goes on from the files
    written whole (the vocabulary, a split's shards), as after a kill."""
    before = set(os.listdir(data_dir)) if os.path.isdir(data_dir) else set()
    if options is not None:
        write_record(problem, data_dir, options)
    try:
        problem.generate_data(data_dir, tmp_dir)
    except BaseException as error:
        if options is not None and not interrupts.interrupted(error):
            for name in set(os.listdir(data_dir)) - before:
                if problem.name in name and os.path.isfile(os.path.join(data_dir, name)):
                    os.remove(os.path.join(data_dir, name))
        raise


def load(problem: Problem, data_dir: str) -> HParams:
    """The recorded options; a one-line error naming the command when there are none."""
    options = recorded(problem, data_dir)
    if options is None:
        raise FileNotFoundError(
            f"no {problem.name} data in {data_dir}: {record_path(problem, data_dir)} does "
            f"not exist; generate it with t2t-datagen --problem={problem.name} "
            f"--data_dir={data_dir} --data_options=... (see the README's 'Your own data')")
    return options


class RecordedOptions:
    """Mixin of a problem with data options: ``options(data_dir)`` reads the record,
    and the methods that get no ``data_dir`` (eval file names, the metric's language,
    the decode postprocessing) read ``current()``: the options last loaded or
    resolved (a command loads them before it decodes, scores or writes eval files)."""

    _current: HParams | None = None

    def options(self, data_dir: str) -> HParams:
        """The options recorded in ``data_dir`` (now the current ones)."""
        self._current = load(self, data_dir)  # type: ignore[arg-type]
        return self._current

    def require_data(self, split: str, data_dir: str) -> list[str]:
        """A split whose files were not given is named as such, not as missing shards."""
        if split in SPLITS and split not in self.generated_splits(data_dir):
            raise FileNotFoundError(f"problem {self.name} in {data_dir} has no {split} "
                                    f"data: no {split} files were given in {SOURCE}")
        return super().require_data(split, data_dir)

    def datagen_command(self, data_dir: str) -> str:
        return super().datagen_command(data_dir) + f" {SOURCE}=..."

    def current(self) -> HParams:
        if self._current is None:
            raise RuntimeError(f"{type(self).__name__}: its data options are not loaded "
                               "yet; call options(data_dir) first")
        return self._current
