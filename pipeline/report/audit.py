"""Audit: why every run was dropped, rendered from the ledger and the published trees (never logs).

``build_report`` reads ``workdir/ledger/drops.parquet``, ``workdir/ledger/stats.json`` and the
shards under ``workdir/publish/``; it returns a JSON-ready dict that ``render_report`` prints as
rich tables and ``write_html`` turns into a self-contained page with inline SVG charts.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from rich.console import Console
from rich.table import Table

from pipeline.io.fileio import atomic_write_text
from pipeline.leaks.solution import explain_detail
from pipeline.stages import STAGE_ORDER
from pipeline.store.state import State
from schemas.run import DROPS, empty

# Funnel order: the declared step order (a run is dropped by the first stage that drops it).
STAGES: list[str] = list(STAGE_ORDER)
COUNTER_GROUPS: list[str] = [
    "parse/dialect",
    "dialect_turns",
    "dialect_drops",
    "format_runs",
    "format_drops",
    "convert/tool",
    "scrub",
]
UNKNOWN_DATASET = "(unknown)"
DATASET_PREFIX = "mini-coder-"  # shown once in the table title, so the key column stays short


class DamagedLedger(ValueError):
    """The ledger files cannot be read; one line naming the file."""


def _read_drops(workdir: Path) -> pl.DataFrame:
    path = workdir / "ledger" / "drops.parquet"
    if not path.is_file():
        return empty(DROPS)
    try:
        frame = pl.read_parquet(path)
        return frame.with_columns(
            pl.col("dataset").fill_null("").cast(pl.Utf8), pl.col("epoch").cast(pl.Int32)
        )
    except Exception as exc:
        raise DamagedLedger(
            f"{path} cannot be read ({type(exc).__name__}); run `trajpipe run` again"
        ) from None


def _read_stats(workdir: Path) -> dict[str, Any]:
    path = workdir / "ledger" / "stats.json"
    if not path.is_file():
        return {}
    try:
        stats = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise DamagedLedger(
            f"{path} cannot be read ({type(exc).__name__}); run `trajpipe run` again"
        ) from None
    if not isinstance(stats, dict):
        raise DamagedLedger(f"{path} is not a JSON object; run `trajpipe run` again")
    return stats


def known_epochs(workdir: Path) -> list[int]:
    """The corpus epochs this build ingested (stats.json), for checking ``--epoch``."""
    by_epoch = _read_stats(workdir).get("ingested", {}).get("by_epoch", {})
    return sorted(int(e) for e in by_epoch if str(e).lstrip("-").isdigit())


def _shards(workdir: Path) -> list[Path]:
    root = workdir / "publish"
    return sorted(root.glob("*/data/train-*.parquet")) if root.is_dir() else []


def _published(workdir: Path) -> pl.DataFrame:
    """source_uid, dataset, shard and epoch of every published row.

    Shards carry no epoch; it comes from the state's run store (``state/published``) when present.
    """
    parts = [
        pl.read_parquet(p, columns=["source_uid"]).with_columns(
            pl.lit(p.parent.parent.name).alias("dataset"),
            pl.lit(str(p.relative_to(workdir / "publish"))).alias("shard"),
        )
        for p in _shards(workdir)
    ]
    frame = (
        pl.concat(parts)
        if parts
        else pl.DataFrame(schema={"source_uid": pl.Utf8, "dataset": pl.Utf8, "shard": pl.Utf8})
    )
    # Only committed parts count (a killed run may leave uncommitted files behind).
    store = (
        State(workdir).published(columns=["source_uid", "epoch"])
        if (workdir / "state" / "published").is_dir()
        else None
    )
    if store is not None and store.height:
        epochs = store.with_columns(pl.col("epoch").cast(pl.Int32)).unique("source_uid", keep="last")
        return frame.join(epochs, on="source_uid", how="left")
    return frame.with_columns(pl.lit(None, dtype=pl.Int32).alias("epoch"))


def _funnel(drops: pl.DataFrame, published: int) -> dict[str, Any]:
    """Dropped per stage, runs left after each stage, and ingested = published + all drops."""
    by_stage = dict(drops.group_by("stage").len().iter_rows()) if drops.height else {}
    dropped = {s: int(by_stage.get(s, 0)) for s in STAGES}
    extra = {s: int(n) for s, n in by_stage.items() if s not in dropped}  # stages outside the vocabulary
    ingested = published + sum(dropped.values()) + sum(extra.values())
    after: dict[str, int] = {}
    left = ingested
    for s in STAGES:
        left -= dropped[s]
        after[s] = left
    return {
        "ingested": ingested,
        "dropped": dropped,
        "other_stages": extra,
        "after": after,
        "published": published,
    }


def build_report(workdir: Path, epoch: int | None = None) -> dict[str, Any]:
    """Funnel per dataset and per epoch, reasons per stage, invariant and counters (JSON-ready)."""
    drops = _read_drops(workdir)
    stats = _read_stats(workdir)
    pub = _published(workdir)
    if epoch is not None:
        drops = drops.filter(pl.col("epoch") == epoch)
        pub = pub.filter(pl.col("epoch") == epoch)
    drops = drops.with_columns(
        pl.when(pl.col("dataset") == "")
        .then(pl.lit(UNKNOWN_DATASET))
        .otherwise(pl.col("dataset"))
        .alias("dataset")
    )

    datasets = sorted(set(drops["dataset"].to_list()) | set(pub["dataset"].to_list()))
    pub_by_ds = dict(pub.group_by("dataset").len().iter_rows()) if pub.height else {}
    by_dataset = {
        d: _funnel(drops.filter(pl.col("dataset") == d), int(pub_by_ds.get(d, 0))) for d in datasets
    }

    pub_by_epoch = dict(pub.drop_nulls("epoch").group_by("epoch").len().iter_rows()) if pub.height else {}
    stats_pub_epoch = stats.get("published", {}).get("by_epoch", {})
    epochs = sorted(
        set(drops["epoch"].drop_nulls().to_list())
        | {int(e) for e in pub_by_epoch}
        | ({int(e) for e in stats_pub_epoch if e.isdigit()} if epoch is None else {epoch})
    )
    by_epoch: dict[str, Any] = {}
    for e in epochs:
        # Without a run store the shards do not say which epoch a row came from; stats.json does.
        n_pub = int(pub_by_epoch[e]) if e in pub_by_epoch else int(stats_pub_epoch.get(str(e), 0))
        by_epoch[str(e)] = _funnel(drops.filter(pl.col("epoch") == e), n_pub)
    if epoch is None:
        # inputs without epochs (SWE-Lego files, community formats) get their own bucket
        n_none = int(stats_pub_epoch.get("none", 0))  # stats.json: the shards carry no epoch
        none_drops = drops.filter(pl.col("epoch").is_null())
        if n_none or none_drops.height:
            by_epoch["none"] = _funnel(none_drops, n_none)

    totals = _funnel(drops, pub.height)
    reasons: dict[str, dict[str, int]] = {}
    if drops.height:
        for stage, reason, n in drops.group_by("stage", "reason").len().sort("stage", "reason").iter_rows():
            reasons.setdefault(stage, {})[reason] = int(n)

    quarantined = totals["dropped"]["quarantine"]
    ledger_inv = {
        "ingested": totals["ingested"],
        "published": totals["published"],
        "dropped": totals["ingested"] - totals["published"] - quarantined,
        "quarantined": quarantined,
    }
    stats_inv = stats.get("invariant", {})
    stats_ingested = (
        stats.get("ingested", {}).get("total")
        if epoch is None
        else stats.get("ingested", {}).get("by_epoch", {}).get(str(epoch))
    )
    # The ledger and the trees are complete when they account for every run stats.json says came in.
    ok = bool(stats_inv.get("ok", True)) and (
        stats_ingested is None or int(stats_ingested) == ledger_inv["ingested"]
    )
    invariant = {**ledger_inv, "ok": ok, "stats_ingested": stats_ingested, "stats": stats_inv}

    counters: dict[str, dict[str, int]] = {g: {} for g in [*COUNTER_GROUPS, "other"]}
    for key, value in sorted(stats.get("counters", {}).items()):
        group = next((g for g in COUNTER_GROUPS if key.startswith(g + "/")), "other")
        counters[group][key[len(group) + 1 :] if group != "other" else key] = int(value)

    return {
        "workdir": str(workdir),
        "epoch": epoch,
        "stages": STAGES,
        "totals": totals,
        "by_dataset": by_dataset,
        "by_epoch": by_epoch,
        "reasons": reasons,
        "invariant": invariant,
        "counters": counters,
        # counters are summed per build, not kept per epoch: an --epoch report says so
        "counters_scope": "build" if epoch is None else "whole build, not this epoch",
        "benchmarks": stats.get("benchmarks", {}),
        "published": {
            d: {"rows": int(n), "shards": sorted(set(pub.filter(pl.col("dataset") == d)["shard"]))}
            for d, n in sorted(pub_by_ds.items())
        },
    }


# ------------------------------------------------------------------------------------ rendering


def short_names(names: list[str]) -> tuple[dict[str, str], str]:
    """Dataset names without the shared ``mini-coder-`` prefix, and a note saying so ("" if none)."""
    if (
        names
        and all(n.startswith(DATASET_PREFIX) or n in (UNKNOWN_DATASET, "TOTAL") for n in names)
        and any(n.startswith(DATASET_PREFIX) for n in names)
    ):
        return {n: n.removeprefix(DATASET_PREFIX) for n in names}, f" (names without “{DATASET_PREFIX}”)"
    return {n: n for n in names}, ""


def _funnel_table(title: str, key: str, rows: dict[str, Any]) -> Table:
    """Funnel rows under stage headers split at "_" so the table fits ~100 columns; the key column is
    never cut (it is what tells the rows apart)."""
    labels, note = short_names(list(rows)) if key == "dataset" else ({n: n for n in rows}, "")
    table = Table(title=title + note)
    table.add_column(key, no_wrap=True, min_width=max((len(v) for v in labels.values()), default=4))
    table.add_column("ingested", justify="right")
    for s in STAGES:
        table.add_column(s.replace("_", "\n"), justify="right")
    table.add_column("published", justify="right")
    for name, f in rows.items():
        table.add_row(
            labels[name],
            f"{f['ingested']:,}",
            *(f"{f['dropped'][s]:,}" for s in STAGES),
            f"{f['published']:,}",
        )
    return table


def render_report(report: dict[str, Any], console: Console, *, counters: bool = False) -> None:
    """Print the report as rich tables: funnels, reasons and the invariant (and counters if asked)."""
    scope = f" (epoch {report['epoch']})" if report.get("epoch") is not None else ""
    console.print(
        _funnel_table(
            f"Funnel by dataset{scope}", "dataset", {**report["by_dataset"], "TOTAL": report["totals"]}
        )
    )
    console.print(_funnel_table(f"Funnel by epoch{scope}", "epoch", report["by_epoch"]))
    reasons = Table(title="Drops by stage and reason")
    for col in ("stage", "reason"):
        reasons.add_column(col)
    reasons.add_column("runs", justify="right")
    for stage in [*STAGES, *(s for s in report["reasons"] if s not in STAGES)]:
        for reason, n in report["reasons"].get(stage, {}).items():
            reasons.add_row(stage, reason, f"{n:,}")
    console.print(reasons)
    inv = report["invariant"]
    mark = "[green]ok[/green]" if inv["ok"] else "[red]FAILED[/red]"
    console.print(
        f"Invariant {mark}: ingested {inv['ingested']:,} = published {inv['published']:,} + "
        f"dropped {inv['dropped']:,} + quarantined {inv['quarantined']:,}"
        + (
            f" (stats.json says {inv['stats_ingested']:,} ingested)"
            if inv["stats_ingested"] is not None
            else ""
        )
    )
    if not counters:
        console.print("Counters (per dialect, tool, secret kind): `trajpipe audit --counters`")
        return
    for group, values in report["counters"].items():
        if not values:
            continue
        scope = "" if report.get("epoch") is None else f" ({report.get('counters_scope', 'whole build')})"
        t = Table(title=f"Counters: {group}{scope}")
        t.add_column("name")
        t.add_column("count", justify="right")
        for name, n in values.items():
            t.add_row(name, f"{n:,}")
        console.print(t)


def _matching(uids: pl.Series, query: str) -> pl.Series:
    """The uids equal to ``query`` or, if none, ending with it."""
    exact = uids.filter(uids == query)
    return exact if exact.len() else uids.filter(uids.str.ends_with(query))


def explain(workdir: Path, query: str) -> dict[str, Any]:
    """One run's fate: published (dataset, shard, row), dropped/quarantined (stage, reason, detail),
    ``unknown`` (nothing matches) or ``ambiguous`` (several runs end with ``query``).

    ``query`` is a full source_uid or any end of one that names a single run (``…#L17``)."""
    drops_all = _read_drops(workdir)
    shard_uids = {
        shard: pl.read_parquet(shard, columns=["source_uid"])["source_uid"] for shard in _shards(workdir)
    }
    found = set(_matching(drops_all["source_uid"], query).to_list())
    for uids in shard_uids.values():
        found |= set(_matching(uids, query).to_list())
    if len(found) > 1 and query not in found:
        return {"query": query, "fate": "ambiguous", "matches": sorted(found)[:20], "count": len(found)}
    if not found:
        return {"source_uid": query, "fate": "unknown"}
    source_uid = query if query in found else found.pop()
    for shard, uids in shard_uids.items():
        hits = (uids == source_uid).arg_true()
        if len(hits):
            fate = {
                "source_uid": source_uid,
                "fate": "published",
                "dataset": shard.parent.parent.name,
                "shard": str(shard.relative_to(workdir / "publish")),
                "row": int(hits[0]),
            }
            # other runs that carried the same uid (traj_dedup/duplicate_uid) are shown with it
            others = drops_all.filter(pl.col("source_uid") == source_uid)
            return {**fate, "entries": others.to_dicts()} if others.height else fate
    drops = drops_all.filter(pl.col("source_uid") == source_uid)
    if drops.height:
        entries = drops.to_dicts()
        first = entries[0]
        evidence = explain_detail(first["detail"] or "") if first["stage"] == "solution_leak" else None
        return {
            "source_uid": source_uid,
            "fate": "quarantined" if first["stage"] == "quarantine" else "dropped",
            "stage": first["stage"],
            "reason": first["reason"],
            "evidence": first["detail"],
            "epoch": first["epoch"],
            "dataset": first["dataset"] or None,
            "entries": entries,
            **({"solution_leak": evidence} if evidence else {}),
        }
    return {"source_uid": source_uid, "fate": "unknown"}


def _evidence_text(stage: str, reason: str, detail: str) -> str:
    """The ledger's detail in words; a near-duplicate's Jaccard is a MinHash estimate, said so."""
    if stage == "traj_dedup":
        kept = detail.split("kept=", 1)[1].split(" ", 1)[0] if "kept=" in detail else "?"
        if reason == "exact":
            return f"the same actions as the run kept, {kept}"
        jac = detail.rsplit("jaccard=", 1)[1] if "jaccard=" in detail else "?"
        return (
            f"nearly the same actions as the run kept, {kept}: estimated (MinHash) Jaccard similarity "
            f"{jac} over action shingles; not identical, or it would be an exact duplicate"
        )
    return detail


def explain_text(fate: dict[str, Any]) -> str:
    """``explain``'s answer as a few lines for people."""
    kind = fate["fate"]
    if kind == "unknown":
        return (
            f"no run matches {fate['source_uid']!r} in this build (give a source_uid or a unique end of one)"
        )
    if kind == "ambiguous":
        more = f" (first {len(fate['matches'])} shown)" if fate["count"] > len(fate["matches"]) else ""
        return f"{fate['count']} runs end with {fate['query']!r}; give more of the uid{more}:\n" + "\n".join(
            f"  {m}" for m in fate["matches"]
        )
    if kind == "published":
        return f"{fate['source_uid']}\n  published in {fate['dataset']}: {fate['shard']}, row {fate['row']}"
    where = f" ({fate['dataset']}, epoch {fate['epoch']})" if fate.get("dataset") else ""
    return (
        f"{fate['source_uid']}\n  {kind} by {fate['stage']}: {fate['reason']}{where}\n"
        f"  evidence: {_evidence_text(fate['stage'], fate['reason'], fate['evidence'] or '')}"
    )


# ------------------------------------------------------------------------------------------ HTML

# one colour per stage (Tableau 10), in stage order
PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
]
assert len(PALETTE) >= len(STAGES), "a stage without a colour"


