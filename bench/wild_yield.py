"""The wild harvest's yield, before and after, per set and format family.

    python bench/wild_yield.py bench/results/wild_before.json bench/results/wild.json

Reads two ``bench/wild.py`` result files and writes ``bench/results/wild_yield.md``: per family,
the runs, the runs with at least one action (what no conversion can keep is left out: a run with
no steps, no command or an unreadable record), and, before and after, the runs published and the
runs published *and* free of every violation the independent checker (``bench/wild_check.py``)
counts, as a share of the runs with an action.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# drops of runs that hold no action at all: nothing a converter could keep
NO_ACTION = ("parse/no_steps", "convert/no_actions", "convert/no_turns", "quarantine/")


def _with_action(fam: dict[str, Any]) -> int:
    gone = sum(int(n) for reason, n in fam["drops"].items() if reason.startswith(NO_ACTION))
    return int(fam["runs"]) - gone


def _faithful(fam: dict[str, Any]) -> int:
    return int(fam["published"]) - int(fam["runs_with_violation"])


def _pct(n: int, d: int) -> str:
    return f"{n} ({100 * n / d:.1f}%)" if d else f"{n} (-)"


def table(before: dict[str, Any], after: dict[str, Any], name: str) -> list[str]:
    b, a = before["sets"][name], after["sets"][name]
    lines = [
        f"### {name}",
        "",
        "| family | runs | with an action | published before | published after "
        "| faithful before | faithful after |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    tot = [0] * 6
    for fam in sorted(set(b) | set(a)):
        fb, fa = b.get(fam), a.get(fam)
        ref = fa or fb
        assert ref is not None
        runs, act = int(ref["runs"]), _with_action(ref)
        pb, pa = (int(fb["published"]) if fb else 0), (int(fa["published"]) if fa else 0)
        vb, va = (_faithful(fb) if fb else 0), (_faithful(fa) if fa else 0)
        for i, v in enumerate((runs, act, pb, pa, vb, va)):
            tot[i] += v
        lines.append(
            f"| {fam} | {runs} | {act} | {_pct(pb, act)} | {_pct(pa, act)} | {_pct(vb, act)} | {_pct(va, act)} |"
        )
    lines.append(
        f"| **total** | {tot[0]} | {tot[1]} | {_pct(tot[2], tot[1])} | {_pct(tot[3], tot[1])} "
        f"| {_pct(tot[4], tot[1])} | {_pct(tot[5], tot[1])} |"
    )
    return [*lines, ""]


def verify_drops(after: dict[str, Any]) -> list[str]:
    """The verify step's drops per rule (rows) and family (columns), all sets."""
    fams = after["sets"]["all"]
    rules = sorted({r for f in fams.values() for r in f["drops"] if r.startswith("verify/")})
    names = sorted(fams)
    lines = [
        "### verify's drops per rule and family (all sets)",
        "",
        "| rule | " + " | ".join(names) + " | total |",
        "|---|" + "---:|" * (len(names) + 1),
    ]
    for rule in rules:
        row = [int(fams[f]["drops"].get(rule, 0)) for f in names]
        lines.append(f"| `{rule}` | " + " | ".join(str(n) for n in row) + f" | {sum(row)} |")
    return [*lines, ""]


def main(old: Path, new: Path, out: Path) -> None:
    before, after = json.loads(old.read_text()), json.loads(new.read_text())
    lines = [
        "# The wild harvest's yield, before and after",
        "",
        f"`python bench/wild_yield.py {old} {new}`: before = `{before['commit']}` ({before['date']}), "
        f"after = `{after['commit']}` ({after['date']}). *Faithful* = published and free of every "
        "violation `bench/wild_check.py` counts (it imports nothing from the converters). Shares are "
        "of the runs with at least one action.",
        "",
    ]
    for name in ("all", "dev", "held-out"):
        lines += table(before, after, name)
    lines += verify_drops(after)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]]
    if len(args) != 2:
        sys.exit("usage: python bench/wild_yield.py BEFORE.json AFTER.json")
    main(args[0], args[1], Path(__file__).parent / "results" / "wild_yield.md")
