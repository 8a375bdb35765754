"""What importing t2t_lite sets for the process before TensorFlow starts: oneDNN's
kernels on x86 unless the user chose (the suite itself runs without them: conftest.py)."""
import os
import platform
import subprocess
import sys

import pytest

SHOW = "import os, t2t_lite; print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'))"


def onednn_after_import(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if value is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = value
    return subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="t2t_lite turns oneDNN on only on x86 CPUs")
def test_importing_t2t_lite_turns_onednn_on_unless_the_user_chose():
    assert onednn_after_import(None) == "1"
    assert onednn_after_import("0") == "0"
