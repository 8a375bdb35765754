"""Decoding files of any size: windows, an interrupted decode resumed, shards merged,
batches counted in tokens (t2t_lite/decoding/file_decoding.py, kept_windows.py)."""
import os

import numpy as np
import pytest

from cli_helpers import USR_DIR, error_of, train_tiny
from t2t_lite.bin import t2t_decoder
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.decoding.decoder import decode_lines
from t2t_lite.decoding.file_decoding import Shard, decode_file, keeps_windows, merge_shards
from t2t_lite.decoding.search_options import SearchOptions
from decode_stand_ins import ReversingSearch, decoding, settings

LINES = [f"line {'x' * (i % 7)} {i}" if i % 5 else "" for i in range(23)]
IDENTITY = {"checkpoints": ["abc"], "vocabulary": {"problem": "p"}}


def write_input(tmp_path, lines=LINES):
    path = tmp_path / "in.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


class InterruptedSearch(ReversingSearch):
    """Stops (as Ctrl-C does) on its ``stop_on_call``-th call; records line numbers."""

    def __init__(self, stop_on_call=-1):
        super().__init__()
        self.stop_on_call, self.line_numbers = stop_on_call, []

    def __call__(self, inputs, max_decode_length, line_numbers=None):
        if len(self.calls) == self.stop_on_call:
            raise KeyboardInterrupt
        self.line_numbers += list(line_numbers)
        return super().__call__(inputs, max_decode_length, line_numbers)


WINDOWED = "batch_size=2,read_window_lines=5"


def decode_part(source, out, identity, shard):
    return decode_file(source, shard.part_path(out), decoding(ReversingSearch(), WINDOWED),
                       identity, shard)


