"""One step of a tiny Transformer on a fixed global batch, under whatever strategy
TF_CONFIG gives (make_strategy), its weights saved to an .npz: run as a script by each
worker of tests/test_multi_worker.py, and called in the test's own process for the
one-process reference (a TensorFlow start less).

    python multi_worker_step.py DATA_DIR WEIGHTS_PATH USR_DIR
"""
import sys
from typing import Callable

import numpy as np

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.experiment import Experiment
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.training.distribute import make_strategy
from t2t_lite.training.train_options import TrainOptions
from t2t_lite.training.trainer import Trainer
from toys import fixed_reverse_batches


def one_step(data_dir: str, weights_path: str, usr_dir: str,
             import_usr_dir: Callable[[str], None] = registry.import_usr_dir) -> None:
    strategy = make_strategy()
    load_builtins()
    import_usr_dir(usr_dir)
    hparams = transformer_tiny().parse("hidden_size=16,filter_size=32,num_heads=2,"
                                       "layer_prepostprocess_dropout=0.0,clip_grad_norm=0.01")
    experiment = Experiment(registry.problems["tiny_reverse_binary"](), "transformer", "t",
                            hparams, data_dir, weights_path + "_run")
    trainer = Trainer(experiment, TrainOptions(seed=7), strategy)
    trainer.train_on(fixed_reverse_batches(), 2)
    np.savez(weights_path, *trainer.model.get_weights())


if __name__ == "__main__":
    one_step(*sys.argv[1:4])
