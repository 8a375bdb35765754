"""Which tf.distribute strategy a run uses."""
from __future__ import annotations

import json
import logging
import os

import tensorflow as tf

# The jobs MultiWorkerMirroredStrategy runs: every one all-reduces (no parameter servers).
TASK_TYPES = ("chief", "worker")


def read_tf_config() -> dict:
    """The TF_CONFIG environment variable ({} when unset or empty), checked: a
    mistake in it is one ``ValueError`` starting "TF_CONFIG" (run it before writing
    anything), not an error deep inside TensorFlow's cluster set-up."""
    raw = os.environ.get("TF_CONFIG", "").strip()
    if not raw:
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not JSON ({error}): {raw[:80]!r}") from None
    if not isinstance(config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object with \"cluster\" and \"task\", "
                         f"got {raw[:80]!r}")
    cluster, task = config.get("cluster"), config.get("task")
    if not cluster and not task:
        return {}
    example = ('e.g. {"cluster": {"worker": ["host1:2222", "host2:2222"]}, '
               '"task": {"type": "worker", "index": 0}}')
    if not isinstance(cluster, dict) or not cluster:
        raise ValueError(f"TF_CONFIG has no \"cluster\" of jobs; {example}")
    for job, addresses in cluster.items():
        if job not in TASK_TYPES:
            raise ValueError(f"TF_CONFIG: cluster job {job!r} is not one of {TASK_TYPES}: "
                             "workers all-reduce, there are no parameter servers")
        if (not isinstance(addresses, list) or not addresses
                or not all(isinstance(a, str) and ":" in a for a in addresses)):
            raise ValueError(f"TF_CONFIG: cluster job {job!r} must list 'host:port' "
                             f"addresses, got {addresses!r}")
    if not isinstance(task, dict):
        raise ValueError(f"TF_CONFIG has no \"task\" saying which of the cluster this "
                         f"process is; {example}")
    task_type, index = task.get("type"), task.get("index", 0)
    if task_type not in cluster:
        raise ValueError(f"TF_CONFIG: task type {task_type!r} is not a job of the cluster "
                         f"({', '.join(cluster)})")
    if not isinstance(index, int) or isinstance(index, bool) or not (
            0 <= index < len(cluster[task_type])):
        raise ValueError(f"TF_CONFIG: task index {index!r} is not one of the "
                         f"{len(cluster[task_type])} {task_type} addresses (0 to "
                         f"{len(cluster[task_type]) - 1})")
    return config


def make_strategy() -> tf.distribute.Strategy:
    """MultiWorkerMirrored when TF_CONFIG names a cluster, else Mirrored over every
    local GPU (one replica each), else the default single-device strategy (CPU).
    """
    if read_tf_config():
        strategy: tf.distribute.Strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif tf.config.list_logical_devices("GPU"):
        strategy = tf.distribute.MirroredStrategy()
    else:
        strategy = tf.distribute.get_strategy()
    logging.info("strategy %s with %d replica(s)", type(strategy).__name__,
                 strategy.num_replicas_in_sync)
    return strategy


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process leads the run: always, but under TF_CONFIG only the
    chief (or worker 0 of a cluster without one)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def num_workers(strategy: tf.distribute.Strategy) -> int:
    """How many processes train together (the workers and chief of TF_CONFIG, or 1)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return 1
    spec = resolver.cluster_spec().as_dict()
    return sum(len(spec.get(job, [])) for job in ("chief", "worker"))


def split_cpu(num_devices: int) -> list[str]:
    """Splits the CPU into ``num_devices`` logical devices (tests of MirroredStrategy
    on machines without GPUs). Must run before TensorFlow initialises its devices.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])
    return [d.name for d in tf.config.list_logical_devices("CPU")]
