"""Progress per stage: a rich bar on a terminal, plain lines otherwise (logs, CI).

A stage counts units (corpus chunks, SWE-Lego row groups); ``advance(runs)`` also adds the runs a
finished unit held, so the user sees runs, a rate in runs per second and an estimate of the time
left (from the units done so far)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def status_line(name: str, done: int, total: int, runs: int, elapsed: float) -> str:
    """``[name] 5/19 units, 430 runs, 85 runs/s, about 0:12 left`` (no rate before a unit is done)."""
    line = f"[{name}] {done:,}/{total:,} units, {runs:,} runs"
    if done and elapsed > 0:
        line += f", {runs / elapsed:,.0f} runs/s"
        if done < total:
            line += f", about {_clock(elapsed / done * (total - done))} left"
    return line


class Reporter:
    """Reports each stage's progress on ``console`` (stderr by default); ``quiet`` reports nothing."""

    def __init__(self, console: Console | None = None, *, quiet: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.quiet = quiet

    @contextlib.contextmanager
    def stage(self, name: str, total: int) -> Iterator[Callable[..., None]]:
        """Yields ``advance(runs=0)``, called once per finished unit."""
        if self.quiet:
            yield lambda runs=0: None
            return
        start = time.perf_counter()
        if self.console.is_terminal:
            with Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("units, {task.fields[runs]:,} runs, {task.fields[rate]}"),
                TimeRemainingColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            ) as progress:
                task = progress.add_task(name, total=total, runs=0, rate="")
                count = [0]

                def advance_bar(runs: int = 0) -> None:
                    count[0] += runs
                    elapsed = time.perf_counter() - start
                    progress.update(
                        task,
                        advance=1,
                        runs=count[0],
                        rate=f"{count[0] / elapsed:,.0f} runs/s" if elapsed > 0 else "",
                    )

                yield advance_bar
            return
        done, runs_done = [0], [0]

        def advance(runs: int = 0) -> None:
            done[0] += 1
            runs_done[0] += runs
            if total > 1 and (total <= 20 or done[0] % max(1, total // 10) == 0 or done[0] == total):
                print(
                    status_line(name, done[0], total, runs_done[0], time.perf_counter() - start),
                    file=sys.stderr,
                    flush=True,
                )

        yield advance
        print(f"[{name}] done in {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
