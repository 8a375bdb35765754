"""Test-session setup: two logical CPU devices, so MirroredStrategy can be tested
without GPUs (this must happen before TensorFlow initialises its devices); the
fixtures tests share (their builders are in toys.py)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One core a worker (pyproject.toml runs two): tiny models gain nothing from a
    # second op thread, and two workers' threads fighting over two cores lose time.
    # TensorFlow reads these in this process and in the commands tests start.
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# TensorFlow's own kernels, not oneDNN's (which t2t_lite turns on for x86 users:
# tests/test_package_defaults.py): the tests' models are tiny, where oneDNN's set-up per
# op costs more than it saves. Side by side on a 2-core AMD EPYC, tests of training and
# decoding took 10-20% less CPU without it (e.g. four of test_trainer.py's, 67 s to 72-80 s).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from t2t_lite.bin import common  # noqa: E402  (t2t_lite before TensorFlow: its kernel choice)

# Quietly, as the commands start it: pytest's controller prints what its own
# start-up wrote to stderr when the run ends (TensorFlow's device probing, a cuInit
# error on a machine without a GPU), after the summary.
common.start_tensorflow(verbosity=0)
import tensorflow as tf  # noqa: E402

from t2t_lite.training.distribute import split_cpu  # noqa: E402

split_cpu(2)


import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import toys  # noqa: E402
from cli_helpers import usr_dir_imports  # noqa: E402

# The fuzzer's profiles (tests/test_fuzz_commands.py): "ci", fixed draws of about a
# minute, is the default; pytest --hypothesis-profile=long draws ten times as many, at
# random.
settings.register_profile("ci", derandomize=True, deadline=None, max_examples=100,
                          suppress_health_check=list(HealthCheck), database=None)
settings.register_profile("long", deadline=None, max_examples=1000,
                          suppress_health_check=list(HealthCheck))
settings.load_profile("ci")


@pytest.fixture(scope="session")
def two_cpu_strategy() -> tf.distribute.MirroredStrategy:
    """One MirroredStrategy over the two logical CPUs for the whole session: a second
    one over the same devices in one process reuses collective instance keys, and
    TensorFlow aborts its first all-reduce with a "Shape mismatch in the collective"."""
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


@pytest.fixture(scope="session")
def fuzz_template(tmp_path_factory) -> str:
    """The workspace every fuzzer draw copies (tests/fuzz_runner.py), built once a
    session for both fuzzer modules."""
    from fuzz_runner import build_workspace
    return build_workspace(tmp_path_factory.mktemp("fuzz_template"))


@pytest.fixture(scope="session")
def reverse_data(tmp_path_factory) -> str:
    """toys.SmallReverse's data dir, generated once a session (tests only read it)."""
    return toys.generated_data(toys.SmallReverse(), str(tmp_path_factory.mktemp("reverse")))


@pytest.fixture(scope="session")
def copy_data(tmp_path_factory) -> str:
    """toys.ShortCopy's data dir, generated once a session (tests only read it)."""
    return toys.generated_data(toys.ShortCopy(), str(tmp_path_factory.mktemp("copy")))


@pytest.fixture
def usr_dir_import():
    """``registry.import_usr_dir`` whose registrations, modules and ``sys.path`` entry
    are gone after the test (cli_helpers.usr_dir_imports)."""
    with usr_dir_imports() as import_usr_dir:
        yield import_usr_dir


def pytest_collection_modifyitems(items: list) -> None:
    """The slow tests first: two workers stealing work then end at about one time,
    instead of one worker starting the longest test as the other runs out."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