def _svg_funnel(f: dict[str, Any]) -> str:
    """Horizontal bars: runs left after ingest, after each stage, and published."""
    bars = (
        [("ingested", f["ingested"])] + [(s, f["after"][s]) for s in STAGES] + [("published", f["published"])]
    )
    top = max((n for _, n in bars), default=0) or 1
    h, label_w, bar_w = 22, 130, 420
    rows = []
    for i, (name, n) in enumerate(bars):
        y = i * h
        w = bar_w * n / top
        rows.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{html.escape(name)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{h - 6}" fill="#4e79a7"/>'
            f'<text class="n" x="{label_w + w + 4:.1f}" y="{y + 15}">{n:,}</text>'
        )
    height = len(bars) * h
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="funnel" width="{label_w + bar_w + 80}" '
        f'height="{height}" viewBox="0 0 {label_w + bar_w + 80} {height}" font-size="12">{"".join(rows)}</svg>'
    )


def _svg_trend(by_epoch: dict[str, Any]) -> str:
    """Stacked bars per epoch: drops by stage."""
    epochs = list(by_epoch)
    if not epochs:
        return "<p>No epochs.</p>"
    totals = [sum(by_epoch[e]["dropped"].values()) for e in epochs]
    top = max(totals) or 1
    chart_h, col_w, left, bottom = 200, 48, 40, 24
    parts = []
    for i, e in enumerate(epochs):
        x = left + i * col_w + 8
        y = chart_h
        for k, s in enumerate(STAGES):
            n = by_epoch[e]["dropped"][s]
            if not n:
                continue
            hgt = chart_h * n / top
            y -= hgt
            parts.append(
                f'<rect x="{x}" y="{y:.1f}" width="{col_w - 16}" height="{hgt:.1f}" fill="{PALETTE[k]}">'
                f"<title>epoch {html.escape(e)} {s}: {n:,}</title></rect>"
            )
        parts.append(
            f'<text class="n" x="{x + (col_w - 16) / 2}" y="{y - 3:.1f}" text-anchor="middle">{totals[i]:,}</text>'
        )
        parts.append(
            f'<text x="{x + (col_w - 16) / 2}" y="{chart_h + 16}" text-anchor="middle">{html.escape(e)}</text>'
        )
    legend = "".join(
        f'<rect x="{left + len(epochs) * col_w + 10}" y="{k * 16}" width="10" height="10" fill="{PALETTE[k]}"/>'
        f'<text x="{left + len(epochs) * col_w + 24}" y="{k * 16 + 9}">{s}</text>'
        for k, s in enumerate(STAGES)
    )
    width = left + len(epochs) * col_w + 140
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="drops per epoch" width="{width}" '
        f'height="{chart_h + bottom + 12}" viewBox="0 0 {width} {chart_h + bottom + 12}" font-size="11"><g transform="translate(0,12)">'
        f"{''.join(parts)}{legend}</g></svg>"
    )


