"""Requests out of proportion (issue 61): a beam wider than the target vocabulary lets
a hypothesis continue, or an extra length past any trained target, is capped with one
warning (t2t_lite/decoding/settings.py's ``proportioned``); at the limit, nothing is
said or changed. The draws decode at and past each limit."""
from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import random

import pytest

from cli_helpers import USR_DIR, train_tiny
from t2t_lite.bin import t2t_decoder
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams, proportioned

VOCAB = 5           # tiny_reverse_binary's targets: PAD, EOS, 0, 1 and <UNK>
MAX_LENGTH = 256    # my_very_small_transformer's


def settings(**values) -> DecodeSettings:
    return DecodeSettings(**{**decode_hparams("").values(), **values}, xla=False)


@pytest.mark.parametrize("beam, extra, capped", [
    (4, 256, {}), (5, 256, {"beam_size": 4}), (5000, 100000,
                                                 {"beam_size": 4, "extra_length": 256}),
    (1, 257, {"extra_length": 256})])
def test_a_request_past_its_limit_is_capped_in_one_warning_each(beam, extra, capped, caplog):
    asked = settings(beam_size=beam, extra_length=extra)
    with caplog.at_level(logging.WARNING):
        got = proportioned(asked, VOCAB, MAX_LENGTH)
    assert {key: getattr(got, key) for key in capped} == capped
    assert {key: getattr(got, key) for key in ("beam_size", "extra_length") if key not in capped} \
        == {key: getattr(asked, key) for key in ("beam_size", "extra_length")
            if key not in capped}
    assert len(caplog.records) == len(capped)
    for key, record in zip(sorted(capped), sorted(r.getMessage() for r in caplog.records)):
        assert record.startswith(f"{key}={getattr(asked, key)} ")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("proportion")
    _, output_dir = train_tiny(root)
    (root / "in.txt").write_text("0 1 1\n1 0\n1 1 1 0 0\n")
    return root, output_dir


# (key, values at and past the limit) for the tiny run.
LIMITS = {"beam_size": [VOCAB - 1, VOCAB, 5000], "extra_length": [MAX_LENGTH, MAX_LENGTH + 1,
                                                                  100000]}


@pytest.mark.slow  # four decodes, each tracing its own beam: about half a minute
def test_decodes_at_and_past_the_limits_are_capped_in_one_line_each(run, caplog, capsys):
    """Issue 61's fuzzer family "proportion": each draw a beam and an extra length at or
    past their limits, with every beam returned; T2T_PROPORTION_DRAWS=N draws N."""
    root, output_dir = run
    count = int(os.environ.get("T2T_PROPORTION_DRAWS", 4))
    combinations = list(itertools.product(*LIMITS.values()))
    random.Random(61).shuffle(combinations)
    found = []
    for index, values in enumerate(combinations[:count]):
        drawn = dict(zip(LIMITS, values))
        out = root / f"out{index}.txt"
        argv = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
                f"--decode_from_file={root / 'in.txt'}", f"--decode_to_file={out}",
                "--decode_hparams=return_beams=true," + ",".join(
                    f"{key}={value}" for key, value in drawn.items())]
        caplog.clear()
        with caplog.at_level(logging.WARNING), contextlib.redirect_stdout(io.StringIO()):
            code = t2t_decoder.main(argv)
        problems = []
        if code != 0:
            problems.append(f"exit {code}")
        past = {key for key, value in drawn.items() if value > LIMITS[key][0]}
        said = {key for key in drawn for record in caplog.records
                if record.getMessage().startswith(f"{key}={drawn[key]} ")}
        if said != past:
            problems.append(f"warned of {sorted(said)}, past {sorted(past)}")
        if code == 0:
            lines = out.read_text().splitlines()
            if len(lines) != 3 or any(len(line.split("\t")) > VOCAB - 1 for line in lines):
                problems.append(f"output {lines}")
        print(f"  {drawn}: " + ("; ".join(problems) or "ok"))
        found += [f"{drawn}: {'; '.join(problems)}"] if problems else []
    assert not found, "\n".join(found)
