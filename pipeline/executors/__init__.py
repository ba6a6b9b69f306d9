"""Executors map per-unit work; they know nothing about stages."""

from __future__ import annotations

from typing import Any, Protocol


class Executor(Protocol):
    name: str

    def map(self, fn: Any, items: Any, *args: Any, on_done: Any = None) -> list[Any]: ...


def make_executor(kind: str, workers: int, address: str | None = None) -> Executor:
    if kind == "local":
        from pipeline.executors.local import LocalExecutor

        return LocalExecutor(workers)
    if kind == "ray":
        from pipeline.executors.ray import RayExecutor

        return RayExecutor(workers, address)
    raise ValueError(f"unknown executor {kind!r} (local or ray)")
