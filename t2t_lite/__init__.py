"""t2t-lite: the Transformer of "Attention Is All You Need" on TF2 / Keras 3."""
import os as _os
import platform as _platform

__version__ = "0.1.0"

# TensorFlow turns its oneDNN kernels on by default only on x86 CPUs with AVX-512
# VNNI or newer (recent Intel Xeons). On AVX2 CPUs (a 2-core AMD EPYC) they train the
# small Transformer 1.1x and beam-search it 1.5x faster than TensorFlow's own
# kernels (docs/SPEED.md), so they are on wherever t2t_lite is imported before
# TensorFlow; TF_ENABLE_ONEDNN_OPTS=0 still turns them off.
if _platform.machine().lower() in ("x86_64", "amd64"):
    _os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
