"""``trajpipe convert``: trajectory files of any supported format → mini-coder JSONL.

The same steps as the pipeline (``pipeline.stages.STEPS``) without the corpus-level ones (task
dedup, leaks, trajectory dedup): quarantine, parse, convert, scrub, validate. Runs that cannot be
converted are listed with their stage and reason, never skipped silently; a file that cannot be
used at all (unreadable, empty, neither JSON, JSON Lines nor Parquet) is reported as unusable.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from pipeline.core.config import Config, Limits
from pipeline.core.episode import Quarantined, RawRun
from pipeline.orchestration.process import run_steps
from pipeline.sources.base import ShardVerdict, Unit
from pipeline.stages import STEPS
from pipeline.stages.context import Context

# what a folder given to `convert` is expanded to (the formats `run` and `convert` read)
SUFFIXES = (".traj", ".json", ".jsonl", ".parquet", ".gz")
# file-level quarantine reasons: the whole file could not be used
_UNUSABLE = {"unreadable", "bad_json", "record_too_large"}


class InputError(ValueError):
    """An input that does not exist or holds nothing to convert; one line naming it."""


@dataclass
class ConvertResult:
    converted: int = 0
    dropped: int = 0  # runs listed with a drop (or quarantine) reason
    unusable: list[str] = field(default_factory=list)  # "<file>: <why>" per file that gave no run at all
    # ``<format>/converted`` and ``<format>/<stage>/<reason>`` (format ``unknown`` when it could not be told)
    by_format: Counter[str] = field(default_factory=Counter)


def expand_inputs(paths: list[Path]) -> list[Path]:
    """Files as given, folders expanded to their trajectory files (sorted); missing inputs refused."""
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise InputError(f"{p} does not exist")
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
            if not found:
                raise InputError(f"{p} is a folder with no trajectory files ({', '.join(SUFFIXES)})")
            out += found
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def uid_names(files: list[Path]) -> dict[Path, str]:
    """The name each file's source_uids start with: its file name, or, when two inputs share a file
    name, its path relative to the folder all inputs share (so uids stay unique)."""
    counts: dict[str, int] = {}
    for f in files:
        counts[f.name] = counts.get(f.name, 0) + 1
    if all(n == 1 for n in counts.values()):
        return {f: f.name for f in files}
    resolved = {f: f.resolve() for f in files}
    common = Path(os.path.commonpath([str(r.parent) for r in resolved.values()]))
    return {f: (resolved[f].relative_to(common).as_posix() if counts[f.name] > 1 else f.name) for f in files}


def _parquet_runs(path: Path, name: str) -> Iterator[RawRun | Quarantined | ShardVerdict]:
    """A SWE-Lego-style Parquet file, read exactly as ``run --swelego`` reads it."""
    from pipeline.sources import swelego

    unit = Unit(
        "swelego",
        path.parent.name,
        name,
        "",
        None,
        "gzip",
        dataset_label=path.parent.name,
        location=str(path),
    )
    yield from swelego.read_unit(unit, Limits())


def _is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def convert_files(files: list[Path], out: Path, *, step_limit: int = 250) -> ConvertResult:
    """Convert every run in ``files`` and write one JSON line per run to ``out``."""
    from pipeline.parsers.files import iter_trajectory_file

    config = Config(no_benchmarks=True, limits=Limits(step_limit=step_limit))
    ctx = Context(config=config, benchmarks=None, catalog_tasks=None)
    steps = [step(ctx) for step in STEPS if not step.corpus_level]
    lines: list[bytes] = []
    result = ConvertResult()
    names = uid_names(files)
    for path in files:
        # a file that gives no run at all is listed (one quarantine line) and reported as unusable
        if path.stat().st_size == 0:
            items: list[RawRun | Quarantined] = [
                Quarantined(f"{names[path]}#row=0", None, "unreadable", "empty file")
            ]
        else:
            read = list(
                _parquet_runs(path, names[path])
                if _is_parquet(path)
                else iter_trajectory_file(path, name=names[path])
            )
            items = [i for i in read if not isinstance(i, ShardVerdict)]
            failed = [v for v in read if isinstance(v, ShardVerdict) and not v.ok]
            if failed:
                items.append(
                    Quarantined(
                        f"{names[path]}#row=0", None, failed[0].reason or "unreadable", failed[0].detail[:200]
                    )
                )
        if not items:
            result.unusable.append(f"{path}: holds no runs")
        elif (
            all(isinstance(i, Quarantined) and i.reason in _UNUSABLE for i in items)
            and isinstance(last := items[-1], Quarantined)
            and last.source_uid.endswith("#row=0")
        ):
            result.unusable.append(f"{path}: {last.reason}: {last.detail[:200]}")
        fmt_of = {x.source_uid: x.origin for x in items if isinstance(x, RawRun)}
        position = {x.source_uid: i for i, x in enumerate(items)}
        batch, drop_frames, _ = run_steps(steps, items)
        quarantine, parse, convert, *later = drop_frames
        # runs that could not be read, then those that could not be converted (in file order),
        # then the later steps' drops in step order
        early = sorted([*parse.to_dicts(), *convert.to_dicts()], key=lambda d: position[d["source_uid"]])
        drops = [*quarantine.to_dicts(), *early, *(d for f in later for d in f.to_dicts())]
        for d in drops:
            lines.append(
                orjson.dumps(
                    {
                        "source_uid": d["source_uid"],
                        "format": fmt_of.get(d["source_uid"]),
                        "drop": {k: d[k] for k in ("stage", "reason", "detail")},
                    }
                )
            )
            result.by_format[f"{fmt_of.get(d['source_uid'], 'unknown')}/{d['stage']}/{d['reason']}"] += 1
            result.dropped += 1
        for row in batch.select("source_uid", "messages").iter_rows(named=True):
            lines.append(
                orjson.dumps(
                    {
                        "source_uid": row["source_uid"],
                        "format": fmt_of[row["source_uid"]],
                        "messages": row["messages"],
                    }
                )
            )
            result.by_format[f"{fmt_of[row['source_uid']]}/converted"] += 1
            result.converted += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"\n".join(lines) + (b"\n" if lines else b""))
    return result


def format_summary(by_format: Counter[str]) -> list[str]:
    """One line per input format: runs converted and the drops by stage/reason."""
    formats: dict[str, Counter[str]] = {}
    for key, n in by_format.items():
        fmt, _, what = key.partition("/")
        formats.setdefault(fmt, Counter())[what] += n
    lines = []
    for fmt in sorted(formats):
        c = formats[fmt]
        drops = sorted((k, n) for k, n in c.items() if k != "converted")
        detail = ", ".join(f"{k} {n}" for k, n in drops)
        lines.append(
            f"{fmt}: {c['converted']} converted, {sum(n for _, n in drops)} not converted"
            + (f" ({detail})" if detail else "")
        )
    return lines
