"""The opening that the commands reading a trained run share (t2t-decoder,
t2t-exporter, t2t-attention; benchmarks/sweep_decode.py): load the
registrations, require --output_dir, declare it and resolve the run it holds,
then build and restore its model and set up its decoding (no library logic here).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from t2t_lite.bin import common

if TYPE_CHECKING:  # the heavy imports wait until a command runs
    from t2t_lite.decoding.factory import Decoding
    from t2t_lite.decoding.settings import DecodeSettings
    from t2t_lite.experiment import Experiment
    from t2t_lite.output_paths import Paths


def start(args: argparse.Namespace) -> bool:
    """Loads the registrations (built-ins, --t2t_usr_dir); True when that was all
    the command had to do (--registry_help). Otherwise --output_dir is required."""
    if common.load_registrations(args):
        return True
    if not args.output_dir:
        raise ValueError("--output_dir is required (a run folder written by t2t-trainer "
                         "or t2t-avg-all)")
    return False


def restored_model(experiment: "Experiment", checkpoint_path: str | None = None,
                   trained_weights: bool = False, raw_weights: bool = False
                   ) -> tuple[Any, str]:
    """``experiment``'s inference model (``Experiment.inference_model``) with the
    weights of ``checkpoint_path`` (default: its output dir's latest
    checkpoint), and the checkpoint's path. ``trained_weights``: the model as
    trained instead (float32 weights under a mixed dtype). The weights' moving
    averages are read in their place where the run kept them, unless ``raw_weights``."""
    from t2t_lite.training.checkpoints import restore_model

    model = experiment.build_model()
    path = restore_model(model, experiment.output_dir, checkpoint_path,
                         experiment.data_identity(), averaged=not raw_weights)
    return (model if trained_weights else experiment.inference_model(model)), path


def checkpoint_to_read(experiment: "Experiment", checkpoint_path: str | None = None) -> str:
    """The checkpoint ``restored_model`` would read (the run's latest by default),
    without reading it."""
    from t2t_lite.training import checkpoints

    return checkpoints.checkpoint_to_read(experiment.output_dir, checkpoint_path)


def checkpoint_identity(prefix: str) -> str:
    """The weights of checkpoint ``prefix`` wherever it lies: a digest of its ``.index``,
    which holds every tensor's checksum (so a copied or linked run's is the same)."""
    with open(prefix + ".index", "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def ensemble_member(experiment: "Experiment", output_dir: str) -> "Experiment":
    """The run trained in ``output_dir``, refused unless it shares ``experiment``'s
    problem and vocabularies, source and target (restore it with ``restored_model``)."""
    from t2t_lite import experiment as experiment_lib

    member = experiment_lib.resolve(None, None, None, "", None, output_dir, must_exist=True)
    if member.problem.name != experiment.problem.name:
        raise ValueError(f"--ensemble: {output_dir} holds a {member.problem.name} model, "
                         f"not {experiment.problem.name}")
    if member.data_identity() != experiment.data_identity():
        raise ValueError(f"--ensemble: {output_dir} was trained with another vocabulary "
                         f"than {experiment.output_dir}; ensembled models must share one")
    return member


@dataclasses.dataclass
class OpenedRun:
    """A command's resolved run and the paths it has declared so far."""
    experiment: "Experiment"
    paths: "Paths"
    raw_weights: bool = False  # --raw_weights: the trained weights, not their averages

    def restored_model(self, checkpoint_path: str | None = None,
                       trained_weights: bool = False) -> tuple[Any, str]:
        """``restored_model`` of the run's experiment."""
        return restored_model(self.experiment, checkpoint_path, trained_weights,
                              self.raw_weights)

    def decode_settings(self, overrides: str, source: str = "--decode_hparams",
                        unused: Mapping[str, str] | None = None) -> "DecodeSettings":
        """The problem's decode settings with ``overrides``, XLA as the run's model
        (``unused``: keys the command does not apply, refused when set)."""
        from t2t_lite.decoding.settings import decode_settings

        return decode_settings(overrides, self.experiment.problem, self.experiment.hparams,
                               source, unused)

    def decoding(self, model: Any, settings: "DecodeSettings",
                 members: Sequence[Any] = (), vocabulary_map: str | None = None) -> "Decoding":
        """``build_decoding`` of ``model`` (and ensemble ``members``) for the run's
        problem, shortlisted by the file ``vocabulary_map`` (--vocabulary_map) if given."""
        from t2t_lite.decoding.factory import build_decoding

        return build_decoding(model, self.experiment.problem, self.experiment.data_dir,
                              settings, members, vocabulary_map)


def input_files(*flags_and_paths: tuple[str, str]) -> Callable[["Paths"], None]:
    """An ``open_run`` declaration of each (flag, path) as an input file."""
    def declare(paths: "Paths") -> None:
        for flag, path in flags_and_paths:
            paths.input_file(flag, path)
    return declare


# What inference reads of a trained model's hparams, beyond its architecture's keys.
INFERENCE_HPARAMS = ("dtype", "xla", "max_length")


def open_run(args: argparse.Namespace, command: str,
             declare: Callable[["Paths"], None] | None = None,
             reads: Sequence[str] = INFERENCE_HPARAMS) -> OpenedRun:
    """``command``'s ``Paths`` with --output_dir declared (then the command's own
    inputs, by ``declare``), the run resolved from the registry flags and
    --output_dir's hparams.json, and its --data_dir declared. A --hparams key that
    ``command`` does not read (``reads`` or the architecture's) is refused."""
    from t2t_lite import experiment as experiment_lib
    from t2t_lite import output_paths

    paths = output_paths.Paths(command)
    args.output_dir = paths.input_folder("--output_dir", args.output_dir)
    if declare:
        declare(paths)
    if getattr(args, "data_dir", None):  # its path checked (a literal ~) before it is read
        paths.input_folder("--data_dir", args.data_dir)
    experiment = experiment_lib.resolve(args.problem, args.model, args.hparams_set,
                                        args.hparams, args.data_dir, args.output_dir,
                                        must_exist=True, usr_dir=getattr(args, "t2t_usr_dir", ""))
    experiment.data_dir = paths.input_folder("--data_dir", experiment.data_dir)
    _refuse_unread_overrides(experiment, command, reads)
    return OpenedRun(experiment, paths, getattr(args, "raw_weights", False))


def _refuse_unread_overrides(experiment: "Experiment", command: str,
                             reads: Sequence[str]) -> None:
    # A trained model's training keys (learning rate, dropout, the training batch)
    # would change nothing; --hparams=batch_size=8 is T2T users' slip for the decode batch.
    read = set(reads) | set(experiment.model_cls.architecture_keys(experiment.hparams))
    unread = [key for key in experiment.overridden if key not in read]
    if unread:
        hint = ("; the decode batch is --decode_hparams=batch_size=N"
                if "batch_size" in unread and command != "t2t-exporter" else "")
        verb, them = ("changes", "it") if len(unread) == 1 else ("change", "them")
        raise ValueError(f"--hparams: {', '.join(unread)} {verb} nothing in {command} "
                         f"(of a trained model it reads {', '.join(reads) or 'no --hparams'} "
                         f"and the architecture's keys{hint}); leave {them} out")
