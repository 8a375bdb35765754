"""What an error line claims, checked: a line that sends the user the wrong way is a bug.

``untrue(line, argv, cwd)`` lists the claims of a command's one-line error that are
false: a ``--flag`` that neither the command nor a command the line names has
(nor the user typed: an unknown flag is echoed); an
absolute path that does not exist (nor as a checkpoint's prefix), is not one the user gave (or a name made
from one: ``OUT.shard-1-of-2``, ``FROM_FILE.decoded``) and is not said to be
missing ("... which is not there now"); a bare ``True`` / ``False``
where the line would mean a count or a name (``--flag=True`` echoes a value, and
passes). Used on every row of the bad-input table and every fuzzer draw that fails.
"""
from __future__ import annotations

import functools
import glob
import importlib
import os
import re

_PROG = re.compile(r"\bt2t-[a-z-]+")
_FLAG = re.compile(r"(?<![\w/=-])--([a-z][a-z0-9_]*)")
_PATH = re.compile(r"(?<![\w.=:~/<-])(/[^\s,;:'\"()]+)")  # not a URL's, ~/x's nor a tag's (</s>)
# Words by which a line says that the path it names is not there (so it need not be).
_SAID_MISSING = re.compile(r"not there|not found|does not exist|no such|is missing|went while|"
                           r"is gone")
_BOOLEAN = re.compile(r"(?<![=\w'\"])(True|False)(?![\w'\"=])")
# Benchmarks print their own prog names; their flags are theirs (argparse's parsers).
_BENCHMARK_PROGS = {"sweep_decode.py", "lever_table.py", "chosen_recipe.py"}


@functools.lru_cache(maxsize=None)
def command_flags(prog: str) -> frozenset[str]:
    """The long flags of t2t command ``prog`` (``t2t-decoder``), from its parser."""
    module = importlib.import_module(f"t2t_lite.bin.{prog.replace('-', '_')}")
    parser = module.parser()
    return frozenset(option[2:] for action in parser._actions
                     for option in action.option_strings if option.startswith("--"))


def _known_prog(prog: str) -> bool:
    try:
        command_flags(prog)
        return True
    except (ImportError, AttributeError):
        return False


def untrue(line: str, argv: list[str], cwd: str | None = None) -> list[str]:
    """The false claims of error ``line`` of a command run with ``argv``."""
    problems = []
    progs = {prog for prog in _PROG.findall(line) if _known_prog(prog)}
    if progs and not any(prog in line.split(":", 1)[0] for prog in _BENCHMARK_PROGS):
        known = frozenset().union(*(command_flags(prog) for prog in progs))
        typed = {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}
        for flag in _FLAG.findall(line):
            if flag not in known and flag not in typed:  # the user's own flag, echoed
                problems.append(f"names --{flag}, a flag of none of {', '.join(sorted(progs))}")
    given = _given_paths(argv, cwd)
    for found in _PATH.finditer(line):
        path = found.group(1).rstrip(".")
        if (os.path.lexists(path) or glob.glob(glob.escape(path) + ".*")  # a checkpoint's
                or any(path.startswith(g) or g.startswith(path) for g in given)):
            continue
        around = line[max(0, found.start() - 40):found.end() + 80]
        if _SAID_MISSING.search(around):  # the line says it is not there: true
            continue
        problems.append(f"names {path}, which does not exist and was not given")
    for word in _BOOLEAN.findall(line):
        problems.append(f"prints {word} where a count or a name belongs")
    return problems


def _given_paths(argv: list[str], cwd: str | None) -> list[str]:
    """Every value of ``argv`` that may be a path, absolute (as given, and resolved)."""
    found = []
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        for part in value.split(","):
            part = part.split("=", 1)[-1]  # --data_options=train=PATH
            if not part:
                continue
            for written in {part, os.path.expanduser(part)}:  # a literal ~ too
                absolute = os.path.join(cwd or os.getcwd(), written)
                # As joined (a "up/../x" the line may show), as normalised, as resolved.
                found += [absolute, os.path.normpath(absolute), os.path.realpath(absolute)]
    return [path for path in found if path != "/"]
