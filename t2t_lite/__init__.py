"""t2t-lite: the Transformer of "Attention Is All You Need" on TF2 / Keras 3."""
__version__ = "0.1.0"
