"""What the CLI tests share: the user's registrations, a tiny trained output dir,
and the one-line error of a failed command."""
import os

from t2t_lite.bin import t2t_datagen, t2t_trainer

USR_DIR = os.path.join(os.path.dirname(__file__), "usr_dir_example")
COMMON = ["--problem=tiny_reverse_binary", "--model=transformer",
          "--hparams_set=my_very_small_transformer", f"--t2t_usr_dir={USR_DIR}"]


def train_tiny(root):
    """A data dir and an output dir under ``root``, trained for a few steps."""
    data_dir, output_dir = str(root / "data"), str(root / "train")
    assert t2t_datagen.main(["--problem=tiny_reverse_binary", f"--data_dir={data_dir}",
                             f"--t2t_usr_dir={USR_DIR}"]) == 0
    assert t2t_trainer.main(COMMON + [f"--data_dir={data_dir}", f"--output_dir={output_dir}",
                                      "--train_steps=4", "--save_checkpoints_steps=2",
                                      "--log_every_steps=2"]) == 0
    return data_dir, output_dir


def error_of(capsys, main, argv):
    """The last stderr line of ``main(argv)``, which must fail with exit status 2."""
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    return err[-1]
