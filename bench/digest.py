"""Byte identity of everything a run writes: the published tree, the ledger and stats.json.

    .venv/bin/python bench/digest.py CORPUS_DIR [--workers 2] [--keep WORKDIR] [--benchmarks DIR]

Runs the whole pipeline on a `trajpipe synth` corpus (fresh work dir, the real benchmark tables
when ../shared has them, else the corpus's own) and prints one sha256 over every output file
with a line per file, so a speed-only change can be checked: the digest must not move.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from pipeline.core.config import Config
from pipeline.orchestration.runner import run_pipeline

SHARED_BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def output_files(work: Path) -> list[tuple[str, Path]]:
    """(name, path) of every output: the published build (through the link) and the ledger."""
    publish = (work / "publish").resolve()
    out = [(f"publish/{p.relative_to(publish)}", p) for p in sorted(publish.rglob("*")) if p.is_file()]
    out += [(f"ledger/{p.name}", p) for p in sorted((work / "ledger").iterdir()) if p.is_file()]
    return out


def digest(work: Path) -> tuple[str, list[str]]:
    total = hashlib.sha256()
    lines = []
    for name, path in output_files(work):
        if name == "publish/MANIFEST.json":  # names the build id (time-derived); its files are hashed here
            continue
        h = hashlib.sha256(path.read_bytes()).hexdigest()
        total.update(f"{name}\0{h}\n".encode())
        lines.append(f"{h[:16]}  {name}")
    return total.hexdigest(), lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="work dir to use and keep")
    ap.add_argument("--quiet", action="store_true", help="print the total digest only")
    ap.add_argument(
        "--benchmarks",
        type=Path,
        default=None,
        help="benchmark tables [default: ../shared's, else the corpus's]",
    )
    args = ap.parse_args()
    default = SHARED_BENCH if any(SHARED_BENCH.glob("*.jsonl")) else args.corpus / "benchmarks"
    bench = args.benchmarks or default
    if not bench.is_dir():  # a corpus synthesised from real tables carries none of its own
        sys.exit(f"digest: no benchmark tables at {bench}; pass --benchmarks DIR")
    work = args.keep or Path(tempfile.mkdtemp(prefix="trajpipe-digest-"))
    cfg = Config(
        affine=(str(args.corpus / "affine"),),
        swelego=(str(args.corpus / "swelego"),),
        catalog=str(args.corpus / "catalog"),
        benchmarks=str(bench),
        workdir=str(work),
        workers=args.workers,
    )
    run_pipeline(cfg, rebuild=True)
    total, lines = digest(work)
    if not args.quiet:
        print("\n".join(lines))
    print(f"digest {total}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
