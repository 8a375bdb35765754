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


def split_cpu(num_devices: int) -> list[str]:
    """Splits the CPU into ``num_devices`` logical devices (tests of MirroredStrategy
    on machines without GPUs). Must run before TensorFlow initialises its devices.
    """
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(num_devices)])
    return [d.name for d in tf.config.list_logical_devices("CPU")]