def _html_funnel_table(key: str, rows: dict[str, Any]) -> str:
    """Stage headers may break after "_" and dataset names lose the shared prefix (said in the caption),
    so the table fits a 1280-pixel window without cutting any name."""
    labels, note = short_names(list(rows)) if key == "dataset" else ({n: n for n in rows}, "")
    head = "".join(
        f"<th>{html.escape(h).replace('_', '_<wbr>')}</th>" for h in [key, "ingested", *STAGES, "published"]
    )
    caption = f"<caption>{html.escape(note.strip())}</caption>" if note else ""
    body = "".join(
        "<tr><td>"
        + html.escape(labels[name])
        + "</td>"
        + "".join(
            f"<td class=n>{v:,}</td>"
            for v in [f["ingested"], *(f["dropped"][s] for s in STAGES), f["published"]]
        )
        + "</tr>"
        for name, f in rows.items()
    )
    return f"<table>{caption}<tr>{head}</tr>{body}</table>"


def write_html(report: dict[str, Any], path: Path) -> None:
    """A single self-contained HTML file (inline CSS and SVG, no external assets)."""
    inv = report["invariant"]
    reasons = "".join(
        f"<tr><td>{html.escape(s)}</td><td>{html.escape(r)}</td><td class=n>{n:,}</td></tr>"
        for s, rs in report["reasons"].items()
        for r, n in rs.items()
    )
    counters = "".join(
        f"<h3>{html.escape(g)}</h3><table><tr><th>name</th><th>count</th></tr>"
        + "".join(f"<tr><td>{html.escape(k)}</td><td class=n>{v:,}</td></tr>" for k, v in vals.items())
        + "</table>"
        for g, vals in report["counters"].items()
        if vals
    )
    scope = f" — epoch {report['epoch']}" if report.get("epoch") is not None else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>trajpipe audit{scope}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; font-size: 0.9em; }}
