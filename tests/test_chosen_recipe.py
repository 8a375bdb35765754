"""benchmarks/chosen_recipe.py: members trained, decoding chosen on the choosing split
for each member and the ensemble, the reported split decoded once with that choice
(and never again with another)."""
import itertools
import os
import re
import sys

import pytest

# The benchmarks run as scripts, importing their siblings.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
import chosen_recipe  # noqa: E402

BLEU = "tokenized BLEU (lowercased)"


def flag(command, name):
    values = [part.split("=", 1)[1] for part in command if part.startswith(f"--{name}=")]
    return values[0] if values else None


class FakeMachine:
    """Training and the commands, as their logs and files would show them."""

    def __init__(self, score_line=BLEU, steps=4000, member_scores=None):
        self.score_line, self.steps = score_line, steps
        self.member_scores = member_scores or {"1234": 40.0, "2": 40.6}
        self.trained, self.commands = [], []
        self.best = {}  # model name -> (count, beam, alpha) the sweep finds

    def train(self, run):
        # A member is trained only: its decoding is chosen after, on its checkpoints.
        assert not run.scored
        self.trained.append(run.seed)
        os.makedirs(f"{run.folder}/train", exist_ok=True)
        open(f"{run.folder}/train/ckpt-{self.steps}.index", "w").close()
        with open(run.log_path, "a") as log:
            log.write("training: 55 min; everything: 55 min\n")

    def command(self, command, log_path):
        self.commands.append(command)
        program = os.path.basename(command[1] if command[0] == sys.executable else command[0])
        with open(log_path, "a") as log:
            if program == "t2t-datagen":
                folder = flag(command, "eval_files_dir")
                log.write(f"eval files: {folder}/src {folder}/ref\n")
            elif program == "sweep_decode.py":
                name = "ensemble" if flag(command, "ensemble") else "seed" + re.search(
                    r"member_seed(\d+)", flag(command, "output_dir")).group(1)
                count, beam, alpha = self.best.get(name, (10, 5, 1.0))
                log.write("| up to step | averaged | beam | alpha | score | seconds |\n")
                for row in itertools.product(*(flag(command, grid).split(",")
                                               for grid in ("averages", "beams", "alphas"))):
                    log.write(f"| 4000 | {' | '.join(row)} | 40.00 | 15 |\n")
                log.write(f"best on dev.en: {41.5 if name == 'ensemble' else 41.0} with the "
                          f"last {count} checkpoints up to step 4000 averaged, beam {beam}, "
                          f"alpha {alpha}\n")
            elif program == "t2t-avg-all":
                os.makedirs(flag(command, "output_dir"))
                open(os.path.join(flag(command, "output_dir"), "checkpoint"), "w").close()
            elif program == "t2t-decoder":
                seed = re.search(r"member_seed(\d+)", flag(command, "output_dir")).group(1)
                score = 42.0 if flag(command, "ensemble") else self.member_scores[seed]
                log.write(f"{self.score_line.rstrip(':')}: {score:.2f}  (the report)\n")
            else:
                pytest.fail(f"an unexpected command: {command}")

    def ran(self, program):
        return [c for c in self.commands if os.path.basename(
            c[1] if c[0] == sys.executable else c[0]) == program]


def recipe(machine, argv):
    chosen_recipe.main(argv, train=machine.train, command=machine.command)


def test_members_are_chosen_on_val_and_decoded_once_on_test(tmp_path, capsys):
    machine = FakeMachine()
    machine.best["ensemble"] = (5, 4, 1.0)
    argv = ["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}", "--seeds=1234,2",
            "--hparams_set=transformer_relative_multi30k_tiny",
            "--hparams=layer_prepostprocess_dropout=0.2", "--minutes=60"]
    recipe(machine, argv)
    assert sorted(machine.trained) == [2, 1234]
    sweeps = machine.ran("sweep_decode.py")
    assert [flag(c, "averages") for c in sweeps] == ["5,10"] * 3
    assert all(flag(c, "source").endswith("eval_dev/src") for c in sweeps)
    decodes = machine.ran("t2t-decoder")
    assert [flag(c, "decode_hparams") for c in decodes] == [
        "beam_size=5,alpha=1.0,batch_size=64"] * 2 + ["beam_size=4,alpha=1.0,batch_size=64"]
    assert all(flag(c, "decode_from_file").endswith("test/eval_test/src") for c in decodes)
    # The ensemble's members averaged as the ensemble's choice says: 5 each.
    assert flag(decodes[2], "output_dir").endswith("member_seed1234_last5")
    assert flag(decodes[2], "ensemble").endswith("member_seed2_last5")
    out = capsys.readouterr().out
    assert "| seed1234 | 4000 | 55 | 10 | beam_size=5,alpha=1.0,batch_size=64 | 41.00 | 40.00 |" \
        in out
    assert "| ensemble | 4000 + 4000 | 110 | 5 | beam_size=4,alpha=1.0,batch_size=64 | 41.50 " \
           "| 42.00 |" in out
    assert "single models on test: mean 40.30, spread 0.60 (2 seeds)" in out
    assert re.search(r"CPU: .+, \d+ cores, (with|no) AMX", out)

    # Again: everything read back, nothing trained, swept or decoded twice.
    again = FakeMachine()
    recipe(again, argv)
    assert again.trained == []
    assert again.ran("sweep_decode.py") == [] and again.ran("t2t-decoder") == []
    assert "| ensemble | 4000 + 4000 | 110 | 5 |" in capsys.readouterr().out


