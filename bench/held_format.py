"""The unit caches' kept rows as Arrow IPC (LZ4 buffers, today) vs the LZ4 Parquet written before,
side by side on real unit outputs: CPU of the worker's write and of the driver's reads, bytes on disk.

    .venv/bin/python bench/digest.py bench/out/corpus-r806-e2-s11 --keep /tmp/held-work
    .venv/bin/python bench/held_format.py /tmp/held-work --reps 7

Every kept file of the work dir's unit caches (either format) is read once into its parts (the
tables the worker wrote). Then, per rep and format, interleaved:
  - unit write: each unit's rows through ``UnitWriter`` (sort by dataset and source_uid, the
    publishing size, the encode, fsync, sha256, meta), as ``process_unit`` writes them;
  - encode: only the kept file's encode (``KeptWriter``) of the same parts;
  - index read: the driver's read of each unit's index columns into polars (``_index_of``);
  - publish read: the publisher's read of the published columns of every part, with what each
    part holds (``State.held_table`` reads parts pruned by it).
CPU is ``time.process_time`` (all threads); medians (min-max) over the reps.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from pipeline.store.held import INDEX_COLUMNS, held_file, read_held
from pipeline.store.records import UnitMeta
from pipeline.store.unitfiles import KEPT_NAMES, KeptWriter, UnitWriter
from schemas.run import DROPS, PUBLISHED_NAMES, empty

META: UnitMeta = {
    "unit": "u",
    "source": "affine",
    "key": "u",
    "url": "",
    "epoch": None,
    "verdict": "ok",
    "ingested": {},
    "counters": {},
    "raw_bytes": 0,
}


def cpu(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workdir", type=Path, help="a work dir with unit caches (bench/digest.py --keep)")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    sources = sorted(p for name in KEPT_NAMES for p in (args.workdir / "state" / "cache").glob(f"*/{name}"))
    units = []
    for path in sources:
        held = held_file(path)
        units.append([held.read([g]) for g in range(held.num_parts)])
    rows = sum(t.num_rows for u in units for t in u)
    arrow_mb = sum(t.nbytes for u in units for t in u) / 1e6
    print(f"{len(units)} units, {rows} rows, {arrow_mb:.1f} MB as Arrow")
    empty_kept = pl.from_arrow(units[0][0].slice(0, 0))
    assert isinstance(empty_kept, pl.DataFrame)
    frames = [[pl.DataFrame(pl.from_arrow(t)) for t in parts] for parts in units]

    out = Path(tempfile.mkdtemp(prefix="held-format-"))
    steps = ("unit write", "encode", "index read", "publish read")
    times: dict[str, dict[str, list[float]]] = {n: {s: [] for s in steps} for n in KEPT_NAMES}
    size: dict[str, int] = {}
    try:
        for _ in range(args.reps):
            for name in KEPT_NAMES:
                dirs = [out / name / f"u{i}" for i in range(len(units))]
                files = [d / name for d in dirs]

                def unit_write(dirs: list[Path] = dirs, name: str = name) -> None:
                    for d, parts in zip(dirs, frames, strict=True):
                        w = UnitWriter(d, name)
                        for f in parts:
                            w.write(f)
                        w.finish(empty_kept, empty(DROPS), META)

                def encode(files: list[Path] = files, name: str = name) -> None:
                    for f, parts in zip(files, units, strict=True):
                        w = KeptWriter(
                            f.with_suffix(".enc"), parts[0].schema, parquet=name.endswith(".parquet")
                        )
                        for t in parts:
                            w.write(t)
                        w.close()

                def index_read(files: list[Path] = files) -> None:
                    for f in files:
                        read_held(held_file(f), INDEX_COLUMNS)

                def publish_read(files: list[Path] = files) -> None:
                    for f in files:
                        held = held_file(f)
                        want = [g for g, _ in enumerate(held.groups)]
                        held.read(want, PUBLISHED_NAMES)

                for step, fn in zip(steps, (unit_write, encode, index_read, publish_read), strict=True):
                    times[name][step].append(cpu(fn))
                size[name] = sum(f.stat().st_size for f in files)
    finally:
        shutil.rmtree(out, ignore_errors=True)

    def cell(v: list[float]) -> str:
        return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"

    print(f"\nCPU s, median (min-max) of {args.reps} interleaved reps\n")
    print("| kept file | " + " | ".join(steps) + " | write + driver reads | MB on disk |")
    print("|---|" + "---:|" * (len(steps) + 2))
    for name in KEPT_NAMES:
        total = [
            sum(x)
            for x in zip(*(times[name][s] for s in ("unit write", "index read", "publish read")), strict=True)
        ]
        cells = " | ".join(cell(times[name][s]) for s in steps)
        print(f"| {name} | {cells} | {cell(total)} | {size[name] / 1e6:.1f} |")


if __name__ == "__main__":
    main()
