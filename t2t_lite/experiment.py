"""What a run is: a problem, a model and its effective hparams, in an output dir.

The effective hparams are the registered set, then the values saved in
``output_dir/hparams.json`` by an earlier run, then the user's ``--hparams``.
They are written back to ``hparams.json`` together with the model and problem
names and a fingerprint of the vocabulary, so that the decoder and a resumed
trainer rebuild exactly the model that was trained, and a request that
disagrees with what the output dir holds is refused before anything is
overwritten. Each stage's values are checked against the declared ranges as
they arrive, and a refusal names the stage (``hparams set transformer_tiny``,
``hparams.json in DIR``, ``--hparams``); NaN and infinities never reach the file.
"""
from __future__ import annotations

import dataclasses
import glob
import inspect
import json
import os
from typing import Any

from t2t_lite import registry
from t2t_lite.data.problem import Problem
from t2t_lite.hparam import HParams, collecting_errors, from_source
from t2t_lite.hparams.common import basic_params
from t2t_lite.precision import copy_weights, dtype_policy, inference_policy

HPARAMS_FILE = "hparams.json"


class ExperimentError(ValueError):
    """The request disagrees with the output dir, or names nothing usable."""


@dataclasses.dataclass
class Experiment:
    """A resolved run: everything needed to build the model and its data."""
    problem: Problem
    model_name: str
    hparams_set: str
    hparams: HParams
    data_dir: str
    output_dir: str
    # The keys --hparams changed from the hparams set and hparams.json.
    overridden: tuple[str, ...] = ()
    # The --t2t_usr_dir that registers the problem, model or set (absolute), if any.
    usr_dir: str = ""

    @property
    def model_cls(self) -> type:
        return registry.models[self.model_name]

    def vocab_size(self) -> int:
        """The targets' vocabulary size: the ids the model predicts."""
        return self.problem.vocab_size(self.data_dir)

    def vocabularies(self) -> dict[str, Any]:
        """The model's vocabulary sizes and whether inputs and targets share one
        (checkpoints and hparams.json record them: a model's embeddings are shaped
        and tied by them)."""
        return {"vocab_size": self.vocab_size(),
                "input_vocab_size": self.problem.input_vocab_size(self.data_dir),
                "shared_vocabulary": self.problem.shares_vocabulary(self.data_dir)}

    def build_model(self, inference: bool = False):
        """The model, its layers under the Keras dtype policy of hparam ``dtype``; with
        ``inference``, under ``precision.inference_policy`` (weights in the compute
        dtype: see ``inference_model``). Built ``cls(hparams, vocab_size)`` for a shared
        vocabulary (so a model of the old signature still builds), with
        ``input_vocab_size=`` for separate ones."""
        vocabularies = self.vocabularies()
        separate = {}
        if not vocabularies["shared_vocabulary"]:
            _check_takes_input_vocab_size(self.model_cls, self.model_name, self.problem.name)
            separate = {"input_vocab_size": vocabularies["input_vocab_size"]}
        with dtype_policy(self.hparams.dtype, inference):
            return self.model_cls(self.hparams, vocabularies["vocab_size"], **separate)

    def inference_model(self, trained):
        """``trained`` (a ``build_model()`` with its weights) as inference runs it: under
        a mixed dtype, a model holding the weights in the compute dtype (the same
        outputs, faster and in half the memory: ``precision``); ``trained`` itself
        under float32."""
        if inference_policy(self.hparams.dtype) == self.hparams.dtype:
            return trained
        model = self.build_model(inference=True)
        copy_weights(trained, model)
        return model

    def data_identity(self) -> dict[str, Any]:
        """The problem and vocabularies the weights are tied to (checkpoints record them)."""
        return {"problem": self.problem.name,
                "vocab_fingerprint": self.problem.vocab_fingerprint(self.data_dir),
                **self.vocabularies()}

    def record(self) -> dict[str, Any]:
        return {**self.data_identity(), "model": self.model_name,
                "data_dir": os.path.abspath(self.data_dir),
                "hparams_set": self.hparams_set, "hparams": self.hparams.values(),
                **({"t2t_usr_dir": self.usr_dir} if self.usr_dir else {})}

    def save(self) -> None:
        """Writes ``hparams.json`` atomically (an earlier copy is never half-written)."""
        os.makedirs(self.output_dir, exist_ok=True)
        path = os.path.join(self.output_dir, HPARAMS_FILE)
        try:
            with open(path + ".tmp", "w") as f:
                # The values were checked on arrival; allow_nan=False stops a bug writing NaN.
                json.dump(self.record(), f, indent=2, sort_keys=True, allow_nan=False)
            os.replace(path + ".tmp", path)
        finally:  # a full disk or an interrupt leaves no half record beside the old one
            if os.path.exists(path + ".tmp"):
                os.remove(path + ".tmp")


