"""Affine's public corpus: manifests, view shards and trace chunks.

Listing (driver) reads the manifest chain; reading (worker) streams one chunk line by line,
verifying its sha256 as it goes. Nothing here interprets a record beyond its top-level shape.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from pipeline.core.config import Config, Limits
from pipeline.core.episode import Quarantined, RawRun, RunKind, quarantine_reason_named
from pipeline.io.gzlines import STREAM_ERRORS, iter_gzip_lines
from pipeline.io.http import (
    FetchFailed,
    UnsafeKey,
    _Counting,
    base_url_of,
    open_location,
    read_json,
    redact_url,
    resolve_key,
)
from pipeline.sources.base import SHA256_RE, SHA_PREFIX_RE, ShardVerdict, Unit, quarantine_reason

ORIGIN = "Affine corpus"
MAX_MANIFEST_CHAIN = 100_000


class ManifestError(ValueError):
    pass


def _manifest_chain(base: str, current: dict[str, Any]) -> list[dict[str, Any]]:
    """Current revision first, then every older one via ``prev_manifest`` (cycle-safe)."""
    chain = [current]
    seen: set[str] = set()
    prev = current.get("prev_manifest")
    while isinstance(prev, str) and prev and prev not in seen and len(chain) < MAX_MANIFEST_CHAIN:
        seen.add(prev)
        try:
            rev = read_json(resolve_key(base, f"corpus/manifests/{prev}.json"))
        except (OSError, ValueError):
            break  # an unreachable older revision only makes epochs younger, never loses shards
        if not isinstance(rev, dict):
            break
        chain.append(rev)
        prev = rev.get("prev_manifest")
    return chain


def list_units(location: str, *, base_url: str | None = None) -> tuple[list[Unit], list[Quarantined]]:
    """Every active view shard and every trace chunk of the corpus at ``location``.

    A shard's epoch is the ``corpus_epoch`` of the oldest revision listing it. Every listed entry
    ends as a unit or as one quarantine entry with its reason: a non-object entry, a key that
    escapes the corpus root, a sha256 that is not 64 hex digits, an ``active`` that is not a
    boolean, or a key listed twice with different sha256s (neither can be trusted).
    """
    read_base = base_url_of(location)
    base = redact_url((base_url or read_base).rstrip("/"))  # uids and messages never hold a password
    shown = redact_url(read_base)
    try:
        current = read_json(resolve_key(read_base, "corpus/manifest.json"))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"cannot read {shown}/corpus/manifest.json: {exc}") from None
    if not isinstance(current, dict) or not isinstance(current.get("shards"), list):
        raise ManifestError(f"{shown}/corpus/manifest.json has no shard list")
    first_epoch: dict[str, int] = {}
    for rev in reversed(_manifest_chain(read_base, current)):
        epoch = rev.get("corpus_epoch")
        for shard in rev.get("shards") or []:
            if isinstance(shard, dict) and isinstance(shard.get("key"), str) and isinstance(epoch, int):
                first_epoch.setdefault(shard["key"], epoch)
    units: list[Unit] = []
    refused: list[Quarantined] = []
    cur_epoch = current.get("corpus_epoch") if isinstance(current.get("corpus_epoch"), int) else None
    where = f"{base}/corpus/manifest.json"
    listed: dict[str, list[tuple[int, str]]] = {}  # key -> [(entry index, sha256)]
    for i, shard in enumerate(current["shards"]):
        uid = f"{where}#shard={i}"
        if not isinstance(shard, dict):
            refused.append(
                Quarantined(
                    uid,
                    cur_epoch,
                    "bad_manifest_entry",
                    f"shard entry {i} is a JSON {type(shard).__name__}, not an object",
                )
            )
            continue
        active = shard.get("active", True)
        if active is False:
            continue
        key, sha = shard.get("key"), shard.get("sha256")
        if active is not True:
            refused.append(
                Quarantined(
                    uid,
                    cur_epoch,
                    "bad_manifest_entry",
                    f"shard entry {i}: active must be true or false, not {active!r:.40}",
                )
            )
        elif not isinstance(key, str) or not isinstance(sha, str):
            refused.append(
                Quarantined(
                    uid, cur_epoch, "bad_manifest_entry", f"shard entry {i} without key/sha256 strings"
                )
            )
        elif not SHA256_RE.match(sha.lower()):
            refused.append(
                Quarantined(
                    uid, cur_epoch, "bad_manifest_entry", f"shard entry {i}: sha256 is not 64 hex digits"
                )
            )
        else:
            listed.setdefault(key, []).append((i, sha.lower()))
    for key, entries in listed.items():
        if len({sha for _, sha in entries}) > 1:  # one key cannot hold two contents
            refused += [
                Quarantined(
                    f"{where}#shard={i}",
                    cur_epoch,
                    "bad_manifest_entry",
                    f"shard entry {i}: key listed {len(entries)} times with different sha256",
                )
                for i, _ in entries
            ]
            continue
        refused += [
            Quarantined(
                f"{where}#shard={i}",
                cur_epoch,
                "bad_manifest_entry",
                f"shard entry {i}: a repeat of entry {entries[0][0]} (same key and sha256)",
            )
            for i, _ in entries[1:]
        ]
        try:
            loc = resolve_key(read_base, key)
        except UnsafeKey as exc:
            refused.append(Quarantined(f"{where}#shard={entries[0][0]}", cur_epoch, "unsafe_key", str(exc)))
            continue
        units.append(
            Unit(
                "affine-view", base, key, entries[0][1], first_epoch.get(key, cur_epoch), "raw", location=loc
            )
        )
    units.extend(_trace_units(read_base, base, cur_epoch, refused))
    units.sort(key=lambda u: (u.source, u.key))
    return units, refused


def _trace_units(read_base: str, base: str, epoch: int | None, refused: list[Quarantined]) -> list[Unit]:
    entries: list[tuple[str, str, int | None]] = []
    try:
        listing = read_json(resolve_key(read_base, "traces/manifest.json"))
    except (OSError, ValueError):
        listing = None
    where = f"{base}/traces/manifest.json"
    if isinstance(listing, dict) and isinstance(listing.get("chunks"), list):
        for i, c in enumerate(listing["chunks"]):
            if not (
                isinstance(c, dict)
                and isinstance(c.get("key"), str)
                and isinstance(c.get("sha256"), str)
                and SHA_PREFIX_RE.match(c["sha256"].lower())
            ):
                refused.append(
                    Quarantined(
                        f"{where}#chunk={i}",
                        epoch,
                        "bad_manifest_entry",
                        f"chunk entry {i}: needs a key and a sha256 of 12 to 64 hex digits",
                    )
                )
                continue
            ep = c.get("corpus_epoch", c.get("epoch"))
            entries.append((c["key"], c["sha256"].lower(), ep if isinstance(ep, int) else epoch))
    elif read_base.startswith("file://"):
        # No listing: every chunk, its sha12 taken from its name (verified by prefix on read).
        root = Path(read_base[len("file://") :])
        for p in sorted((root / "traces" / "chunks").glob("*.jsonl.gz")):
            stem = p.name[: -len(".jsonl.gz")]
            sha = stem.rsplit("-", 1)[-1].lower()
            if not SHA_PREFIX_RE.match(sha):
                refused.append(
                    Quarantined(
                        f"{base}/traces/chunks/{p.name}",
                        epoch,
                        "bad_manifest_entry",
                        "chunk name carries no sha256 prefix of 12+ hex digits",
                    )
                )
                continue
            entries.append((f"traces/chunks/{p.name}", sha, epoch))
    out = []
    seen: set[str] = set()
    for key, sha, ep in entries:
        try:
            loc = resolve_key(read_base, key)
        except UnsafeKey as exc:
            refused.append(Quarantined(f"{base}/{key!r}", ep, "unsafe_key", str(exc)))
            continue
        if key in seen:
            refused.append(
                Quarantined(f"{base}/{key}#repeat", ep, "bad_manifest_entry", "chunk listed twice")
            )
            continue
        seen.add(key)
        out.append(Unit("affine-trace", base, key, sha, ep, "gzip", location=loc))
    return out


REQUIRED = {
    "affine-view": ("nodes", "instance_id"),
    "affine-trace": ("trace", "task"),
}


def read_unit(unit: Unit, limits: Limits) -> Iterator[RawRun | Quarantined | ShardVerdict]:
    """Stream one chunk: a RawRun per good line, a Quarantined per bad line, then a verdict."""
    kind: RunKind = "view" if unit.source == "affine-view" else "trace"
    raw_sha = hashlib.sha256() if unit.sha_scope == "raw" else None
    try:
        stream = open_location(unit.location)
    except OSError as exc:
        yield ShardVerdict(
            False, "unreadable", f"{type(exc).__name__}: {exc}"[:500], retry=isinstance(exc, FetchFailed)
        )
        return
    counting = _Counting(stream) if unit.sha_scope == "gzip" else None
    try:
        with stream:
            lines = iter_gzip_lines(
                counting if counting is not None else stream,  # type: ignore[arg-type]
                max_chunk_bytes=limits.max_chunk_bytes,
                max_record_bytes=limits.max_record_bytes,
                raw_sha=raw_sha,
            )
            for line_no, line, problem in lines:
                uid = f"{unit.url}#L{line_no}"
                if problem:
                    yield Quarantined(
                        uid,
                        unit.epoch,
                        quarantine_reason_named(problem),
                        f"{unit.key} line {line_no}: over {limits.max_record_bytes} bytes",
                    )
                    continue
                assert line is not None
                if not line.strip():
                    continue
                yield _record(unit, kind, uid, line_no, line)
            if counting is not None:
                # drain so the hash covers the whole file (gzip trailer, concatenated members)
                while counting.read(1 << 20):
                    pass
    except STREAM_ERRORS as exc:
        yield ShardVerdict(
            False,
            quarantine_reason(exc),
            f"{type(exc).__name__}: {exc}"[:500],
            retry=isinstance(exc, FetchFailed),
        )
        return
    got = raw_sha.hexdigest() if raw_sha is not None else counting.sha.hexdigest()  # type: ignore[union-attr]
    want = unit.sha256.lower()
    if not (
        SHA256_RE.match(want) or (unit.source == "affine-trace" and SHA_PREFIX_RE.match(want))
    ) or not got.startswith(want):
        yield ShardVerdict(False, "bad_sha256", f"expected {unit.sha256}, got {got}")
        return
    yield ShardVerdict(True)


def _record(unit: Unit, kind: RunKind, uid: str, line_no: int, line: bytes) -> RawRun | Quarantined:
    where = f"{unit.key} line {line_no}"
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return Quarantined(uid, unit.epoch, "bad_json", f"{where}: {exc}")
    if not isinstance(obj, dict):
        return Quarantined(
            uid, unit.epoch, "not_object", f"{where}: a JSON {type(obj).__name__}, not an object"
        )
    missing = [k for k in REQUIRED[unit.source] if k not in obj]
    if missing:
        return Quarantined(uid, unit.epoch, "missing_field", f"{where}: missing {', '.join(missing)}")
    return RawRun(uid, ORIGIN, kind, unit.epoch, obj, len(line))


class AffineSource:
    """The Affine corpora of ``Config.affine``, each with its public base URL when one is given."""

    key: str = "affine"
    folder: bool | None = True
    unit_sources: tuple[str, ...] = ("affine-view", "affine-trace")

    def list_units(self, config: Config) -> tuple[list[Unit], list[Quarantined]]:
        units: list[Unit] = []
        refused: list[Quarantined] = []
        for loc, base_url in config.affine_sources():
            found, bad = list_units(loc, base_url=base_url)
            units += found
            refused += bad
        return units, refused

    def read_unit(self, unit: Unit, limits: Limits) -> Iterator[RawRun | Quarantined | ShardVerdict]:
        return read_unit(unit, limits)


SOURCE = AffineSource()