def test_a_file_is_decoded_window_by_window_in_input_order(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    search = InterruptedSearch()
    done = decode_file(source, out, decoding(search, WINDOWED), IDENTITY)
    whole = decode_lines(LINES, decoding(ReversingSearch(), "batch_size=2"))
    assert open(out, encoding="utf-8").read() == "".join(line + "\n" for line in whole)
    assert (done.lines, done.decoded, done.kept_windows) == (23, 23, 0)
    # Each batch holds lines of one window only (memory holds one window), and each
    # search sees its lines' numbers in the whole file (sampling's seeds).
    windows_of_calls = [{n // 5 for n in numbers} for numbers in
                        np.split(np.asarray(search.line_numbers),
                                 np.cumsum([len(c[0]) for c in search.calls])[:-1])]
    assert all(len(windows) == 1 for windows in windows_of_calls)
    assert sorted(search.line_numbers) == [i for i, line in enumerate(LINES) if line]
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.txt"]  # the windows went


def test_an_interrupted_decode_goes_on_from_its_kept_windows(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    uninterrupted = str(tmp_path / "whole.txt")
    decode_file(source, uninterrupted, decoding(ReversingSearch(), WINDOWED), IDENTITY)
    # 3 of window 0's 4 texts, then 2 batches of window 1: windows 0 is kept.
    with pytest.raises(KeyboardInterrupt):
        decode_file(source, out, decoding(InterruptedSearch(stop_on_call=3), WINDOWED),
                    IDENTITY)
    assert not os.path.exists(out)
    assert sorted(os.listdir(out + ".windows")) == ["0000000.json", "0000000.txt",
                                                   "manifest.json"]
    search = InterruptedSearch()
    done = decode_file(source, out, decoding(search, WINDOWED), IDENTITY)
    assert open(out, "rb").read() == open(uninterrupted, "rb").read()
    assert (done.decoded, done.kept_windows) == (18, 1)
    assert min(search.line_numbers) == 6  # nothing of window 0 decoded again (5 is blank)
    assert not os.path.exists(out + ".windows")


@pytest.mark.parametrize("change, says", [
    (dict(overrides="batch_size=2,read_window_lines=5,beam_size=2"), "another settings"),
    (dict(identity={**IDENTITY, "checkpoints": ["def"]}), "another checkpoints"),
    (dict(lines=["other"] + LINES[1:]), r"window 0 \(lines 1-5\) of another input"),
])
def test_kept_windows_of_another_decode_are_refused(tmp_path, change, says):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    with pytest.raises(KeyboardInterrupt):
        decode_file(source, out, decoding(InterruptedSearch(stop_on_call=4), WINDOWED),
                    IDENTITY)
    if "lines" in change:
        write_input(tmp_path, change["lines"])
    search = InterruptedSearch()
    with pytest.raises(ValueError, match=f"out.txt.windows holds .*{says}.*remove the "
                                         "folder to start over"):
        decode_file(source, out, decoding(search, change.get("overrides", WINDOWED)),
                    change.get("identity", IDENTITY))
    assert search.calls == [] and not os.path.exists(out)


def test_a_folder_in_the_way_of_the_windows_is_refused(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    os.makedirs(out + ".windows")
    (tmp_path / "out.txt.windows" / "mine.txt").write_text("a user's file")
    with pytest.raises(ValueError, match="t2t-decoder did not write it"):
        decode_file(source, out, decoding(ReversingSearch(), WINDOWED), IDENTITY)
    assert os.listdir(out + ".windows") == ["mine.txt"]


def test_one_window_keeps_nothing_and_a_library_call_without_identity_neither(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    for overrides, identity in (("batch_size=2", IDENTITY), (WINDOWED, None)):
        with pytest.raises(KeyboardInterrupt):
            decode_file(source, out, decoding(InterruptedSearch(stop_on_call=5), overrides),
                        identity)
        assert sorted(os.listdir(tmp_path)) == ["in.txt"]
    assert keeps_windows(23, settings(WINDOWED)) and not keeps_windows(5, settings(WINDOWED))
    assert not keeps_windows(23, settings(WINDOWED), Shard(0, 5))  # one window each


def test_shards_merged_are_one_process_output_byte_for_byte(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    decode_file(source, str(tmp_path / "whole.txt"), decoding(ReversingSearch(), WINDOWED),
                IDENTITY)
    parts = []
    for index in range(3):
        done = decode_part(source, out, IDENTITY, Shard(index, 3))
        parts.append((os.path.basename(done.output_path), done.lines))
    # 5 windows (4 of 5 lines, 1 of 3) as runs of consecutive windows: 1, 2, 2.
    assert parts == [("out.txt.shard-0-of-3", 5), ("out.txt.shard-1-of-3", 10),
                     ("out.txt.shard-2-of-3", 8)]
    assert merge_shards(source, out, IDENTITY, settings(WINDOWED), 3) == 23
    assert open(out, "rb").read() == (tmp_path / "whole.txt").read_bytes()


def test_a_missing_changed_or_stale_part_is_refused_by_the_merge(tmp_path):
    source, out = write_input(tmp_path), str(tmp_path / "out.txt")
    for index in (0, 2):
        decode_part(source, out, IDENTITY, Shard(index, 3))
    with pytest.raises(ValueError, match=r"1 of the 3 parts are not decoded yet "
                                         r"\(.*out.txt.shard-1-of-3\): run --worker_id=1"):
        merge_shards(source, out, IDENTITY, settings(WINDOWED), 3)
    decode_part(source, out, {**IDENTITY, "checkpoints": ["newer"]}, Shard(1, 3))
    with pytest.raises(ValueError, match=r"shard-1-of-3 was decoded with another "
                                         r"checkpoints .*--worker_id=1"):
        merge_shards(source, out, IDENTITY, settings(WINDOWED), 3)
    decode_part(source, out, IDENTITY, Shard(1, 3))
    with open(out + ".shard-2-of-3", "a") as f:
        f.write("an edit\n")
    with pytest.raises(ValueError, match=r"shard-2-of-3 was changed since"):
        merge_shards(source, out, IDENTITY, settings(WINDOWED), 3)
    decode_part(source, out, IDENTITY, Shard(2, 3))
    write_input(tmp_path, LINES[:-1] + ["changed"])
    with pytest.raises(ValueError, match=r"shard-2-of-3 was decoded from other lines"):
        merge_shards(source, out, IDENTITY, settings(WINDOWED), 3)
    assert not os.path.exists(out)


def test_part_names_keep_gz_last_and_worker_ids_are_checked():
    assert Shard(3, 12).part_path("o/out.de.gz") == "o/out.de.shard-03-of-12.gz"
    assert Shard(0, 1).part_path("out.txt") == "out.txt"
    with pytest.raises(ValueError, match=r"--worker_id=4: must be in 0 \.\. 3"):
        Shard(4, 4)


def test_batches_counted_in_tokens_hold_lines_times_longest_within_the_count():
    search = ReversingSearch()
    lines = ["a" * 9, "b" * 7, "c" * 7, "dd", "ee", "ff", "g"]  # ids: 10, 8, 8, 3, 3, 3, 2
    outputs = decode_lines(lines, decoding(search, "batch_size=20,batch_type=tokens"))
    assert outputs == [line[::-1] for line in lines]
    assert [call[0].shape for call in search.calls] == [(2, 10), (2, 8), (3, 3)]
    search = ReversingSearch()
    decode_lines(["a" * 30], decoding(search, "batch_size=20,batch_type=tokens"))
    assert [call[0].shape for call in search.calls] == [(1, 31)]  # one line at least
    # Under XLA a batch has the rows its padded length allows: few shapes.
    search = ReversingSearch()
    decode_lines(lines, decoding(search, "batch_size=32,batch_type=tokens,length_bucket=8",
                                 xla=True))
    assert [call[0].shape for call in search.calls] == [(2, 16), (4, 8), (4, 8)]
    assert search.calls[2][0][1:, 0].tolist() == [EOS_ID] * 3  # filler rows


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("decode_at_scale"))


def test_the_decoder_shards_a_file_and_merges_the_parts(trained, tmp_path, capsys):
    _, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{'0 1 ' * (i % 4)}1\n" for i in range(12)))
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
           f"--decode_from_file={source}", "--decode_hparams=beam_size=2,read_window_lines=4"]
    assert t2t_decoder.main(run + [f"--decode_to_file={tmp_path}/whole.txt"]) == 0
    for worker in (0, 1):
        assert t2t_decoder.main(run + [f"--decode_to_file={tmp_path}/out.txt",
                                       "--decode_shards=2", f"--worker_id={worker}"]) == 0
    assert "--merge_shards in place of --worker_id" in capsys.readouterr().out
    assert t2t_decoder.main(run + [f"--decode_to_file={tmp_path}/out.txt",
                                   "--decode_shards=2", "--merge_shards"]) == 0
    assert (tmp_path / "out.txt").read_bytes() == (tmp_path / "whole.txt").read_bytes()
    # Another model's settings than the parts': refused by name.
    error = error_of(capsys, t2t_decoder.main, [
        *run[:-1], "--decode_hparams=beam_size=3,read_window_lines=4",
        f"--decode_to_file={tmp_path}/out.txt", "--decode_shards=2", "--merge_shards"])
    assert "shard-0-of-2 was decoded with another settings" in error


@pytest.mark.parametrize("flags, says", [
    (["--worker_id=1"], "--worker_id acts only with --decode_shards=N (N > 1)"),
    (["--decode_shards=2", "--worker_id=2"], "--worker_id=2: must be in 0 .. 1"),
    (["--decode_shards=2", "--decode_interactive"], "--decode_shards=2 splits"),
    (["--decode_shards=2", "--decode_reference=REF"], "give it with --merge_shards"),
])
def test_sharding_flags_that_cannot_work_say_why(capsys, tmp_path, flags, says):
    (tmp_path / "in.txt").write_text("1\n")
    (tmp_path / "REF").write_text("1\n")
    flags = [flag.replace("REF", str(tmp_path / "REF")) for flag in flags]
    source = [] if "--decode_interactive" in flags else [f"--decode_from_file={tmp_path}/in.txt"]
    try:
        error = error_of(capsys, t2t_decoder.main, ["--output_dir=nowhere", *source, *flags])
    except SystemExit as exit_:  # the flag parser's own refusals
        assert exit_.code == 2
        error = capsys.readouterr().err
    assert says in error


def test_tensor2tensors_presplit_inputs_get_one_line(capsys, tmp_path):
    (tmp_path / "in.txt01").write_text("1\n")
    error = error_of(capsys, t2t_decoder.main, [
        "--output_dir=nowhere", f"--decode_from_file={tmp_path}/in.txt", "--decode_shards=4",
        "--worker_id=1"])
    assert "tensor2tensor read parts split beforehand" in error and "in.txt01" in error


class ForgetfulSearch(ReversingSearch):
    """ReversingSearch that keeps no record of its calls (their inputs would grow)."""

    def __call__(self, inputs, max_decode_length, line_numbers=None):
        outputs = super().__call__(inputs, max_decode_length, line_numbers)
        self.calls.clear()
        return outputs


def test_memory_holds_one_window_whatever_the_files_length(tmp_path):
    import tracemalloc
    peaks = []
    sizes = (2_000, 20_000)
    for lines in sizes:
        # Every window the same lengths: any growth is what the decode keeps.
        source = write_input(tmp_path, [f"{'ab ' * (i % 25)}{i % 1000:03d}"
                                        for i in range(lines)])
        tracemalloc.start()
        decode_file(source, str(tmp_path / f"out{lines}.txt"),
                    decoding(ForgetfulSearch(), "batch_size=64,read_window_lines=1000,"
                                                "parallel_batches=2"),
                    IDENTITY)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # A line held would take over 100 bytes (its text alone); what grows is the
    # windows' index (~300 bytes a window) and the searches' timing on threads.
    per_line = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0])
    assert per_line < 50, peaks


def test_samples_and_beams_through_windows_and_shards_are_one_processes(tmp_path):
    """Every beam with its score (return_beams, write_beam_scores) and num_samples
    samples go through windows and shards as through one process; samples are drawn
    by line number, so the windows change none of them either."""
    from t2t_lite.data.encoders import ByteTextEncoder
    from t2t_lite.decoding.factory import Decoding
    from t2t_lite.decoding.input_rules import InputRules
    from t2t_lite.decoding.search_decoder import BeamSearchDecoder
    from toy_models import ToyRecurrentModel

    model = ToyRecurrentModel(ByteTextEncoder().vocab_size, seed=1)
    lines = LINES[:12]
    source = write_input(tmp_path, lines)

    def real(overrides):
        chosen = settings(overrides + ",read_window_lines=4")
        search = BeamSearchDecoder(model, SearchOptions(beam_size=chosen.beam_size,
                                                        sampling=chosen.sampling))
        return Decoding(search, chosen, InputRules(0, None), ByteTextEncoder(),
                        ByteTextEncoder())

    sampling = "sampling_method=random,beam_size=1,num_samples=2,extra_length=3"
    beams = "beam_size=2,return_beams=true,write_beam_scores=true,extra_length=3"
    for overrides, tabs in ((sampling, 1), (beams, 3)):
        one, out = str(tmp_path / "one.txt"), str(tmp_path / "out.txt")
        decode_file(source, one, real(overrides), IDENTITY)
        for index in range(2):
            shard = Shard(index, 2)
            decode_file(source, shard.part_path(out), real(overrides), IDENTITY, shard)
        merge_shards(source, out, IDENTITY, real(overrides).settings, 2)
        written = open(out, encoding="utf-8").read().splitlines()
        assert open(out, "rb").read() == open(one, "rb").read(), overrides
        assert [line.count("\t") for line in written] == [
            tabs if given.strip() else 0 for given in lines]
        if overrides == sampling:
            assert written == decode_lines(lines, real(sampling))  # one batch of 12


def test_batches_searched_at_once_write_what_one_at_a_time_writes(trained, tmp_path):
    _, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{'0 1 ' * (i % 5)}1 0\n" for i in range(30)))
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
           f"--decode_from_file={source}"]
    for at_once in (1, 3):
        assert t2t_decoder.main(run + [
            f"--decode_to_file={tmp_path}/out{at_once}.txt",
            f"--decode_hparams=beam_size=2,batch_size=4,parallel_batches={at_once}"]) == 0
    assert (tmp_path / "out1.txt").read_bytes() == (tmp_path / "out3.txt").read_bytes()


def test_how_many_batches_at_once_is_no_part_of_what_kept_windows_must_match(tmp_path):
    source = write_input(tmp_path)
    out = str(tmp_path / "out.txt")
    with pytest.raises(KeyboardInterrupt):
        decode_file(source, out, decoding(InterruptedSearch(stop_on_call=4),
                                          WINDOWED + ",parallel_batches=1"), IDENTITY)
    search = InterruptedSearch()
    done = decode_file(source, out, decoding(search, WINDOWED + ",parallel_batches=2"),
                       IDENTITY)
    assert done.kept_windows > 0 and done.decoded < len(LINES)


def test_searches_on_threads_run_at_most_two_a_thread_ahead_of_the_writing():
    """A window whose writing lags its searches holds a few results, not all."""
    import threading
    import time
    from decode_stand_ins import ENCODER

    class CountingSearch(ReversingSearch):
        def __init__(self):
            super().__init__()
            self.started, self.lock = 0, threading.Lock()

        def __call__(self, inputs, max_decode_length, line_numbers=None):
            with self.lock:
                self.started += 1
            return super().__call__(inputs, max_decode_length, line_numbers)

    search, started_at_each_write = CountingSearch(), []

    class SlowWriting(type(ENCODER)):
        def decode(self, ids):
            started_at_each_write.append(search.started)
            time.sleep(0.01)  # the searches, meanwhile, could all run
            return super().decode(ids)

    lines = [str(i) for i in range(20)]
    written = decode_lines(lines, decoding(search, "batch_size=1,parallel_batches=2",
                                           target_encoder=SlowWriting()))
    assert written == [line[::-1] for line in lines]
    assert all(started <= written_before + 5  # it, 2 running, 2 waiting a thread
               for written_before, started in enumerate(started_at_each_write)), (
        started_at_each_write)


@pytest.mark.parametrize("cores, at_once, threads", [
    (2, 0, (1, 2)), (8, 0, (2, 4)), (1, 0, (0, 0)), (4, 1, (0, 0)), (4, 3, (1, 3))])
def test_batches_at_once_share_the_cores_out(monkeypatch, cores, at_once, threads):
    from t2t_lite.decoding import settings as settings_module
    monkeypatch.setattr(settings_module, "available_cores", lambda: cores)
    assert settings(f"parallel_batches={at_once}").parallel_threads == threads
