"""Where a command may write (t2t_lite/output_paths.py): outputs never destroy an input,
a run, or a user's file; a re-run replaces its own output; two writers of one output
are refused."""
import os
import time

import pytest

from t2t_lite.output_manifest import own_file
from t2t_lite.output_paths import OutputPathError, Paths


def write(path, text="x\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def produce(paths, flag, path, text="out\n"):
    with paths.output_file(flag, str(path)) as target:
        write(target, text)


def test_an_output_is_never_an_input_even_through_a_link(tmp_path):
    source = write(tmp_path / "in.txt")
    os.symlink(source, tmp_path / "link.txt")
    paths = Paths("t2t-decoder")
    paths.input_file("--decode_from_file", source)
    for target in (source, str(tmp_path / "link.txt")):
        with pytest.raises(OutputPathError, match="also read as --decode_from_file"):
            produce(paths, "--decode_to_file", target)
    assert open(source).read() == "x\n"


def test_no_output_inside_a_run_folder(tmp_path):
    write(tmp_path / "run" / "hparams.json", "{}")
    with pytest.raises(OutputPathError, match="inside the run folder"):
        produce(Paths("t2t-decoder"), "--decode_to_file", tmp_path / "run" / "out.txt")
    with pytest.raises(OutputPathError, match="inside the run folder"):
        with Paths("t2t-attention").output_folder("--to", str(tmp_path / "run" / "pics")):
            pass
    assert sorted(os.listdir(tmp_path / "run")) == ["hparams.json"]


def test_a_rerun_replaces_its_own_output_but_never_a_users_file(tmp_path):
    target = tmp_path / "out.txt"
    produce(Paths("t2t-decoder"), "--decode_to_file", target, "first\n")
    assert own_file(str(target), "t2t-decoder") and not own_file(str(target), "t2t-bleu")
    produce(Paths("t2t-decoder"), "--decode_to_file", target, "second\n")
    assert target.read_text() == "second\n"
    time.sleep(0.01)
    target.write_text("edited by hand\n")  # no longer the decoder's output
    with pytest.raises(OutputPathError, match="was not written by t2t-decoder"):
        produce(Paths("t2t-decoder"), "--decode_to_file", target)
    notes = write(tmp_path / "notes.txt", "mine\n")
    with pytest.raises(OutputPathError, match="was not written by t2t-decoder"):
        produce(Paths("t2t-decoder"), "--decode_to_file", notes)
    assert target.read_text() == "edited by hand\n" and open(notes).read() == "mine\n"


def test_a_second_writer_of_one_output_is_refused_while_the_first_writes(tmp_path):
    target = str(tmp_path / "out.txt")
    with Paths("t2t-decoder").output_file("--decode_to_file", target):
        with pytest.raises(OutputPathError, match="is being written by pid"):
            produce(Paths("t2t-decoder"), "--decode_to_file", target)
    produce(Paths("t2t-decoder"), "--decode_to_file", target)  # released
    assert sorted(os.listdir(tmp_path)) == [".t2t-lite-outputs.json", "out.txt"]


def test_wrong_kinds_name_the_flag(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    file = write(tmp_path / "file.txt")
    paths = Paths("t2t-bleu")
    with pytest.raises(OutputPathError, match="--reference=.* is a folder; give a file"):
        paths.input_file("--reference", str(folder))
    with pytest.raises(OutputPathError, match="--translation=.*: no such file"):
        paths.input_file("--translation", str(tmp_path / "absent"))
    with pytest.raises(OutputPathError, match="--decode_to_file=.* is a folder"):
        produce(Paths("t2t-decoder"), "--decode_to_file", folder)
    with pytest.raises(OutputPathError, match="is a file, not a folder"):
        produce(Paths("t2t-decoder"), "--decode_to_file", os.path.join(file, "child"))
    with pytest.raises(OutputPathError, match="--to=.* is a file; give a folder"):
        with Paths("t2t-attention").output_folder("--to", file):
            pass


def test_a_folder_output_replaces_its_own_earlier_one_whole(tmp_path):
    folder = str(tmp_path / "pictures")
    with Paths("t2t-attention").output_folder("--to", folder, replaces_own=True) as staging:
        write(os.path.join(staging, "a.png"))
        write(os.path.join(staging, "old.png"))
    with Paths("t2t-attention").output_folder("--to", folder, replaces_own=True) as staging:
        assert not os.path.exists(os.path.join(folder, ".nothing"))
        write(os.path.join(staging, "a.png"), "new\n")
    assert sorted(os.listdir(folder)) == [".t2t-lite-outputs.json", "a.png"]
    # Another command's output, a user's folder, a failed write: refused or untouched.
    with pytest.raises(OutputPathError, match="holds files t2t-exporter did not write"):
        with Paths("t2t-exporter").output_folder("--export_dir", folder):
            pass
    write(os.path.join(folder, "mine.txt"))
    with pytest.raises(OutputPathError, match="did not write"):
        with Paths("t2t-attention").output_folder("--to", folder, replaces_own=True):
            pass
    with pytest.raises(RuntimeError):
        with Paths("t2t-attention").output_folder("--to", str(tmp_path / "new")) as staging:
            write(os.path.join(staging, "half.png"))
            raise RuntimeError("the command failed half-way")
    assert sorted(os.listdir(tmp_path)) == ["pictures"]


def test_an_average_replaces_only_an_average_of_the_same_run(tmp_path):
    folder = str(tmp_path / "avg")
    with Paths("t2t-avg-all").output_folder("--output_dir", folder, replaces_own=True,
                                            model_dir="/runs/a") as staging:
        write(os.path.join(staging, "checkpoint"))  # an average is a run folder
    with Paths("t2t-avg-all").output_folder("--output_dir", folder, replaces_own=True,
                                            model_dir="/runs/a") as staging:
        write(os.path.join(staging, "checkpoint"))
    with pytest.raises(OutputPathError, match="another output of it"):
        with Paths("t2t-avg-all").output_folder("--output_dir", folder, replaces_own=True,
                                                model_dir="/runs/b"):
            pass


def test_the_trainer_takes_new_empty_or_run_folders_only(tmp_path):
    paths = Paths("t2t-trainer")
    assert paths.run_folder("--output_dir", str(tmp_path / "new"))
    write(tmp_path / "killed_at_once" / ".trainer.lock", "pid 1")  # a lock, no run yet
    assert paths.run_folder("--output_dir", str(tmp_path / "killed_at_once"))
    write(tmp_path / "run" / "hparams.json", "{}")
    assert paths.run_folder("--output_dir", str(tmp_path / "run"))
    write(tmp_path / "home" / "thesis.tex")
    with pytest.raises(OutputPathError, match="holds files t2t-trainer did not write"):
        paths.run_folder("--output_dir", str(tmp_path / "home"))
    with pytest.raises(OutputPathError, match="inside the run folder"):
        paths.run_folder("--output_dir", str(tmp_path / "run" / "sub"))
    with Paths("t2t-attention").output_folder("--to", str(tmp_path / "pics")) as staging:
        write(os.path.join(staging, "a.png"))
    with pytest.raises(OutputPathError, match="holds the output of t2t-attention"):
        paths.run_folder("--output_dir", str(tmp_path / "pics"))


def test_an_empty_path_or_the_current_folder_is_never_an_output(tmp_path, monkeypatch):
    """An empty --output_dir once meant the current folder to one call and nothing to
    another: t2t-avg-all replaced the folder it ran in (found by the fuzzer)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "work.txt")
    for flag, path in (("--output_dir", ""), ("--to", "  ")):
        with pytest.raises(OutputPathError, match=f"{flag} is empty"):
            with Paths("t2t-avg-all").output_folder(flag, path):
                pass
    with pytest.raises(OutputPathError, match="--decode_to_file is empty"):
        produce(Paths("t2t-decoder"), "--decode_to_file", "")
    with pytest.raises(OutputPathError, match="--reference is empty"):
        Paths("t2t-bleu").input_file("--reference", "")
    with Paths("t2t-attention").output_folder("--to", str(tmp_path / "pics")) as staging:
        write(os.path.join(staging, "a.png"))
    monkeypatch.chdir(tmp_path / "pics")
    with pytest.raises(OutputPathError, match="holds the current folder"):
        with Paths("t2t-attention").output_folder("--to", ".", replaces_own=True):
            pass
    assert sorted(os.listdir(tmp_path)) == ["pics", "work.txt"]


def test_a_work_folder_is_new_empty_or_the_same_scripts_to_resume(tmp_path):
    root = str(tmp_path / "family")
    assert Paths("seq2seq_family").work_folder("--root", root) == root
    write(os.path.join(root, "results.json"), "{}")
    # The same script resumes its folder; another command, or a user's folder, is refused.
    assert Paths("seq2seq_family").work_folder("--root", root) == root
    with pytest.raises(OutputPathError, match="did not start"):
        Paths("speed_table").work_folder("--root", root)
    mine = write(tmp_path / "mine" / "table.md", "my notes\n")
    with pytest.raises(OutputPathError, match="holds files seq2seq_family did not start"):
        Paths("seq2seq_family").work_folder("--root", str(tmp_path / "mine"))
    write(tmp_path / "run" / "hparams.json", "{}")
    with pytest.raises(OutputPathError, match="inside the run folder"):
        Paths("seq2seq_family").work_folder("--root", str(tmp_path / "run" / "family"))
    with pytest.raises(OutputPathError, match="is a file"):
        Paths("seq2seq_family").work_folder("--root", mine)
    assert open(mine).read() == "my notes\n"
    assert sorted(os.listdir(tmp_path / "mine")) == ["table.md"]


def test_an_empty_folder_another_command_marked_becomes_the_work_folders(tmp_path):
    root = str(tmp_path / "root")
    Paths("speed_table").work_folder("--root", root)  # started, then left empty
    assert Paths("seq2seq_family").work_folder("--root", root) == root
    write(os.path.join(root, "results.json"), "{}")
    assert Paths("seq2seq_family").work_folder("--root", root) == root
    with pytest.raises(OutputPathError, match="speed_table did not start"):
        Paths("speed_table").work_folder("--root", root)


def test_a_link_at_the_output_is_followed_never_replaced(tmp_path):
    """A dangling link's target is written; the link stays a link to it."""
    os.symlink("gone.txt", tmp_path / "link.txt")
    produce(Paths("t2t-decoder"), "--decode_to_file", tmp_path / "link.txt")
    assert os.path.islink(tmp_path / "link.txt")
    assert open(tmp_path / "gone.txt").read() == "out\n"
    produce(Paths("t2t-decoder"), "--decode_to_file", tmp_path / "link.txt", "again\n")
    assert os.path.islink(tmp_path / "link.txt")
    assert open(tmp_path / "gone.txt").read() == "again\n"


def test_dot_dot_after_a_link_is_taken_from_the_links_target(tmp_path):
    """links/up/../notes.txt is files/notes.txt to the OS (not links/notes.txt)."""
    notes = write(tmp_path / "files" / "notes.txt", "a user's notes\n")
    os.makedirs(tmp_path / "files" / "sub")
    os.makedirs(tmp_path / "links")
    os.symlink("../files/sub", tmp_path / "links" / "up")
    with pytest.raises(OutputPathError, match="files/notes.txt\\) exists and was not written"):
        produce(Paths("t2t-decoder"), "--decode_to_file",
                f"{tmp_path}/links/up/../notes.txt")
    assert open(notes).read() == "a user's notes\n"
    assert not os.path.exists(tmp_path / "links" / "notes.txt")


@pytest.mark.parametrize("path", ["~/out.txt", "~", "~user/out.txt"])
def test_a_literal_tilde_is_refused_with_the_hint(path):
    with pytest.raises(OutputPathError, match="literal ~, which the shell left unexpanded"):
        produce(Paths("t2t-decoder"), "--decode_to_file", path)


def test_a_missing_folder_is_refused_before_the_work(tmp_path):
    with pytest.raises(OutputPathError, match="does not exist; create it first"):
        with Paths("t2t-decoder").output_file("--decode_to_file",
                                              str(tmp_path / "nodir" / "out.txt")):
            raise AssertionError("the work started")
    assert not os.path.exists(tmp_path / "nodir")
    with Paths("t2t-datagen").output_file("--eval_files_dir", str(tmp_path / "new" / "a.txt"),
                                          new_folder=True) as target:
        write(target)  # a file in a folder the command makes
    assert os.path.isfile(tmp_path / "new" / "a.txt")


def test_streams_and_dangling_folders_are_refused(tmp_path):
    with pytest.raises(OutputPathError, match="is not a regular file"):
        produce(Paths("t2t-decoder"), "--decode_to_file", "/dev/stdout")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OutputPathError, match="is not a regular file"):
        produce(Paths("t2t-decoder"), "--decode_to_file", tmp_path / "fifo")
    os.symlink("nowhere", tmp_path / "dangling")
    with pytest.raises(OutputPathError, match="is a link to nowhere, which does not exist"):
        Paths("t2t-trainer").run_folder("--output_dir", str(tmp_path / "dangling"))
