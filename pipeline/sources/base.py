"""What every source shares: the unit of ingest work, its verdict and the quarantine of a
shard that fails."""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from pipeline.core.episode import Quarantined, QuarantineReason, RawRun
from pipeline.io.gzlines import ShardTooLarge

if TYPE_CHECKING:
    from pipeline.core.config import Config, Limits

# what a unit is read by (and its state key's prefix): one of a registered source's unit_sources
SourceName = str


@dataclass(frozen=True, slots=True)
class Unit:
    """One independently processable piece of input: a corpus chunk or a SWE-Lego file.

    ``sha256`` is the content identity that incremental ingestion keys on (over the
    uncompressed JSONL for view shards, over the gzip bytes for trace chunks, over the file bytes
    for SWE-Lego files).
    """

    source: SourceName
    base: str  # base URL (file://… or http(s)://…) or the SWE-Lego dataset name
    key: str  # chunk key relative to base, or file path
    sha256: str
    epoch: int | None = None
    sha_scope: str = "raw"  # "raw": over uncompressed bytes; "gzip": over the file bytes
    dataset_label: str = ""  # SWE-Lego "<dataset>" part of source_uid
    location: str = ""  # absolute path or URL to read
    # a part of a large Parquet file: row groups [first, last) whose first row is ``first_row``
    row_groups: tuple[int, int] | None = None
    first_row: int = 0

    @property
    def state_key(self) -> str:
        """The unit's name in the state: its content identity, and for corpus chunks also its key
        (two manifest entries declaring one sha256 are two units, each verified on its own)."""
        part = f"-rg{self.row_groups[0]}-{self.row_groups[1]}" if self.row_groups else ""
        if self.source != "swelego":
            part += "-k" + hashlib.sha256(self.key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{self.source}-{self.sha256}{part}"

    @property
    def url(self) -> str:
        return f"{self.base}/{self.key}"


@dataclass(frozen=True, slots=True)
class ShardVerdict:
    """Yielded last by a chunk reader: whether the shard verified and was read whole."""

    ok: bool
    reason: QuarantineReason | Literal[""] = ""
    detail: str = ""
    retry: bool = False  # could not be fetched: not decided now, fetched again by the next run


SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
SHA_PREFIX_RE = re.compile(r"^[0-9a-f]{12,64}$")  # trace chunk names carry the first 12+ digits


def quarantine_reason(exc: BaseException) -> QuarantineReason:
    if isinstance(exc, ShardTooLarge):
        return "chunk_too_large"
    if isinstance(exc, EOFError | zlib.error | gzip.BadGzipFile):
        return "bad_gzip"
    return "unreadable"


def shard_quarantine(
    unit: Unit, runs: list[RawRun], reason: QuarantineReason, detail: str
) -> list[Quarantined]:
    """A shard that fails verification: one entry per readable record, or one for the shard."""
    if not runs:
        return [Quarantined(unit.url, unit.epoch, reason, f"{unit.key}: {detail}")]
    return [Quarantined(r.source_uid, unit.epoch, reason, f"{unit.key}: {detail}") for r in runs]


class Source(Protocol):
    """A corpus source, registered once in ``pipeline.sources.SOURCES``: the config key naming its
    locations, the units it lists there (the driver's), and how one unit is read (a worker's)."""

    key: str  # the Config field holding its locations (`trajpipe run --<key>`)
    folder: bool | None  # a local location must be a folder (True) or may also be a file (None)
    unit_sources: tuple[SourceName, ...]  # the Unit.source of the units it lists

    def list_units(self, config: Config) -> tuple[list[Unit], list[Quarantined]]:
        """Every unit at the configured locations, and a quarantine entry per refused listing."""
        ...

    def read_unit(self, unit: Unit, limits: Limits) -> Iterator[RawRun | Quarantined | ShardVerdict]:
        """Stream one unit: its runs, the records that cannot be runs, then its verdict."""
        ...
