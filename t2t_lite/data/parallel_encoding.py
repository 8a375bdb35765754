"""Encoding a problem's samples in several processes, for t2t-datagen at WMT sizes.

Encoding (a sentencepiece segmentation of each sentence) and serializing each
example are most of what ``t2t-datagen`` does on a large corpus, and each sample
is encoded on its own, so the samples are read in this process and handed in
chunks to worker processes that return the serialized records, in order: the
shards are byte for byte those one process writes. Only a few chunks are in
flight at a time, so memory does not grow with the corpus. Input smaller than one
chunk, one process asked for, or a platform without ``fork`` (the workers inherit
the problem and its encoders, which need not pickle) encode here instead.

Workers ignore Ctrl-C and SIGTERM: the command's own process takes the signal
(``t2t_lite.interrupts``), stops the pool and removes what it was writing. A
worker whose parent is gone (killed by the OOM killer, ``kill -9``) ends itself:
it would otherwise wait forever on a queue whose writer it holds itself.
"""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import multiprocessing
import os
import signal
import threading
import time
from typing import Any, Callable, Iterable, Iterator

CHUNK_SAMPLES = 2048      # samples a worker encodes per task
CHUNKS_PER_WORKER = 2     # tasks in flight per worker: enough to keep each busy
MAX_AUTO_PROCESSES = 8    # the default's ceiling: past it reading the samples is the bound
PARENT_CHECK_SECONDS = 0.5

Encode = Callable[[Any], bytes]  # one sample -> its serialized record

# The encode function of this worker process, set by _start_worker (inherited by fork).
_worker_encode: Encode | None = None


def available_processes() -> int:
    """The CPUs this process may run on (its affinity, as a container or a job
    scheduler sets it), at most ``MAX_AUTO_PROCESSES``."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_AUTO_PROCESSES))


def _end_when_orphaned(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _start_worker(encode: Encode, parent: int) -> None:
    global _worker_encode
    _worker_encode = encode
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    threading.Thread(target=_end_when_orphaned, args=(parent,), daemon=True).start()


def _encode_chunk(samples: list) -> list[bytes]:
    return [_worker_encode(sample) for sample in samples]


def encoded_records(samples: Iterable[Any], encode: Encode,
                    processes: int | None = None) -> Iterator[bytes]:
    """``encode(sample)`` for each of ``samples``, in order, by ``processes`` worker
    processes (None: ``available_processes()``; 1: in this process)."""
    processes = available_processes() if processes is None else processes
    if processes < 1:
        raise ValueError(f"the number of encoding processes must be at least 1, "
                         f"not {processes}")
    samples = iter(samples)
    first = list(itertools.islice(samples, CHUNK_SAMPLES))
    if (processes == 1 or len(first) < CHUNK_SAMPLES
            or "fork" not in multiprocessing.get_all_start_methods()):
        yield from map(encode, itertools.chain(first, samples))
        return
    chunks = itertools.chain([first], iter(lambda: list(itertools.islice(samples, CHUNK_SAMPLES)),
                                            []))
    pool = concurrent.futures.ProcessPoolExecutor(
        processes, mp_context=multiprocessing.get_context("fork"),
        initializer=_start_worker, initargs=(encode, os.getpid()))
    try:
        in_flight: collections.deque = collections.deque()
        for chunk in chunks:
            in_flight.append(pool.submit(_encode_chunk, chunk))
            if len(in_flight) >= processes * CHUNKS_PER_WORKER:
                yield from in_flight.popleft().result()
        while in_flight:
            yield from in_flight.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
