"""Progress per stage: a rich bar on a terminal, plain lines otherwise (logs, CI)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class Reporter:
    def __init__(self, console: Console | None = None, *, quiet: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.quiet = quiet

    @contextlib.contextmanager
    def stage(self, name: str, total: int) -> Iterator[Callable[[], None]]:
        if self.quiet:
            yield lambda: None
            return
        start = time.perf_counter()
        if self.console.is_terminal:
            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=self.console, transient=False) as progress:
                task = progress.add_task(name, total=total)
                yield lambda: progress.advance(task)
            return
        done = [0]

        def advance() -> None:
            done[0] += 1
            if total <= 20 or done[0] % max(1, total // 10) == 0 or done[0] == total:
                print(f"[{name}] {done[0]}/{total}", file=sys.stderr, flush=True)

        yield advance
        print(f"[{name}] done in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