def test_another_choice_after_the_test_was_decoded_is_refused(tmp_path, capsys):
    root = tmp_path / "r"
    argv = ["--recipe=multi30k_ende", f"--root={root}", "--seeds=1234"]
    recipe(FakeMachine(), argv)
    assert "single models on test: 40.00 (one seed: no spread)" in capsys.readouterr().out
    os.remove(root / "choose_seed1234.log")  # swept again, the sweep finds another best
    other = FakeMachine()
    other.best["seed1234"] = (5, 8, 0.6)
    with pytest.raises(ValueError, match="seed1234 was decoded on .* with .*; now the choice "
                                         "is .*The reported split is decoded once"):
        recipe(other, argv)
    assert other.ran("t2t-decoder") == []


def test_a_choice_at_the_grid_edge_stops_before_the_test_is_read(tmp_path, capsys):
    """Alpha 1.4 of 0.6,1.0,1.4 (three values, a range): the best may lie beyond it.
    Nothing is decoded on test; widened, the grid is swept again on val only."""
    root = tmp_path / "r"
    argv = ["--recipe=multi30k_ende", f"--root={root}", "--seeds=1234,2"]
    machine = FakeMachine()
    machine.best["seed2"] = (10, 5, 1.4)
    with pytest.raises(SystemExit, match=r"a choice on dev lies at the edge of the grid.*"
                                         r"seed2: alpha 1.4 is the largest of "
                                         r"--alphas=0.6,1.0,1.4.*--accept_grid_edges"):
        recipe(machine, argv)
    assert machine.ran("t2t-decoder") == [] and len(machine.ran("sweep_decode.py")) == 3

    # The same grid: the choices are read back, not swept again.
    same = FakeMachine()
    same.best["seed2"] = (10, 5, 1.4)
    with pytest.raises(SystemExit, match="edge of the grid"):
        recipe(same, argv)
    assert same.ran("sweep_decode.py") == []

    widened = FakeMachine()
    widened.best["seed2"] = (10, 5, 1.8)
    recipe(widened, argv + ["--alphas=0.6,1.0,1.4,1.8,2.2"])
    sweeps = widened.ran("sweep_decode.py")
    assert [flag(c, "alphas") for c in sweeps] == ["0.6,1.0,1.4,1.8,2.2"] * 3
    assert all(flag(c, "source").endswith("eval_dev/src") for c in sweeps)
    assert "| seed2 | 4000 | 55 | 10 | beam_size=5,alpha=1.8,batch_size=64 |" in \
        capsys.readouterr().out


def test_accept_grid_edges_decodes_with_the_edge_choice(tmp_path, capsys):
    machine = FakeMachine()
    machine.best["seed1234"] = (10, 5, 1.4)
    recipe(machine, ["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}", "--seeds=1234",
                     "--accept_grid_edges"])
    assert [flag(c, "decode_hparams") for c in machine.ran("t2t-decoder")] == [
        "beam_size=5,alpha=1.4,batch_size=64"]


def test_a_recipe_decoded_before_the_edge_rule_reads_its_figures_back(tmp_path, capsys):
    """A reported split decoded already (its settings recorded) is never stopped after:
    its figure is read back as it was."""
    argv = ["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}", "--seeds=1234"]
    machine = FakeMachine()
    machine.best["seed1234"] = (10, 5, 1.4)
    recipe(machine, argv + ["--accept_grid_edges"])
    capsys.readouterr()
    again = FakeMachine()
    recipe(again, argv)
    assert again.ran("t2t-decoder") == [] and again.ran("sweep_decode.py") == []
    assert "| seed1234 | 4000 | 55 | 10 | beam_size=5,alpha=1.4,batch_size=64 | 41.00 | 40.00 |" \
        in capsys.readouterr().out


