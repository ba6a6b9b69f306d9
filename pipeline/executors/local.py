"""Local executor: a process pool (the default), or inline with one worker."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _leave_ctrl_c_to_the_driver() -> None:
    """Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and the driver
    alone stops the run (one message, no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _exit_with(parent: int) -> None:
    """Worker initializer: a daemon thread that ends this worker as soon as the driver is gone
    (a SIGKILLed driver cannot stop its pool, and its workers would otherwise sleep forever)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="trajpipe-parent-watch", daemon=True).start()


def _init_worker(parent: int) -> None:
    _leave_ctrl_c_to_the_driver()
    _exit_with(parent)


class LocalExecutor:
    """Maps a picklable function over items; results come back in input order."""

    name = "local"

    def __init__(self, workers: int = 2) -> None:
        self.workers = max(1, workers)

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[T],
        *args: Any,
        on_done: Callable[[int, R], None] | None = None,
    ) -> list[R]:
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
        pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(items)),
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )
        try:
            futures = {pool.submit(fn, item, *args): i for i, item in enumerate(items)}
            for fut in as_completed(futures):
                i = futures[fut]
                results[i] = fut.result()
                if on_done:
                    on_done(i, results[i])
        except BaseException:
            # Ctrl-C or a failed unit: stop now instead of finishing every queued unit. A unit's
            # outputs are committed last, so a worker stopped mid-unit leaves nothing half-written.
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
            raise
        pool.shutdown(wait=True)
        return [results[i] for i in range(len(items))]