def _check_takes_input_vocab_size(model_cls: type, model_name: str, problem_name: str) -> None:
    parameters = inspect.signature(model_cls).parameters.values()
    if not any(p.name == "input_vocab_size" or p.kind is p.VAR_KEYWORD for p in parameters):
        raise ExperimentError(
            f"problem {problem_name} has separate source and target vocabularies, but model "
            f"{model_name} is built as cls(hparams, vocab_size) with one: give its __init__ "
            "an input_vocab_size=None argument and pass it to Seq2SeqModel's")


def load_record(output_dir: str) -> dict[str, Any] | None:
    path = os.path.join(output_dir, HPARAMS_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ExperimentError(f"{path} is unreadable ({e}); fix or remove it") from None


def resolve(problem_name: str | None, model_name: str | None, hparams_set: str | None,
            hparams_overrides: str, data_dir: str | None, output_dir: str,
            must_exist: bool = False, usr_dir: str = "") -> Experiment:
    """Builds the Experiment, filling names the user left out from the output dir.

    Raises ExperimentError when the request disagrees with what ``output_dir``
    recorded: another problem, model or hparams set (its saved values would
    silently win over the set's), another vocabulary, or an architecture hparam
    (``architecture_keys``) that differs from the checkpoints already there.
    """
    record = load_record(output_dir)
    if record is None and must_exist:
        # Named by its path, not a flag: --output_dir's run and --ensemble's members.
        raise ExperimentError(f"{os.path.join(output_dir, HPARAMS_FILE)} not found: "
                              f"{output_dir} is not a run folder written by t2t-trainer "
                              "or t2t-avg-all")
    saved = record or {}
    for flag, asked, key in (("--problem", problem_name, "problem"),
                             ("--model", model_name, "model"),
                             ("--hparams_set", hparams_set, "hparams_set")):
        if asked and saved.get(key) and asked != saved[key]:
            raise ExperimentError(
                f"{flag}={asked} but {output_dir} holds a {saved[key]!r} run; "
                f"use another --output_dir or {flag}={saved[key]}")
    problem_name = problem_name or saved.get("problem")
    model_name = model_name or saved.get("model")
    hparams_set = hparams_set or saved.get("hparams_set")
    given_data_dir = bool(data_dir)
    data_dir = data_dir or saved.get("data_dir")
    for flag, value in (("--problem", problem_name), ("--model", model_name),
                        ("--hparams_set", hparams_set), ("--data_dir", data_dir)):
        if not value:
            raise ExperimentError(f"{flag} is required (no {HPARAMS_FILE} in {output_dir})")
    recorded_usr_dir = saved.get("t2t_usr_dir", "")
    needed = [name for name, names in ((problem_name, registry.problems),
                                       (model_name, registry.models),
                                       (hparams_set, registry.hparams_sets))
              if name not in names]
    if needed and recorded_usr_dir and not usr_dir:
        raise ExperimentError(f"{', '.join(needed)} of the run in {output_dir} "
                              f"{'is' if len(needed) == 1 else 'are'} registered by "
                              f"--t2t_usr_dir={recorded_usr_dir} (its {HPARAMS_FILE} says "
                              "so): pass that flag too")
    problem = registry.problems[problem_name]()
    if not given_data_dir and not os.path.isdir(data_dir) and problem.vocab_files(data_dir):
        # The data moved (or went) after training: hparams.json names where it was.
        raise ExperimentError(
            f"{output_dir} was trained on the data in {data_dir} ({HPARAMS_FILE}), which is "
            "not there now; if it moved, give --data_dir=the folder it is in now")
    registry.models[model_name]  # an unknown model fails here, listing the known ones
    make_hparams = registry.hparams_sets[hparams_set]
    with from_source(f"hparams set {hparams_set}"):
        with collecting_errors(""):  # every refused line of the set's function, at once
            hparams = make_hparams()
        hparams.check()
    if saved.get("hparams"):
        hparams.override_from_dict(saved["hparams"], source=f"{HPARAMS_FILE} in {output_dir}")
    saved_values = hparams.values()
    if hparams_overrides:
        hparams.parse(hparams_overrides, source="--hparams")
    _check_model_reads_the_set(model_name, hparams_set, hparams)
    overridden = tuple(key for key, value in hparams.values().items()
                       if value != saved_values[key])
    experiment = Experiment(problem, model_name, hparams_set, hparams, data_dir, output_dir,
                            overridden, os.path.abspath(usr_dir) if usr_dir else
                            recorded_usr_dir)
    if record is not None and _has_checkpoint(output_dir):
        _check_architecture_unchanged(experiment, saved_values, record)
    return experiment


def model_keys(model_name: str) -> set[str]:
    """The hparams keys a model declares that it reads (the trainer's come on top)."""
    cls = registry.models[model_name]
    return set(cls.architecture_hparams + cls.required_hparams)


def _check_model_reads_the_set(model_name: str, hparams_set: str, hparams: HParams) -> None:
    # A set made for another model holds that model's keys: attention keys under a
    # model without attention would be ignored, and a run asked for
    # attention_score=dot would train without attention, with exit 0.
    own, held = model_keys(model_name), set(hparams.values())
    trainers = set(basic_params().values())
    by_owner = {other: (model_keys(other) - own - trainers) & held
                for other in registry.models.names()}
    owners = [other for other, keys in by_owner.items() if keys]
    unread = set().union(*by_owner.values())
    if unread:
        sets = ", ".join(sets_made_for(model_name)) or "none registered"
        raise ExperimentError(
            f"model {model_name} reads no {', '.join(sorted(unread))} (keys of "
            f"{', '.join(sorted(owners))}), which hparams set {hparams_set} holds: they would "
            f"be ignored; use a set made for {model_name} ({sets}) or the model the set is "
            "made for (a model of your own lists the keys it reads in architecture_hparams "
            "or required_hparams)")


def sets_made_for(model_name: str) -> list[str]:
    """The registered hparams sets whose every key the model or the trainer reads, and
    which hold every key the model reads."""
    own, trainers = model_keys(model_name), set(basic_params().values())
    return [name for name in registry.hparams_sets.names()
            if own <= set(registry.hparams_sets[name]().values()) <= own | trainers]


def _has_checkpoint(output_dir: str) -> bool:
    """An index or a checkpoint's files: either fixes the architecture of the run."""
    return os.path.exists(os.path.join(output_dir, "checkpoint")) or bool(
        glob.glob(os.path.join(glob.escape(output_dir), "ckpt-*.index")))


def _check_architecture_unchanged(experiment: Experiment, saved_values: dict,
                                  record: dict) -> None:
    # hparams.json against --hparams; the checkpoints check hparams.json against
    # the architecture they record when they are restored.
    keys = experiment.model_cls.architecture_keys(experiment.hparams)
    changed = [f"{k}={saved_values[k]!r} -> {experiment.hparams.values()[k]!r}"
               for k in keys
               if k in saved_values and saved_values[k] != experiment.hparams.values()[k]]
    if changed:
        raise ExperimentError(
            f"{experiment.output_dir} holds checkpoints of another model architecture "
            f"({', '.join(changed)}); use a new --output_dir or drop those --hparams")
    # Runs recorded before a key existed (input_vocab_size, shared_vocabulary) pass it.
    current = experiment.data_identity()
    changed = [key for key in ("vocab_fingerprint", *experiment.vocabularies())
               if record.get(key) not in (None, current[key])]
    if changed:
        sizes = "".join(f"; {key}={record[key]!r} there, {current[key]!r} here"
                        for key in changed if key != "vocab_fingerprint")
        raise ExperimentError(
            f"the vocabulary in {experiment.data_dir} is not the one {experiment.output_dir} "
            f"was trained with{sizes}; point --data_dir at the data the model was trained on")