def test_choose_only_never_reads_the_reported_split(tmp_path, capsys):
    """Recipes compared on val: trained and chosen, test neither written nor decoded
    (an edge is named, not a stop); scored later, with the choices made then."""
    argv = ["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}", "--seeds=1234,2"]
    machine = FakeMachine()
    machine.best["ensemble"] = (5, 4, 1.4)
    recipe(machine, argv + ["--choose_only"])
    assert machine.ran("t2t-decoder") == [] and machine.ran("t2t-avg-all") == []
    assert [flag(c, "eval_split") for c in machine.ran("t2t-datagen")] == ["dev"]
    out = capsys.readouterr().out
    assert "| seed1234 | 4000 | 55 | 10 | beam_size=5,alpha=1.0,batch_size=64 | 41.00 | " \
           "not read |" in out
    assert "single models on dev: mean 41.00, spread 0.00 (2 seeds)" in out
    assert "grid edge: ensemble: alpha 1.4 is the largest of --alphas=0.6,1.0,1.4" in out

    scored = FakeMachine()
    recipe(scored, argv + ["--accept_grid_edges"])
    assert scored.trained == [] and scored.ran("sweep_decode.py") == []
    assert len(scored.ran("t2t-decoder")) == 3
    assert "single models on test: mean 40.30" in capsys.readouterr().out


def test_choose_only_is_refused_where_nothing_is_chosen(tmp_path, capsys):
    with pytest.raises(SystemExit):
        recipe(FakeMachine(), ["--recipe=parsing", f"--root={tmp_path / 'p'}", "--choose_only"])
    assert "--choose_only: the parsing recipe's decoding was chosen before" in \
        capsys.readouterr().err
    assert not os.path.exists(tmp_path / "p")


def test_parsing_decodes_dev_once_with_the_decoding_the_slice_chose(tmp_path, capsys):
    machine = FakeMachine(score_line="F1 ", steps=4600)
    recipe(machine, ["--recipe=parsing", f"--root={tmp_path / 'p'}", "--seeds=1234,2"])
    assert machine.ran("sweep_decode.py") == []
    decodes = machine.ran("t2t-decoder")
    assert {flag(c, "decode_hparams") for c in decodes} == {"beam_size=10,alpha=2.0,batch_size=32"}
    assert all(flag(c, "decode_from_file").endswith("dev/eval_dev/src") for c in decodes)
    assert all(flag(c, "output_dir").endswith("_last10") for c in decodes)
    out = capsys.readouterr().out
    assert "| model | steps | training minutes | averaged | decoding | chosen before | dev |" in out
    assert "| seed2 | 4600 | 55 | 10 | beam_size=10,alpha=2.0,batch_size=32 |  | 40.60 |" in out


def test_a_changed_recipe_under_the_same_root_is_refused_before_it_trains(tmp_path):
    root = f"--root={tmp_path / 'r'}"
    recipe(FakeMachine(), ["--recipe=multi30k_ende", root, "--hparams=label_smoothing=0.2"])
    with pytest.raises(ValueError, match="--root=.*member_seed1234.lever was trained as "
                                         "translate_ende_multi30k transformer_multi30k_tiny "
                                         "\\[label_smoothing=0.2\\].* a new --root"):
        chosen_recipe.main(["--recipe=multi30k_ende", root, "--hparams=label_smoothing=0.1"],
                           train=lambda run: pytest.fail("trained a changed recipe"),
                           command=lambda command, log: pytest.fail("ran a command"))


def test_a_bad_override_is_refused_before_anything_trains(tmp_path):
    with pytest.raises(Exception, match="no_such_key"):
        chosen_recipe.main(["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}",
                            "--hparams=no_such_key=1"],
                           train=lambda run: pytest.fail("trained a bad recipe"),
                           command=lambda command, log: pytest.fail("ran a command"))


@pytest.mark.parametrize("flag, message", [
    ("--averages=5,x", "argument --averages: each value must be an int >= 1, got 'x' (in '5,x')"),
    ("--alphas=0.6,-1", "argument --alphas: each value must be a finite number >= 0, got '-1'"),
    ("--beams=", "argument --beams: each value must be an int >= 1, got ''"),
])
def test_a_bad_grid_is_refused_before_anything_trains(flag, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        chosen_recipe.main(["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}", flag],
                           train=lambda run: pytest.fail("trained on a bad grid"),
                           command=lambda command, log: pytest.fail("ran a command"))
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_a_member_that_stops_before_its_end_stops_the_recipe_with_its_log(tmp_path):
    def train(run):
        with open(run.log_path, "a") as log:
            log.write("07:01:03 step 100: loss 5.0\n")  # killed: no end line
    with pytest.raises(SystemExit, match="member_seed1234.log does not end with the time it "
                                         "trained"):
        chosen_recipe.main(["--recipe=multi30k_ende", f"--root={tmp_path / 'r'}"],
                           train=train, command=FakeMachine().command)
