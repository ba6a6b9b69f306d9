"""Run configuration: paths, limits and thresholds. Its hash keys cached stage outputs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from pipeline.fileio import file_sha256

CACHE_FORMAT = 2  # bump when what a unit cache holds changes (old caches are then redone)
_ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    """The package version, defined once: pyproject.toml's ``[project] version``."""
    try:
        return importlib.metadata.version("trajpipe")
    except importlib.metadata.PackageNotFoundError:  # a source checkout run without installing
        project: dict[str, Any] = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]
        return str(project["version"])


VERSION = _version()


@cache
def code_fingerprint() -> str:
    """sha256 over the package's sources (pipeline/ and schemas/): any code change is a new cache
    key, whether or not the version was bumped."""
    h = hashlib.sha256()
    for sub in ("pipeline", "schemas"):
        for path in sorted((_ROOT / sub).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".txt", ".json", ".toml") and "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(_ROOT).as_posix()}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Limits:
    max_record_bytes: int = 64 * 1024 * 1024  # one JSON line
    max_chunk_bytes: int = 4 * 1024 * 1024 * 1024  # decompressed chunk (gzip-bomb guard)
    step_limit: int = 250  # mini-swe-agent's default step limit
    batch_runs: int = 64  # runs per in-memory batch inside a unit (memory stays flat per chunk)


@dataclass(frozen=True)
class DedupParams:
    num_perm: int = 128
    bands: int = 16
    rows: int = 8
    threshold: float = 0.8
    seed: int = 1
    shingle: int = 5


@dataclass(frozen=True)
class Config:
    affine: tuple[str, ...] = ()  # corpus directories or https:// base URLs
    swelego: tuple[str, ...] = ()  # files or folders of SWE-Lego Parquet/JSONL
    catalog: str | None = None
    benchmarks: str | None = None
    no_benchmarks: bool = False
    workdir: str = "data"
    executor: str = "local"
    workers: int = 2
    ray_address: str | None = None
    limits: Limits = field(default_factory=Limits)
    dedup: DedupParams = field(default_factory=DedupParams)
    # content fingerprint of the reference inputs (benchmark tables, catalog tasks), set by the
    # driver: cached stage outputs depend on them, so they are part of the stage hash
    references: str = ""

    def __post_init__(self) -> None:
        if self.executor not in ("local", "ray"):
            raise ValueError(f"executor must be 'local' or 'ray', not {self.executor!r}")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, not {self.workers}")

    def stage_hash(self) -> str:
        """Hash of everything that changes what a stage outputs (not paths or executor)."""
        relevant = {
            "code": f"{VERSION}+{code_fingerprint()}",
            "cache": CACHE_FORMAT,
            "limits": asdict(self.limits),
            "dedup": asdict(self.dedup),
            "no_benchmarks": self.no_benchmarks,
            "references": self.references,
        }
        return hashlib.sha256(orjson.dumps(relevant, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]

    def with_references(self) -> Config:
        """This config with ``references`` filled in from the files the stages will read."""
        parts: list[str] = []
        if self.benchmarks and not self.no_benchmarks:
            root = Path(self.benchmarks)
            files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
            parts += [f"bench:{p.relative_to(root) if root.is_dir() else p.name}:{file_sha256(p)}" for p in files]
        if self.catalog and (Path(self.catalog) / "tasks.parquet").exists():
            parts.append(f"catalog:{file_sha256(Path(self.catalog) / 'tasks.parquet')}")
        return replace(self, references=hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16])

    @staticmethod
    def load(path: str | Path | None, **overrides: Any) -> Config:
        """Read a TOML config (keys as the field names) and apply non-None CLI overrides."""
        data: dict[str, Any] = {}
        if path is not None:
            data = tomllib.loads(Path(path).read_text())
        data.update({k: v for k, v in overrides.items() if v is not None})
        if "limits" in data and isinstance(data["limits"], dict):
            data["limits"] = Limits(**data["limits"])
        if "dedup" in data and isinstance(data["dedup"], dict):
            data["dedup"] = DedupParams(**data["dedup"])
        for key in ("affine", "swelego"):
            if key in data:
                v = data[key]
                data[key] = (v,) if isinstance(v, str) else tuple(v)
        known = {f.name for f in fields(Config)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return Config(**data)