td:first-child {{ white-space: nowrap; }}
caption {{ text-align: left; color: #555; font-size: 0.85em; }}
svg {{ max-width: 100%; height: auto; }}
code {{ overflow-wrap: anywhere; }}
td.n, text.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
.ok {{ color: #2a7a2a; }} .bad {{ color: #b00020; font-weight: bold; }}
</style></head><body>
<h1>trajpipe audit{scope}</h1>
<p>Work dir: <code>{html.escape(report["workdir"])}</code></p>
<p class="{"ok" if inv["ok"] else "bad"}">Invariant {"ok" if inv["ok"] else "FAILED"}:
ingested {inv["ingested"]:,} = published {inv["published"]:,} + dropped {inv["dropped"]:,}
+ quarantined {inv["quarantined"]:,}</p>
<h2>Funnel</h2>
{_svg_funnel(report["totals"])}
<h2>Drops per epoch</h2>
{_svg_trend(report["by_epoch"])}
<h2>Funnel by dataset</h2>
{_html_funnel_table("dataset", {**report["by_dataset"], "TOTAL": report["totals"]})}
<h2>Funnel by epoch</h2>
{_html_funnel_table("epoch", report["by_epoch"])}
<h2>Drops by stage and reason</h2>
<table><tr><th>stage</th><th>reason</th><th>runs</th></tr>{reasons}</table>
<h2>Counters</h2>
{counters}
</body></html>
"""
    atomic_write_text(path, page)
