"""t2t-lite: the Transformer and its seq2seq ancestors on TensorFlow 2 / Keras 3.

The top-level folders problems/, hparams/ and bin/ are installed inside the
t2t_lite namespace (t2t_lite.problems, t2t_lite.hparams, t2t_lite.bin) so that
no generic module name lands in site-packages.
"""
from setuptools import find_packages, setup

CORE = find_packages(include=["t2t_lite", "t2t_lite.*"])
MAPPED = {"t2t_lite.problems": "problems", "t2t_lite.hparams": "hparams",
          "t2t_lite.bin": "bin"}

setup(
    name="t2t-lite",
    version="0.1.0",
    description="Tensor2Tensor's Transformer and seq2seq models on TF2 / Keras 3",
    python_requires=">=3.11",
    packages=CORE + list(MAPPED),
    package_dir={"t2t_lite": "t2t_lite", **MAPPED},
    install_requires=[
        "tensorflow==2.21.*",
        "keras>=3.12",
        "tensorboard",  # tf.summary needs it; tensorflow 2.21 no longer pulls it in
        "tensorflow-text==2.21.*",
        "tensorflow-datasets>=4.9",
        "importlib_resources",  # tensorflow-datasets 4.9.10 imports it to download, undeclared
        "sacrebleu>=2.4",
        # The paper's tokenized BLEU needs Moses' tokenizer exactly, with its
        # nonbreaking-prefix lists: sacremoses is the maintained Python port.
        "sacremoses>=0.1",
        "sentencepiece>=0.2",
        "numpy",
        "matplotlib>=3.8",  # t2t-attention's heatmaps
        "tqdm>=4.60",  # progress bars on a terminal (tensorflow-datasets needs it already)
    ],
    # Hypothesis: the property-based fuzzer of every command (tests/test_fuzz_commands.py);
    # pytest-xdist: the suite on both cores (pyproject.toml's addopts); ctranslate2: the
    # test that a CTranslate2 export decodes as t2t-decoder (tests/test_ctranslate2_export.py).
    # ctranslate2 alone: t2t-exporter --format=ctranslate2 (its spec API, no PyTorch).
    extras_require={
        "test": ["pytest>=8", "hypothesis>=6.100", "pytest-xdist>=3.5", "ctranslate2>=4.8"],
        "ctranslate2": ["ctranslate2>=4.8"],
    },
    entry_points={"console_scripts": [
        "t2t-trainer=t2t_lite.bin.t2t_trainer:main",
        "t2t-datagen=t2t_lite.bin.t2t_datagen:main",
        "t2t-decoder=t2t_lite.bin.t2t_decoder:main",
        "t2t-bleu=t2t_lite.bin.t2t_bleu:main",
        "t2t-avg-all=t2t_lite.bin.t2t_avg_all:main",
        "t2t-parse-eval=t2t_lite.bin.t2t_parse_eval:main",
        "t2t-attention=t2t_lite.bin.t2t_attention:main",
        "t2t-exporter=t2t_lite.bin.t2t_exporter:main",
    ]},
)
