"""The step contract (datatrove-style): every ledger stage is a small class with one job.

A step has a ``name`` (its ledger stage), the ``reasons`` it may drop a run for, and one method,
:meth:`Step.process`, from a batch to a :class:`StageOutput` (kept batch, dropped rows with
``(stage, reason, detail)``, counters). It is built once per worker with the
:class:`~pipeline.stages.context.Context` (so it can build its indexes once) and then called on batches.
A call does no I/O and knows nothing about executors; counters merge by addition.

The base's :meth:`Step.__call__` owns what every step shares, as datatrove's ``BaseFilter.run``
does: the empty-batch guard, the counter prefix (a step counts ``"benchmark_task"``; the ledger
reads ``"task_dedup/benchmark_task"``) and the error boundary: an exception escaping a per-shard
step drops the batch's runs as ``<stage>/crash`` with a truncated traceback in the detail, so a
bug is counted and explained, never a lost run. A global step (``is_global``) runs once in the
driver over every new run; an exception there aborts the run before anything is committed.

:class:`RunStep` is the base of the steps that work one run at a time (parse, convert): a run
whose step raises :class:`~pipeline.core.episode.PipelineDrop` is dropped with its reason, one that
raises anything else is ``<stage>/crash``, and the others go on.
"""

from __future__ import annotations

import gc
import traceback
from collections import Counter
from collections.abc import Iterator, Sized
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import polars as pl

from pipeline.core.episode import PipelineDrop
from pipeline.core.stages import StageName
from schemas.run import DROPS, empty

if TYPE_CHECKING:
    from pipeline.stages.context import Context

DETAIL_LIMIT = 2000  # characters of a drop's detail kept in the ledger
TRACEBACK_LIMIT = 1500  # characters of a crash's traceback kept (its innermost frames)

In = TypeVar("In", bound=Sized)
Out = TypeVar("Out", bound=Sized)
Item = TypeVar("Item")
Result = TypeVar("Result", bound=Sized)


@dataclass
class StageOutput(Generic[Out]):
    kept: Out
    dropped: pl.DataFrame  # DROPS schema
    counters: Counter[str] = field(default_factory=Counter)


def drops_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Build a DROPS-schema frame from dicts with source_uid, epoch, dataset, stage, reason, detail."""
    if not rows:
        return empty(DROPS)
    return pl.DataFrame(rows, schema=empty(DROPS).schema)


def drop_row(
    source_uid: str, epoch: int | None, dataset: str, stage: str, reason: str, detail: str
) -> dict[str, Any]:
    """One ledger row (the detail cut to :data:`DETAIL_LIMIT` characters)."""
    return {
        "source_uid": source_uid,
        "epoch": epoch,
        "dataset": dataset,
        "stage": stage,
        "reason": reason,
        "detail": detail[:DETAIL_LIMIT],
    }


def drops_from(
    batch: pl.DataFrame, stage: str, reason: pl.Expr | str, detail: pl.Expr | str = ""
) -> pl.DataFrame:
    """Ledger rows for every row of ``batch`` (which must carry source_uid, epoch, dataset)."""
    r = pl.lit(reason) if isinstance(reason, str) else reason
    d = pl.lit(detail) if isinstance(detail, str) else detail
    return batch.select(
        pl.col("source_uid"),
        pl.col("epoch").cast(pl.Int32),
        pl.col("dataset"),
        pl.lit(stage).alias("stage"),
        r.cast(pl.Utf8).alias("reason"),
        d.cast(pl.Utf8).alias("detail"),
    )


def crash_detail(exc: BaseException) -> str:
    """The exception and its innermost frames, cut to :data:`TRACEBACK_LIMIT` characters."""
    text = "".join(traceback.format_exception(exc)).strip()
    return text if len(text) <= TRACEBACK_LIMIT else "…" + text[-TRACEBACK_LIMIT:]


class UndeclaredReason(RuntimeError):
    """A step dropped runs for a reason it does not declare: a bug in the step, so its batch is
    dropped as ``<stage>/crash`` (a global step's aborts the run)."""


class Step(Generic[In, Out]):
    """Base of every ledger stage: subclasses set ``name`` and ``reasons`` and implement
    :meth:`process`; callers call the step itself (``step(batch)``)."""

    name: ClassVar[StageName]
    # every reason the step may drop a run for; any other is refused (UndeclaredReason)
    reasons: ClassVar[tuple[str, ...]] = ()
    # the reasons the base itself drops for, which every step of its kind may give
    boundary_reasons: ClassVar[tuple[str, ...]] = ("crash",)
    # global steps run once in the driver over every new run (with the held runs), not per shard
    is_global: ClassVar[bool] = False
    # corpus-level steps need the corpus (benchmarks, catalog, other runs): `trajpipe convert`,
    # which converts a user's own files one by one, skips them
    corpus_level: ClassVar[bool] = False
    # counter namespaces besides the stage's own that this step's counters may already carry
    # (e.g. parse/convert counters raised deep in the parsers, solution_leak_attempt/<kind>)
    namespaces: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, batch: In) -> StageOutput[Out]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def vocabulary(cls) -> frozenset[str]:
        """Every reason a run may be dropped for at this stage."""
        return frozenset((*cls.reasons, *cls.boundary_reasons))

    def check_reasons(self, dropped: pl.DataFrame) -> None:
        """Refuse drops for a reason the step did not declare."""
        if dropped.height == 0:
            return
        undeclared = set(dropped.get_column("reason").unique().to_list()) - self.vocabulary()
        if undeclared:
            raise UndeclaredReason(f"{self.name} dropped runs for undeclared reasons {sorted(undeclared)}")

    def empty_kept(self, batch: In) -> Out:
        """What an empty batch keeps (the batch itself unless the step changes its type)."""
        return batch  # type: ignore[return-value]

    def drop_all(self, batch: In, reason: str, detail: str) -> pl.DataFrame:
        """Ledger rows dropping every run of ``batch`` (used for ``<stage>/crash``)."""
        assert isinstance(batch, pl.DataFrame)
        return drops_from(batch, self.name, reason, detail)

    def __call__(self, batch: In) -> StageOutput[Out]:
        if len(batch) == 0:
            return StageOutput(self.empty_kept(batch), empty(DROPS), Counter())
        try:
            out = self.process(batch)
            self.check_reasons(out.dropped)
        except Exception as exc:
            if self.is_global:
                raise
            detail = crash_detail(exc)
            return StageOutput(
                self.empty_kept(batch[:0]),  # type: ignore[index]
                self.drop_all(batch, "crash", detail),
                Counter({f"{self.name}/crash": len(batch)}),
            )
        out.counters = self.qualify(out.counters)
        return out

    def qualify(self, counters: Counter[str]) -> Counter[str]:
        """Counters under the stage's name (keys already in one of its namespaces stay)."""
        own = (self.name, *self.namespaces)
        if all(k.partition("/")[0] in own for k in counters):
            return counters
        return Counter(
            {(k if k.partition("/")[0] in own else f"{self.name}/{k}"): v for k, v in counters.items()}
        )

    def split(
        self, batch: pl.DataFrame, drop_mask: pl.Series, reason: pl.Series | str, detail: pl.Series | str = ""
    ) -> StageOutput[pl.DataFrame]:
        """Helper: drop the rows where ``drop_mask`` is true with per-row reason/detail."""
        tmp = batch.with_columns(
            (reason if isinstance(reason, pl.Series) else pl.Series([reason] * batch.height)).alias(
                "__reason"
            ),
            (detail if isinstance(detail, pl.Series) else pl.Series([detail] * batch.height)).alias(
                "__detail"
            ),
            drop_mask.alias("__drop"),
        )
        gone = tmp.filter(pl.col("__drop"))
        dropped = drops_from(gone, self.name, pl.col("__reason"), pl.col("__detail"))
        kept = batch.filter(~drop_mask)
        counters: Counter[str] = Counter()
        for reason_value, n in gone.group_by("__reason").len().iter_rows():
            counters[str(reason_value)] += n
        return StageOutput(kept, dropped, counters)


