"""Ray executor: the same ``map`` as the local process pool, on a local or remote Ray cluster.

Ray is an optional extra (``pip install trajpipe[ray]``) and is imported only when this
executor is built. Work is plain Ray Core tasks, one per item: the mapped function writes its
real output to the shared work dir and returns a small summary, so nothing large crosses the
object store. At most
``max_in_flight`` tasks are submitted at once, so driver and object-store memory stay flat
however many units a corpus has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

INSTALL_HINT = "the ray executor needs Ray: pip install trajpipe[ray]  (or: pip install 'ray>=2.9')"


class RayNotInstalled(RuntimeError):
    pass


def import_ray() -> ModuleType:
    """``ray``, or a clear error naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise RayNotInstalled(INSTALL_HINT) from exc
    return ray


class RayExecutor:
    """Maps a function over items as Ray tasks; results come back in input order.

    ``address`` None starts a private local Ray with ``workers`` CPUs (and shuts it down after
    each ``map``); ``"auto"`` or ``"host:port"`` / ``"ray://host:port"`` connects to a running
    cluster, whose size then sets the parallelism. If Ray is already initialised in this process
    (a test fixture, a notebook), that instance is used and left running.
    """

    name = "ray"

    def __init__(
        self,
        workers: int = 2,
        address: str | None = None,
        *,
        max_in_flight: int | None = None,
        object_store_memory: int | None = None,
    ) -> None:
        self.ray = import_ray()  # fail at construction, before any work is listed or read
        self.workers = max(1, workers)
        self.address = address
        self.max_in_flight = max_in_flight
        self.object_store_memory = object_store_memory
        self.peak_in_flight = 0  # observed by the last map, for tests and the bench

    def _start(self) -> bool:
        """Initialise Ray unless it already is; True when this call started it."""
        ray = self.ray
        if ray.is_initialized():
            return False
        quiet: dict[str, Any] = {
            "ignore_reinit_error": True,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
        }
        if self.address:
            ray.init(address=self.address, **quiet)
        else:
            # "local" (not None): never attach to a cluster named by RAY_ADDRESS by accident;
            # connecting is what --ray-address is for
            ray.init(
                address="local",
                num_cpus=self.workers,
                include_dashboard=False,
                object_store_memory=self.object_store_memory,
                **quiet,
            )
        return True

    def _bound(self) -> int:
        if self.max_in_flight:
            return max(1, self.max_in_flight)
        try:
            cpus = int(self.ray.cluster_resources().get("CPU", self.workers))
        except Exception:  # pragma: no cover - a client connection without resource info
            cpus = self.workers
        return 2 * max(1, cpus)  # one running and one queued per CPU keeps every core busy

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[T],
        *args: Any,
        on_done: Callable[[int, R], None] | None = None,
    ) -> list[R]:
        if not items:
            return []
        ray = self.ray
        started = self._start()
        try:
            return self._map(ray, fn, items, args, on_done)
        finally:
            if started:
                ray.shutdown()

    def _map(
        self,
        ray: ModuleType,
        fn: Callable[..., R],
        items: Sequence[T],
        args: tuple[Any, ...],
        on_done: Callable[[int, R], None] | None,
    ) -> list[R]:
        # the shared arguments (config, work dir) go to the object store once, not once per task
        shared = [ray.put(a) for a in args]
        # a retried task reruns fn on the same item: process_unit is idempotent (atomic cache
        # writes), so node loss is safe; an exception raised by fn is not retried
        task = ray.remote(fn).options(num_cpus=1, max_retries=3, retry_exceptions=False)
        bound = self._bound()
        results: dict[int, R] = {}
        pending: dict[Any, int] = {}
        nxt = 0
        self.peak_in_flight = 0
        try:
            while nxt < len(items) or pending:
                while nxt < len(items) and len(pending) < bound:
                    pending[task.remote(items[nxt], *shared)] = nxt
                    nxt += 1
                self.peak_in_flight = max(self.peak_in_flight, len(pending))
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    results[i] = ray.get(ref)  # re-raises fn's exception (a subclass of its type)
                    if on_done:
                        on_done(i, results[i])
        except BaseException:
            for ref in pending:  # do not leave work running behind a failure
                ray.cancel(ref, force=False)
            raise
        return [results[i] for i in range(len(items))]
