"""Work the driver starts in a thread while the map runs, and collects when it needs the result."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:  # the publisher is imported after the map (start-up)
    pass


R = TypeVar("R")


class _Background(Generic[R]):
    """``fn(*args)`` run in a daemon thread; :meth:`result` waits for it and returns its value or
    raises its exception in the caller (a result never asked for is simply dropped)."""

    def __init__(self, fn: Callable[..., R], *args: Any) -> None:
        self._out: list[R] = []
        self._err: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="trajpipe-bg", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., R], args: tuple[Any, ...]) -> None:
        try:
            self._out.append(fn(*args))
        except BaseException as exc:  # re-raised by result(), in the driver's thread
            self._err.append(exc)

    def join(self) -> None:
        self._thread.join()

    def result(self) -> R:
        self._thread.join()
        if self._err:
            raise self._err[0]
        return self._out[0]
