"""The state's records: a unit's summary, a commit's record, the ``(dataset, epoch)`` keys runs are
counted under, and the seal (a sha256 over canonical JSON) every record is read back through."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import orjson

# the records' format: 2: sha256s of named files; 3: the held store is an index into the unit caches
STATE_FORMAT = 3

# (dataset, epoch) an ingested run is counted under: dataset "" for quarantined input, epoch
# "none" for runs without one (pipeline.orchestration.process.epoch_key)
IngestKey = tuple[str, str]


class UnitMeta(TypedDict):
    """``cache/<unit>-<config>/meta.json``: what one unit read and decided (written last)."""

    unit: str
    source: str
    key: str
    url: str
    epoch: int | None
    verdict: str  # "ok" or the quarantine reason of a shard that failed verification
    ingested: dict[str, int]  # encode_ingested form
    counters: dict[str, int]
    raw_bytes: int


class UnitSummary(UnitMeta):
    """What ``process_unit`` returns: the meta and this call's wall and CPU seconds per step (not
    cached)."""

    seconds: dict[str, float]
    cpu_seconds: dict[str, float]


class CommitMeta(TypedDict, total=False):
    """What a run records about its decisions besides its number and units."""

    ingested: dict[str, int]  # encode_ingested form
    counters: dict[str, int]
    signature_scheme: str  # how the admitted runs' MinHash signatures were made
    raw_bytes: int
    files: dict[str, str]  # sha256 of every state file the record names (verified on read)
    state_format: int
    check: str  # the record's own seal


class CommitRecord(CommitMeta):
    """``commits/<seq>.json``: the units run ``seq`` decided, what they read, and how it signed."""

    seq: int
    units: list[str]


def encode_ingested(counts: Counter[IngestKey]) -> dict[str, int]:
    """The JSON form of ingested counts: ``"<dataset>|<epoch>"`` keys, sorted (the on-disk format
    of meta.json and commit records, so work dirs written before stay readable)."""
    return dict(sorted((f"{ds}|{ep}", n) for (ds, ep), n in counts.items()))


def decode_ingested(counts: dict[str, int]) -> Counter[IngestKey]:
    out: Counter[IngestKey] = Counter()
    for key, n in counts.items():
        ds, ep = key.rsplit("|", 1)  # the epoch never holds "|"
        out[ds, ep] += n
    return out


class StateDamaged(RuntimeError):
    """A state file is missing, truncated or altered: the message names it and the recovery."""


REBUILD_HINT = "run `trajpipe run --rebuild` with the same inputs to rebuild the state from the sources"


def seal_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with a ``check`` field: the sha256 of its canonical JSON without that field."""
    body = {k: v for k, v in record.items() if k != "check"}
    return {**body, "check": hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()}


def read_sealed(path: Path) -> dict[str, Any]:
    """A JSON record written with :func:`seal_record`; raises :class:`StateDamaged` unless it is whole."""
    try:
        record = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise StateDamaged(f"state file {path} is missing; {REBUILD_HINT}") from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise StateDamaged(f"state file {path} is damaged ({exc}); {REBUILD_HINT}") from None
    if not isinstance(record, dict) or seal_record(record).get("check") != record.get("check"):
        raise StateDamaged(f"state file {path} is damaged (its checksum does not match); {REBUILD_HINT}")
    return record
