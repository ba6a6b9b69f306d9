"""Local executor: a process pool (the default), or inline with one worker."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _exit_with(parent: int) -> None:
    """Worker initializer: a daemon thread that ends this worker as soon as the driver is gone
    (a SIGKILLed driver cannot stop its pool, and its workers would otherwise sleep forever)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="trajpipe-parent-watch", daemon=True).start()


class LocalExecutor:
    """Maps a picklable function over items; results come back in input order."""

    name = "local"

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(1, workers)

    def map(self, fn: Callable[..., R], items: Sequence[T], *args: Any,
            on_done: Callable[[int, R], None] | None = None) -> list[R]:
        if self.workers == 1 or len(items) <= 1:
            out = []
            for i, item in enumerate(items):
                r = fn(item, *args)
                if on_done:
                    on_done(i, r)
                out.append(r)
            return out
        results: dict[int, R] = {}
        # spawn: polars/arrow thread pools do not survive fork safely
        with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=mp.get_context("spawn"),
                                 initializer=_exit_with, initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(fn, item, *args): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                i = futures[fut]
                results[i] = fut.result()
                if on_done:
                    on_done(i, results[i])
        return [results[i] for i in range(len(items))]
