"""Run configuration: paths, limits and thresholds. Its hash keys cached stage outputs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, get_type_hints

import orjson

from pipeline.io.fileio import file_sha256

CACHE_FORMAT = 2  # bump when what a unit cache holds changes (old caches are then redone)
_ROOT = Path(__file__).resolve().parents[2]


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
            if (
                path.is_file()
                and path.suffix in (".py", ".txt", ".json", ".toml")
                and "__pycache__" not in path.parts
            ):
                h.update(f"{path.relative_to(_ROOT).as_posix()}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


class ConfigError(ValueError):
    """A bad option or config key; the message is one line naming it (``--catalog: …``)."""


def _option(key: str, section: str = "") -> str:
    """How the user spells a key: ``--ray-address`` for a run option, ``[dedup] bands`` in a section."""
    return f"[{section}] {key}" if section else "--" + key.replace("_", "-")


@dataclass(frozen=True)
class Limits:
    max_record_bytes: int = 64 * 1024 * 1024  # one JSON line
    max_chunk_bytes: int = 4 * 1024 * 1024 * 1024  # decompressed chunk (gzip-bomb guard)
    step_limit: int = 250  # mini-swe-agent's default step limit
    batch_runs: int = 64  # runs per in-memory batch inside a unit (memory stays flat per chunk)

    def __post_init__(self) -> None:
        for f in fields(self):
            _need(
                isinstance(getattr(self, f.name), int) and getattr(self, f.name) >= 1,
                "limits",
                f.name,
                "must be a whole number of at least 1",
            )


@dataclass(frozen=True)
class DedupParams:
    num_perm: int = 128  # MinHash permutations
    bands: int = 16  # LSH bands × rows must fit in num_perm
    rows: int = 8
    threshold: float = 0.8  # Jaccard at or above which two runs are near-duplicates, in (0, 1]
    seed: int = 1
    shingle: int = 5  # tokens per shingle

    def __post_init__(self) -> None:
        for name in ("num_perm", "bands", "rows", "shingle"):
            _need(getattr(self, name) >= 1, "dedup", name, "must be at least 1")
        _need(
            0 < self.threshold <= 1,
            "dedup",
            "threshold",
            f"must be in (0, 1], not {self.threshold} (near-duplicate detection would be off)",
        )
        _need(
            self.bands * self.rows <= self.num_perm,
            "dedup",
            "bands",
            f"bands × rows = {self.bands * self.rows} exceeds num_perm = {self.num_perm}",
        )


def _need(ok: bool, section: str, key: str, problem: str) -> None:
    if not ok:
        raise ConfigError(f"{_option(key, section)}: {problem}")


def _typed(section: str, cls: type, data: object) -> Any:
    """``cls(**data)`` with each key and value type checked, so a typo is one line, not a TypeError."""
    if not isinstance(data, dict):
        raise ConfigError(f"[{section}]: must be a table of keys, not {data!r}")
    hints = get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"[{section}] {key}: unknown key (known: {', '.join(sorted(known))})")
        want = hints[key]
        ok = (
            (isinstance(value, int) and not isinstance(value, bool))
            if want is int
            else (isinstance(value, (int, float)) and not isinstance(value, bool))
        )
        if not ok:
            kind = "a whole number" if want is int else "a number"
            raise ConfigError(f"[{section}] {key}: must be {kind}, not {value!r}")
    return cls(**{k: float(v) if hints[k] is float else v for k, v in data.items()})


URL_SCHEMES = ("http://", "https://", "file://")


def is_url(location: str) -> bool:
    """A location with a scheme (``https://``, ``hf://``, …) rather than a local path."""
    head, sep, _ = location.partition("://")
    return bool(sep) and head.isascii() and head.replace("+", "").isalnum() and len(head) > 1


@dataclass(frozen=True)
class Config:
    affine: tuple[str, ...] = ()  # corpus directories or https:// base URLs
    # public base URL of each --affine corpus (same order), used in source_uids and the card instead
    # of where it was read from: the same corpus mirrored anywhere gives the same uids
    affine_base_url: tuple[str, ...] = ()
    swelego: tuple[str, ...] = ()  # files or folders of SWE-Lego Parquet/JSONL, or hf:// / fsspec URLs
    catalog: str | None = None
    benchmarks: str | None = None
    no_benchmarks: bool = False
    workdir: str = "data"
    executor: str = "local"
    workers: int = 2
    ray_address: str | None = None
    limits: Limits = field(default_factory=Limits)
    dedup: DedupParams = field(default_factory=DedupParams)
    # the user-level cache of what is derived from the reference inputs, shared by every work dir
    # (pipeline/reference/cache.py; None: $TRAJPIPE_CACHE, else $XDG_CACHE_HOME/trajpipe, else
    # ~/.cache/trajpipe). Its entries are keyed by content, so it is not part of the stage hash.
    cache_dir: str | None = None
    # content fingerprint of the reference inputs (benchmark tables, catalog tasks), set by the
    # driver: cached stage outputs depend on them, so they are part of the stage hash
    references: str = ""

    def __post_init__(self) -> None:
        if self.executor not in ("local", "ray"):
            raise ConfigError(f"--executor: must be 'local' or 'ray', not {self.executor!r}")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ConfigError(f"--workers: must be at least 1, not {self.workers!r}")
        if self.no_benchmarks and self.benchmarks:
            raise ConfigError(f"--no-benchmarks: cannot be combined with --benchmarks {self.benchmarks}")
        if self.affine_base_url and len(self.affine_base_url) != len(self.affine):
            raise ConfigError(
                f"--affine-base-url: give one per --affine ({len(self.affine)} corpora, "
                f"{len(self.affine_base_url)} base URLs)"
            )
        for url in self.affine_base_url:
            if not url.startswith(URL_SCHEMES) or url.rstrip("/").endswith("://"):
                raise ConfigError(f"--affine-base-url: {url!r} is not an http(s):// or file:// URL")

    def affine_sources(self) -> list[tuple[str, str | None]]:
        """(where to read, base URL for uids or None = the location itself) per --affine corpus."""
        bases: tuple[str | None, ...] = self.affine_base_url or (None,) * len(self.affine)
        return list(zip(self.affine, bases, strict=True))

    def check_inputs(self) -> None:
        """Refuse, with one line naming the option, a local input or work dir that cannot be used.

        URLs are checked when read (the network may be slow); local paths are checked here, before
        any work, so a typo never runs a build that silently skipped a step. The sources' inputs
        are checked first, by ``pipeline.sources.check_inputs``."""
        if self.catalog is not None:
            check_exists(self.catalog, "--catalog", folder=True)
            if (
                not (Path(self.catalog) / "tasks.parquet").is_file()
                and not (Path(self.catalog) / "runs").is_dir()
            ):
                raise ConfigError(f"--catalog: {self.catalog} has neither tasks.parquet nor runs/")
        if self.benchmarks is not None and not self.no_benchmarks:
            check_exists(self.benchmarks, "--benchmarks", folder=None)
        wd = Path(self.workdir)
        if wd.exists() and not wd.is_dir():
            raise ConfigError(f"--workdir: {self.workdir} is a file, not a folder")

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
            parts += [
                f"bench:{p.relative_to(root) if root.is_dir() else p.name}:{file_sha256(p)}" for p in files
            ]
        if self.catalog and (Path(self.catalog) / "tasks.parquet").exists():
            parts.append(f"catalog:{file_sha256(Path(self.catalog) / 'tasks.parquet')}")
        return replace(self, references=hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16])

    @staticmethod
    def load(path: str | Path | None, **overrides: Any) -> Config:
        """Read a TOML config (keys as the field names) and apply non-None CLI overrides.

        Every key and value is checked here: a problem raises ``ConfigError`` naming the key."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text())
            except FileNotFoundError:
                raise ConfigError(f"--config: {path} does not exist") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"--config: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                ) from None
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(f"--config: {path} is not valid TOML: {exc}") from None
        # a toggle given on the command line wins over the file's opposite
        if overrides.get("benchmarks") is not None:
            data.pop("no_benchmarks", None)
        if overrides.get("no_benchmarks"):
            data.pop("benchmarks", None)
        data.update({k: v for k, v in overrides.items() if v is not None})
        known = {f.name for f in fields(Config)} - {"references"}
        for key in data:
            if key not in known:
                raise ConfigError(f"config key {key!r}: unknown (known: {', '.join(sorted(known))})")
        if "limits" in data:
            data["limits"] = _typed("limits", Limits, data["limits"])
        if "dedup" in data:
            data["dedup"] = _typed("dedup", DedupParams, data["dedup"])
        hints = get_type_hints(Config)
        for f in fields(Config):
            if f.name not in data or f.name in ("limits", "dedup"):
                continue
            v = data[f.name]
            if hints[f.name] == tuple[str, ...]:
                v = (v,) if isinstance(v, str) else v
                if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                    raise ConfigError(f"{_option(f.name)}: must be a path or a list of paths, not {v!r}")
                data[f.name] = tuple(v)
            elif hints[f.name] is bool and not isinstance(v, bool):
                raise ConfigError(f"{_option(f.name)}: must be true or false, not {v!r}")
            elif hints[f.name] is int and (isinstance(v, bool) or not isinstance(v, int)):
                raise ConfigError(f"{_option(f.name)}: must be a whole number, not {v!r}")
            elif hints[f.name] in (str, str | None) and not isinstance(v, str):
                raise ConfigError(f"{_option(f.name)}: must be a string, not {v!r}")
        return Config(**data)


def check_exists(location: str, option: str, *, folder: bool | None) -> None:
    """``location`` exists (and is a folder when ``folder``), else one line naming ``option``."""
    p = Path(location)
    if not p.exists():
        raise ConfigError(f"{option}: {location} does not exist")
    if folder and not p.is_dir():
        raise ConfigError(f"{option}: {location} is a file, not a folder")
