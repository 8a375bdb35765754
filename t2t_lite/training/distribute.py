"""Which tf.distribute strategy a run uses."""
from __future__ import annotations

import json
import logging
import os

import tensorflow as tf


def make_strategy() -> tf.distribute.Strategy:
    """MultiWorkerMirrored when TF_CONFIG names a cluster, else Mirrored over every
    local GPU (one replica each), else the default single-device strategy (CPU).
    """
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    if tf_config.get("cluster"):
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