# The per-shard stages over a polars batch of WORK rows.
Stage = Step[pl.DataFrame, pl.DataFrame]


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused over one batch of runs. Parsing and converting allocate
    hundreds of thousands of acyclic containers (decoded JSON, messages, steps) and the collector
    would scan the live batch again and again as they pile up (about a tenth of the steps' CPU);
    whatever cycle a batch leaves is collected once the collector runs again."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class RunStep(Step[list[Item], Result], Generic[Item, Result]):
    """A step over a list of runs, one at a time; drops are per run, and so are crashes."""

    boundary_reasons: ClassVar[tuple[str, ...]] = ("too_deep", "crash")

    def one(self, item: Item, counters: Counter[str]) -> Any:  # pragma: no cover - interface
        """The step's work on one run (raise PipelineDrop to drop it)."""
        raise NotImplementedError

    def collect(self, kept: list[Any]) -> Result:
        """The kept batch from the kept runs' results."""
        return kept  # type: ignore[return-value]

    def where(self, item: Item) -> tuple[str, int | None, str]:  # pragma: no cover - interface
        """``(source_uid, epoch, dataset)`` of a run, for its ledger row."""
        raise NotImplementedError

    def on_drop(self, item: Item, reason: str, counters: Counter[str]) -> None:
        """Extra counters for a dropped run (the base counts ``<stage>/<reason>``)."""

    def empty_kept(self, batch: list[Item]) -> Result:
        return self.collect([])

    def drop_all(self, batch: list[Item], reason: str, detail: str) -> pl.DataFrame:
        return drops_frame([drop_row(*self.where(item), self.name, reason, detail) for item in batch])

    def process(self, batch: list[Item]) -> StageOutput[Result]:
        kept: list[Any] = []
        rows: list[dict[str, Any]] = []
        counters: Counter[str] = Counter()
        with paused_gc():
            self._each(batch, kept, rows, counters)
        return StageOutput(self.collect(kept), drops_frame(rows), counters)

    def _each(
        self, batch: list[Item], kept: list[Any], rows: list[dict[str, Any]], counters: Counter[str]
    ) -> None:
        vocabulary = self.vocabulary()
        for item in batch:
            try:
                kept.append(self.one(item, counters))
                continue
            except PipelineDrop as exc:
                reason, detail = exc.reason, exc.detail
            except RecursionError as exc:  # hostile nesting: treated like any unreadable run
                reason, detail = "too_deep", str(exc)[:200]
            except Exception as exc:  # a bug must not lose the run: it is counted and explained
                reason, detail = "crash", crash_detail(exc)
            if reason not in vocabulary:  # a drop the step does not declare is a bug too
                reason, detail = "crash", f"undeclared reason {reason!r}: {detail}"
            rows.append(drop_row(*self.where(item), self.name, reason, detail))
            counters[f"{self.name}/{reason}"] += 1
            self.on_drop(item, reason, counters)
