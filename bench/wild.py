"""The judge on real data: a wide harvest of public trajectory files, converted by the real CLI.

    python bench/wild.py discover --mirrors /work/.mirror [--out bench/wild_manifest.jsonl]
    python bench/wild.py fetch --mirrors /work/.mirror --out /work/data/wild
    python bench/wild.py run --out /work/data/wild [--workers 1] [--compare OLD.json]

``discover`` scans every mirror's whole history (``git log --all --raw``) for ``.traj``/``.json``/``.jsonl``
blobs under 10 MB, tells their format family from their content (:func:`family_of`), drops byte-identical
copies (forks), keeps one version per path and caps any repository at ~30% of the files, then writes the
manifest: one line per file ``{repo, commit, path, sha256, family, licence}``.

``fetch`` rebuilds the harvest from the manifest (``git --git-dir <mirror> cat-file blob <commit>:<path>``,
the bytes ``git show`` prints), checks each sha256 and says in one line what is missing.

``run`` converts the harvest per family with ``python -m pipeline.cli convert FILES... --out X.jsonl``
(a subprocess: the bench measures the CLI users run, from the tree this file is in), reads the output
(one line per run: ``{source_uid, format, messages}`` when published, ``{source_uid, format, drop:
{stage, reason, detail}}`` when not; ``source_uid`` is ``<file name>#row=<n>`` for a JSON document and
``<file name>#L<line>`` for JSON Lines), and checks every published run against its source file with
``bench/wild_check.py`` (which imports nothing of the pipeline). Files are grouped so that no two files
of one ``convert`` call share a file name: a run's source_uid then names its file.

Two disjoint sets of repositories, ``dev`` and ``held-out`` (the manifest's ``set``, see :func:`assign_sets`),
are reported apart so that a fix's generalisation shows. Results: ``bench/results/wild.md`` and ``wild.json``;
per-run violations with examples go to ``<out>/violations.jsonl`` (outside the repository).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "bench" / "wild_manifest.jsonl"
RESULTS = ROOT / "bench" / "results"
MAX_BYTES = 10_000_000
MIN_BYTES = 300
REPO_CAP = 0.30  # no repository holds more than this share of the manifest
CHUNK_FILES = 40  # files per convert call
CHUNK_BYTES = 40_000_000
CONVERT_TIMEOUT = 900  # seconds for one convert call; a chunk that times out is retried file by file
SUFFIXES = (".traj", ".json", ".jsonl")
# `run --reuse-converted` sets it: check the outputs of an earlier run again (checker work only)
REUSE_ENV = "WILD_REUSE_CONVERTED"


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# format families, told from content


def _is_message_list(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(m, dict) and "role" in m for m in x[:5])


def _is_event_list(x: Any) -> bool:
    return (
        isinstance(x, list)
        and bool(x)
        and all(isinstance(e, dict) for e in x[:5])
        and any("action" in e or "observation" in e for e in x[:20])
        and all("role" not in e for e in x[:5])
    )


# keys of an LLM call log (OpenHands' llm_completions, litellm dumps): one model call, not a run
_LOG_KEYS = {"response", "fncall_messages", "kwargs", "completion", "choices"}
# folders holding pieces of runs (one event each, cached event pages, model call logs)
_NOT_RUNS = re.compile(r"(^|/)(llm_completions|event_cache|events|node_modules|\.git)/")


def _run_family(obj: Any) -> str | None:
    """The family of one decoded run (a dict, or a bare message/event list)."""
    if _is_message_list(obj):
        return "mini-bare"
    if _is_event_list(obj):
        return "openhands-events"
    if not isinstance(obj, dict):
        return None
    history = obj.get("history")
    if isinstance(history, list) and history:
        flat = [x for h in history[:20] for x in (h if isinstance(h, list) else [h])]
        events = any(isinstance(x, dict) and ("action" in x or "observation" in x) for x in flat)
        chat = any(isinstance(x, dict) and "role" in x for x in flat[:5])
        if events and not chat and ("instruction" in obj or "test_result" in obj or "git_patch" in obj):
            return "openhands-eval"
        if any(k in obj for k in ("trajectory", "info", "environment", "replay_config")) or chat:
            items = [h for h in history if isinstance(h, dict)]
            if any(h.get("tool_calls") for h in items):
                return "sweagent-1x"
            if any("message_type" in h for h in items):
                return "sweagent-1x-text"
            return "sweagent-0x"
    if _is_event_list(obj.get("events")):
        return "openhands-events"
    msgs = obj.get("messages")
    if isinstance(msgs, list | str) and msgs:
        raw_info = obj.get("info")
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        fmt = obj.get("trajectory_format")
        version = str(info.get("mini_version") or "")
        if (
            (isinstance(fmt, str) and fmt.startswith("mini-swe-agent"))
            or "mini_version" in info
            or "config" in info
        ):
            if fmt == "mini-swe-agent-1.1" or version.startswith("2"):
                return "mini-v2"
            if version.startswith("0."):
                return "mini-pre1"
            return "mini-v1"
        if "instance_id" in obj:
            return "swesmith"
        if _is_message_list(msgs) and not _LOG_KEYS & set(obj):
            return "mini-bare"
    if isinstance(obj.get("nodes"), list) and ("view" in obj or "instance_id" in obj):
        return "affine"
    if isinstance(obj.get("trace"), dict) and isinstance(obj.get("task"), dict):
        return "affine"
    return None


def family_of(data: bytes) -> str | None:
    """The format family of a file's bytes (one JSON document, or JSON Lines), None if not a run."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        for line in data.split(b"\n"):
            if line.strip():
                try:
                    return _run_family(json.loads(line))
                except (ValueError, UnicodeDecodeError):
                    return None
        return None
    if isinstance(doc, list) and doc and not _is_message_list(doc) and not _is_event_list(doc):
        return _run_family(doc[0]) if isinstance(doc[0], dict) else None
    return _run_family(doc)


# --------------------------------------------------------------------------------------------
# discover: mirrors -> manifest


@dataclass
class Candidate:
    repo: str
    commit: str
    path: str
    blob: str
    size: int
    sha256: str = ""
    family: str = ""


def _git(mirror: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={mirror}", *args], input=data, capture_output=True, check=False
    ).stdout


def mirror_dir(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def _history_blobs(mirror: Path) -> list[tuple[str, str, str]]:
    """(commit, path, blob) of every added/modified candidate file, newest version of a path first."""
    out = _git(
        mirror,
        "log",
        "--all",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "--diff-filter=AM",
        "--format=@@%H",
        "--",
        *(f"*{s}" for s in SUFFIXES),
    ).decode("utf-8", "replace")
    seen: set[str] = set()
    rows: list[tuple[str, str, str]] = []
    commit = ""
    for line in out.splitlines():
        if line.startswith("@@"):
            commit = line[2:]
        elif line.startswith(":") and "\t" in line:
            meta, path = line.split("\t", 1)
            blob = meta.split()[3]
            if path not in seen and path.endswith(SUFFIXES) and not _NOT_RUNS.search(path):
                seen.add(path)
                rows.append((commit, path, blob))
    return rows


def _sizes(mirror: Path, blobs: list[str]) -> dict[str, int]:
    out = _git(mirror, "cat-file", "--batch-check", data="\n".join(blobs).encode() + b"\n")
    sizes: dict[str, int] = {}
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    return sizes


def _blobs(mirror: Path, blobs: list[str]) -> Iterator[tuple[str, bytes]]:
    """Each blob's bytes, streamed through one ``git cat-file --batch``."""
    proc = subprocess.Popen(
        ["git", f"--git-dir={mirror}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for blob in blobs:
            proc.stdin.write(blob.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) != 3:
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            yield blob, data
    finally:
        proc.stdin.close()
        proc.wait()


LICENCES = (
    ("Permission is hereby granted, free of charge", "MIT"),
    ("Apache License", "Apache-2.0"),
    ("Redistribution and use in source and binary forms", "BSD"),
    ("GNU AFFERO GENERAL PUBLIC LICENSE", "AGPL"),
    ("GNU LESSER GENERAL PUBLIC LICENSE", "LGPL"),
    ("GNU GENERAL PUBLIC LICENSE", "GPL"),
    ("Mozilla Public License", "MPL-2.0"),
    ("Attribution 4.0 International", "CC-BY-4.0"),
    ("CC0 1.0", "CC0-1.0"),
    ("This is free and unencumbered software", "Unlicense"),
)


def licence_of(mirror: Path) -> str:
    """The licence named by the LICENSE/COPYING file at the mirror's HEAD, else "unknown"."""
    names = _git(mirror, "ls-tree", "--name-only", "HEAD").decode("utf-8", "replace").splitlines()
    for name in names:
        if name.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
            text = _git(mirror, "show", f"HEAD:{name}").decode("utf-8", "replace")
            for needle, spdx in LICENCES:
                if needle.lower() in text.lower():
                    return spdx
    return "unknown"


def scan_mirror(mirrors: Path, repo: str) -> list[Candidate]:
    """Every trajectory file in a mirror's history, classified; byte-identical copies kept once."""
    mirror = mirror_dir(mirrors, repo)
    rows = _history_blobs(mirror)
    sizes = _sizes(mirror, sorted({b for _, _, b in rows}))
    cands: dict[str, Candidate] = {}
    for commit, path, blob in rows:
        size = sizes.get(blob, -1)
        if MIN_BYTES <= size <= MAX_BYTES and blob not in cands:
            cands[blob] = Candidate(repo, commit, path, blob, size)
    for blob, data in _blobs(mirror, list(cands)):
        c = cands[blob]
        c.family = family_of(data) or ""
        c.sha256 = hashlib.sha256(data).hexdigest()
    return [c for c in cands.values() if c.family and c.sha256]


def _run_dir(path: str) -> str:
    """The folder a run's file belongs to (one experiment), the instance folder aside."""
    parts = path.split("/")[:-1]
    if parts and re.search(r"__|-\d+$|\.pr_\d+", parts[-1]):
        parts = parts[:-1]
    return "/".join(parts)


def _spread(cands: list[Candidate]) -> list[Candidate]:
    """A repository's files in round-robin over its experiment folders, so a cap keeps them all."""
    by_dir: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(cands, key=lambda c: c.path):
        by_dir[_run_dir(c.path)].append(c)
    queues = [by_dir[k] for k in sorted(by_dir)]
    out: list[Candidate] = []
    while any(queues):
        out.extend(q.pop(0) for q in queues if q)
    return out


def repo_cap(counts: list[int], share: float) -> int:
    """The largest per-repository limit C with max(min(n, C)) <= share * sum(min(n, C))."""
    best = 1
    for cap in range(1, max(counts, default=1) + 1):
        total = sum(min(n, cap) for n in counts)
        if cap <= share * total:
            best = cap
        elif cap > max(counts):
            break
    return best


# where a byte-identical file is found in several repositories, it is credited to its upstream
UPSTREAM = (
    "SWE-agent/SWE-agent",
    "SWE-agent/mini-swe-agent",
    "All-Hands-AI/OpenHands",
    "princeton-nlp/SWE-agent",
)


def _owner_rank(c: Candidate) -> tuple[int, str, str]:
    return (UPSTREAM.index(c.repo) if c.repo in UPSTREAM else len(UPSTREAM), c.repo, c.path)


def select(cands: list[Candidate], share: float = REPO_CAP) -> list[Candidate]:
    """Byte-identical files kept once (upstream first, then by repository name), each repository capped."""
    seen: set[str] = set()
    by_repo: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(cands, key=_owner_rank):
        if c.sha256 not in seen:
            seen.add(c.sha256)
            by_repo[c.repo].append(c)
    cap = repo_cap([len(v) for v in by_repo.values()], share)
    out: list[Candidate] = []
    for repo in sorted(by_repo):
        out += _spread(by_repo[repo])[:cap]
    return out


def discover(mirrors: Path, out: Path, repos: list[str] | None) -> None:
    names = repos or sorted(p.name.replace("+", "/", 1) for p in mirrors.iterdir() if (p / "repo").is_dir())
    cands: list[Candidate] = []
    licences: dict[str, str] = {}
    for repo in names:
        found = scan_mirror(mirrors, repo)
        licences[repo] = licence_of(mirror_dir(mirrors, repo)) if found else "unknown"
        fams = Counter(c.family for c in found)
        say(f"{repo}: {len(found)} trajectory files {dict(fams)}")
        cands += found
    chosen = select(cands)
    sets = assign_sets([(c.repo, c.family) for c in chosen])
    lines = [
        json.dumps(
            {
                "repo": c.repo,
                "commit": c.commit,
                "path": c.path,
                "sha256": c.sha256,
                "family": c.family,
                "licence": licences[c.repo],
                "bytes": c.size,
                "set": sets[c.repo],
            },
            sort_keys=False,
        )
        for c in sorted(chosen, key=lambda c: (c.repo, c.path))
    ]
    out.write_text("\n".join(lines) + "\n")
    say(f"wrote {out}: {len(lines)} files from {len({c.repo for c in chosen})} repositories")


# --------------------------------------------------------------------------------------------
# manifest, sets, fetch


def assign_sets(files: list[tuple[str, str]]) -> dict[str, str]:
    """Each repository's set, dev or held-out, balancing every family's files between the two.

    Repositories are taken largest first; each goes to the set where its main family has fewer files so
    far (then the set with fewer files, then dev). Written into the manifest, so a set never moves
    between a before and an after measured on the same manifest."""
    per_repo: dict[str, Counter[str]] = defaultdict(Counter)
    for repo, family in files:
        per_repo[repo][family] += 1
    fam_files: dict[str, Counter[str]] = {"dev": Counter(), "held-out": Counter()}
    total: Counter[str] = Counter()
    out: dict[str, str] = {}
    for repo in sorted(per_repo, key=lambda r: (-sum(per_repo[r].values()), r)):
        main = per_repo[repo].most_common(1)[0][0]
        choice = min(("dev", "held-out"), key=lambda s: (fam_files[s][main], total[s], s != "dev"))
        out[repo] = choice
        fam_files[choice].update(per_repo[repo])
        total[choice] += sum(per_repo[repo].values())
    return out


@dataclass(frozen=True)
class Entry:
    repo: str
    commit: str
    path: str
    sha256: str
    family: str
    licence: str
    set_name: str = ""

    @property
    def local(self) -> str:
        """Where the file lives under the harvest folder: family/owner+name/path."""
        return f"{self.family}/{self.repo.replace('/', '+')}/{self.path}"

    @property
    def set(self) -> str:
        """dev or held-out: the manifest's ``set`` (a manifest without one: by a hash of the repository)."""
        return self.set_name or set_of(self.repo)


def set_of(repo: str) -> str:
    """dev or held-out by a stable hash of the repository's name (manifests that name no set)."""
    return "dev" if int(hashlib.sha256(repo.encode()).hexdigest()[0], 16) < 8 else "held-out"


def read_manifest(path: Path = MANIFEST) -> list[Entry]:
    entries = []
    for line in path.read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            entries.append(
                Entry(
                    d["repo"],
                    d["commit"],
                    d["path"],
                    d["sha256"],
                    d["family"],
                    d["licence"],
                    d.get("set", ""),
                )
            )
    return entries


def fetch(mirrors: Path, out: Path, manifest: Path) -> int:
    """Write every manifest file under ``out/files``; returns how many are missing or wrong."""
    entries = read_manifest(manifest)
    files = out / "files"
    by_repo: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_repo[e.repo].append(e)
    ok = bad = present = 0
    for repo in sorted(by_repo):
        mirror = mirror_dir(mirrors, repo)
        todo = []
        for e in by_repo[repo]:
            dest = files / e.local
            if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == e.sha256:
                present += 1
            else:
                todo.append(e)
        if not todo:
            continue
        if not (mirror / "HEAD").exists():
            say(f"missing mirror: {repo} ({len(todo)} files): fetch github:{repo} into {mirror.parent}")
            bad += len(todo)
            continue
        got = dict(_blobs(mirror, [f"{e.commit}:{e.path}" for e in todo]))
        for e in todo:
            data = got.get(f"{e.commit}:{e.path}")
            if data is None:
                say(f"missing file: {repo} {e.commit[:12]}:{e.path}")
                bad += 1
            elif hashlib.sha256(data).hexdigest() != e.sha256:
                say(f"sha256 mismatch: {repo} {e.commit[:12]}:{e.path}")
                bad += 1
            else:
                dest = files / e.local
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                ok += 1
    say(f"fetch: {ok} written, {present} already present, {bad} missing or wrong, of {len(entries)}")
    return bad


# --------------------------------------------------------------------------------------------
# run: convert per family, check published runs


def chunks(entries: list[Entry], files: Path) -> list[list[Entry]]:
    """Convert calls of one family: no two files share a name (a source_uid names its file)."""
    out: list[list[Entry]] = []
    open_: list[tuple[list[Entry], set[str], int]] = []
    for e in entries:
        name = Path(e.path).name
        size = (files / e.local).stat().st_size
        for i, (group, names, nbytes) in enumerate(open_):
            if name not in names and len(group) < CHUNK_FILES and nbytes + size <= CHUNK_BYTES:
                group.append(e)
                names.add(name)
                open_[i] = (group, names, nbytes + size)
                break
        else:
            open_.append(([e], {name}, size))
        full = [g for g in open_ if len(g[0]) >= CHUNK_FILES]
        for g in full:
            out.append(g[0])
            open_.remove(g)
    out += [g[0] for g in open_]
    return out


def _convert(paths: list[Path], dest: Path, timeout: int) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MSWEA_SILENT_STARTUP="1")
    cmd = [sys.executable, "-m", "pipeline.cli", "convert", *map(str, paths), "--out", str(dest)]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return -9, f"timed out after {timeout}s"
    return proc.returncode, proc.stderr[-1500:]


@dataclass
class ChunkResult:
    family: str
    # per file (manifest local path): its runs' outcomes and violations
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)


def _read_output(dest: Path) -> list[dict[str, Any]]:
    if not dest.exists():
        return []
    return [json.loads(line) for line in dest.read_text().splitlines() if line.strip()]


def _convert_robust(
    group: list[Entry], files: Path, work: Path, key: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Convert a group; when the CLI crashes or times out, again file by file (a bad file named)."""
    dest = work / f"{key}.jsonl"
    if os.environ.get(REUSE_ENV) and dest.exists():
        return _read_output(dest), []
    rc, err = _convert([files / e.local for e in group], dest, CONVERT_TIMEOUT)
    if rc in (0, 1):
        return _read_output(dest), []
    if len(group) == 1:
        return [], [f"{group[0].local}: convert exited {rc}: {err.strip().splitlines()[-1:] or ''}"]
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for i, e in enumerate(group):
        r, errs = _convert_robust([e], files, work, f"{key}-{i}")
        rows += r
        errors += errs
    return rows, errors


def _record(path: Path, where: str, docs: dict[str, Any]) -> Any:
    """The source run of ``<file>#<where>``; a JSON document is decoded once per file."""
    import wild_check

    if where.startswith("L"):
        return wild_check.source_record(path.read_bytes(), where)
    key = str(path)
    if key not in docs:
        docs.clear()
        docs[key] = {"data": path.read_bytes(), "runs": {}}
    cached = docs[key]["runs"]
    if where not in cached:
        cached[where] = wild_check.source_record(docs[key]["data"], where)
    return cached[where]


def kind_of(example: str) -> str:
    """The sort of a violation, from its example text: the sub-reason, tool name or pattern name."""
    text = re.sub(r"^(msg|turn) \d+: ", "", example)
    head = text.split(":", 1)[0].strip()
    if head.startswith("rc 0, "):
        return head.removeprefix("rc 0, ").split(" says")[0]
    if head.startswith("mini parse_action"):
        return "parse_action"
    return head if len(head) <= 40 else head[:40]


def run_chunk(family: str, group: list[Entry], files: Path, work: Path, key: str) -> ChunkResult:
    """One convert call and the checks of its published runs (runs in a worker process)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import wild_check

    res = ChunkResult(family)
    rows, res.errors = _convert_robust(group, files, work, key)
    by_name = {Path(e.path).name: e for e in group}
    for e in group:
        res.files[e.local] = {
            "repo": e.repo,
            "set": e.set,
            "runs": 0,
            "published": 0,
            "drops": Counter(),
            "viol": Counter(),
            "kinds": Counter(),
        }
    docs: dict[str, Any] = {}  # a JSON document's decoded runs, read once per file
    for row in rows:
        name, _, where = str(row.get("source_uid", "")).rpartition("#")
        # the scrub step may rewrite part of a source_uid (a redaction): match the file name's tail
        entry = by_name.get(name) or next((e for n, e in by_name.items() if name.endswith(n[-16:])), None)
        if entry is None:
            res.errors.append(f"unmatched source_uid {row.get('source_uid')!r}")
            continue
        rec = res.files[entry.local]
        rec["runs"] += 1
        if "drop" in row:
            d = row["drop"]
            rec["drops"][f"{d['stage']}/{d['reason']}"] += 1
            continue
        rec["published"] += 1
        try:
            record = _record(files / entry.local, where, docs)
        except (ValueError, IndexError, OSError) as exc:
            res.errors.append(f"{entry.local}#{where}: source record unreadable: {exc}")
            continue
        report = wild_check.check_run(row["messages"], record)
        for rule, items in report.items():
            if items:
                rec["viol"][rule] += 1
                rec["kinds"].update({f"{rule}/{k}" for k in map(kind_of, items)})
                res.violations.append(
                    {
                        "file": entry.local,
                        "source_uid": row["source_uid"],
                        "rule": rule,
                        "n": len(items),
                        "examples": items[:3],
                    }
                )
    return res


def _tally(results: list[ChunkResult], entries: list[Entry]) -> dict[str, Any]:
    """Numbers per set and family: files, runs, published, drops by stage/reason, violations by rule."""
    fam_of = {e.local: e.family for e in entries}
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for res in results:
        for local, rec in res.files.items():
            for set_name in (rec["set"], "all"):
                t = table[set_name].setdefault(
                    fam_of[local],
                    {
                        "files": 0,
                        "repos": set(),
                        "files_without_runs": 0,
                        "runs": 0,
                        "published": 0,
                        "drops": Counter(),
                        "violations": Counter(),
                        "kinds": Counter(),
                        "runs_with_violation": 0,
                    },
                )
                t["files"] += 1
                t["repos"].add(rec["repo"])
                t["files_without_runs"] += rec["runs"] == 0
                t["runs"] += rec["runs"]
                t["published"] += rec["published"]
                t["drops"].update(rec["drops"])
                t["violations"].update(rec["viol"])
                t["kinds"].update(rec["kinds"])
    for res in results:
        seen: set[str] = set()
        for v in res.violations:
            if v["source_uid"] + v["file"] not in seen:
                seen.add(v["source_uid"] + v["file"])
                for set_name in (set_of_local(v["file"], entries), "all"):
                    table[set_name][res.family]["runs_with_violation"] += 1
    out: dict[str, Any] = {}
    for set_name, fams in table.items():
        out[set_name] = {}
        for fam, t in sorted(fams.items()):
            t["repos"] = len(t["repos"])
            t["drops"] = dict(t["drops"].most_common())
            t["violations"] = dict(sorted(t["violations"].items()))
            t["kinds"] = dict(t["kinds"].most_common())
            out[set_name][fam] = t
    return out


def _by_repo(results: list[ChunkResult]) -> dict[str, dict[str, Any]]:
    """Per repository: its set, files, runs, published and published runs breaking any rule."""
    out: dict[str, dict[str, Any]] = {}
    for res in results:
        bad = {(v["file"], v["source_uid"]) for v in res.violations}
        for local, rec in res.files.items():
            t = out.setdefault(
                rec["repo"], {"set": rec["set"], "files": 0, "runs": 0, "published": 0, "with_violation": 0}
            )
            t["files"] += 1
            t["runs"] += rec["runs"]
            t["published"] += rec["published"]
            t["with_violation"] += sum(1 for f, _ in bad if f == local)
    return dict(sorted(out.items()))


_SET_CACHE: dict[str, str] = {}


def set_of_local(local: str, entries: list[Entry]) -> str:
    if not _SET_CACHE:
        _SET_CACHE.update({e.local: e.set for e in entries})
    return _SET_CACHE[local]


def _git_out(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    ).stdout.strip()


def _commit() -> str:
    """The commit measured and the last commit that changed the converter (pipeline/, schemas/)."""
    head = _git_out("rev-parse", "--short", "HEAD")
    code = _git_out("log", "-1", "--format=%h", "--", "pipeline", "schemas")
    dirty = "+dirty" if _git_out("status", "--porcelain", "pipeline", "schemas") else ""
    return f"{head} (pipeline/ and schemas/ as of {code}{dirty})"


def run(
    out: Path,
    manifest: Path,
    workers: int,
    families: list[str] | None,
    results_dir: Path,
    compare: Path | None,
) -> dict[str, Any]:
    entries = [e for e in read_manifest(manifest) if not families or e.family in families]
    files = out / "files"
    missing = [e for e in entries if not (files / e.local).is_file()]
    for e in missing[:20]:
        say(f"not fetched: {e.local} (run `python bench/wild.py fetch` first)")
    if missing:
        say(f"{len(missing)} of {len(entries)} manifest files are not fetched; they are left out")
    entries = [e for e in entries if (files / e.local).is_file()]
    work = out / "convert"
    work.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, list[Entry], str]] = []
    by_family: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_family[e.family].append(e)
    for fam in sorted(by_family):
        for i, group in enumerate(chunks(by_family[fam], files)):
            jobs.append((fam, group, f"{fam}-{i:03d}"))
    say(f"converting {len(entries)} files in {len(jobs)} convert calls, {workers} worker(s)")
    start = time.monotonic()
    results: list[ChunkResult] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_chunk, fam, group, files, work, key) for fam, group, key in jobs]
        for i, fut in enumerate(futures, 1):
            results.append(fut.result())
            if i % 10 == 0 or i == len(futures):
                say(f"  {i}/{len(futures)} convert calls done ({time.monotonic() - start:.0f}s)")
    errors = [err for r in results for err in r.errors]
    with open(out / "violations.jsonl", "w") as fh:
        for r in results:
            for v in r.violations:
                fh.write(json.dumps(v) + "\n")
    summary: dict[str, Any] = {
        "commit": _commit(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": f"python bench/wild.py run --out {out} --workers {workers}",
        "seconds": round(time.monotonic() - start, 1),
        "manifest_files": len(entries),
        "not_fetched": len(missing),
        "errors": errors[:50],
        "sets": _tally(results, entries),
        "by_repo": _by_repo(results),
        "examples": _examples(results),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if not families else "-" + "-".join(families)
    (results_dir / f"wild{suffix}.json").write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")
    (results_dir / f"wild{suffix}.md").write_text(render_md(summary, manifest))
    say(f"wrote {results_dir / f'wild{suffix}.md'} and .json ({summary['seconds']}s)")
    print_summary(summary, json.loads(compare.read_text()) if compare else None)
    return summary


def _examples(results: list[ChunkResult], per: int = 4) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """A few violations per family and rule, to start reading from."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        for v in r.violations:
            bucket = out[r.family][v["rule"]]
            if len(bucket) < per:
                bucket.append({"file": v["file"], "source_uid": v["source_uid"], "example": v["examples"][0]})
    return {f: dict(rules) for f, rules in sorted(out.items())}


# --------------------------------------------------------------------------------------------
# reports


RULES = ("exec", "submission", "decoration", "rc_guess", "roots", "format")


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def render_md(s: dict[str, Any], manifest: Path) -> str:
    entries = read_manifest(manifest)
    repos = {e.repo for e in entries}
    lines = [
        "# The wild judge: real public trajectory files through `trajpipe convert`",
        "",
        f"Measured tree: `{s['commit']}` on {s['date']}; command: `{s['command']}` ({s['seconds']} s).",
        f"Manifest: {len(entries)} files from {len(repos)} repositories "
        f"({', '.join(f'{k} {v}' for k, v in sorted(Counter(e.family for e in entries).items()))}); "
        f"dev set {sum(e.set == 'dev' for e in entries)} files / {len({e.repo for e in entries if e.set == 'dev'})} repos, "
        f"held-out {sum(e.set == 'held-out' for e in entries)} files / {len({e.repo for e in entries if e.set == 'held-out'})} repos.",
        "",
        "Columns: files; runs read (one file can hold many); published (converted and validated);",
        "the top drop reasons (stage/reason: runs); then, among the PUBLISHED runs, how many break each rule",
        "of `bench/wild_check.py` (a run counts once per rule) and how many break any.",
        "",
    ]
    for set_name in ("all", "dev", "held-out"):
        fams = s["sets"].get(set_name, {})
        lines += [f"## {set_name}", ""]
        lines.append(
            "| family | files | repos | runs | published | top drops | " + " | ".join(RULES) + " | any |"
        )
        lines.append("|---|---|---|---|---|---|" + "---|" * (len(RULES) + 1))
        tot: Counter[str] = Counter()
        for fam, t in fams.items():
            drops = ", ".join(f"{k} {n}" for k, n in list(t["drops"].items())[:4]) or "-"
            pub = t["published"]
            viol = " | ".join(str(t["violations"].get(r, 0)) for r in RULES)
            lines.append(
                f"| {fam} | {t['files']} | {t['repos']} | {t['runs']} | {pub} ({_pct(pub, t['runs'])}) | {drops} | {viol} | "
                f"{t['runs_with_violation']} ({_pct(t['runs_with_violation'], pub)}) |"
            )
            tot.update({k: t[k] for k in ("files", "runs", "published", "runs_with_violation")})
            tot.update({f"v:{r}": t["violations"].get(r, 0) for r in RULES})
        viol = " | ".join(str(tot[f"v:{r}"]) for r in RULES)
        lines.append(
            f"| **total** | {tot['files']} | | {tot['runs']} | {tot['published']} ({_pct(tot['published'], tot['runs'])}) | | {viol} | "
            f"{tot['runs_with_violation']} ({_pct(tot['runs_with_violation'], tot['published'])}) |"
        )
        lines.append("")
    lines += ["## All drop reasons (all sets)", ""]
    for fam, t in s["sets"].get("all", {}).items():
        if t["drops"]:
            lines.append(f"- **{fam}**: " + ", ".join(f"{k} {n}" for k, n in t["drops"].items()))
    lines += ["", "## Violations by kind (all sets; published runs with at least one of that kind)", ""]
    for fam, t in s["sets"].get("all", {}).items():
        if t.get("kinds"):
            lines.append(f"- **{fam}**: " + ", ".join(f"{k} {n}" for k, n in t["kinds"].items()))
    lines += [
        "",
        "## By repository",
        "",
        "| repository | set | files | runs | published | with a violation |",
        "|---|---|---|---|---|---|",
    ]
    for repo, t in s.get("by_repo", {}).items():
        lines.append(
            f"| {repo} | {t['set']} | {t['files']} | {t['runs']} | {t['published']} ({_pct(t['published'], t['runs'])}) "
            f"| {t['with_violation']} |"
        )
    if s["errors"]:
        lines += ["", "## Convert errors", ""] + [f"- {e}" for e in s["errors"]]
    lines += ["", REPRODUCE]
    return "\n".join(lines) + "\n"


REPRODUCE = """## How to reproduce

1. Mirror every repository the manifest names (`bench/wild_manifest.jsonl`, field `repo`) with the search
   tool's `fetch` (`github:<owner>/<name>`); they land in `/work/.mirror/<owner>+<name>/repo` (bare git).
   `python bench/wild.py fetch` names any mirror still missing.
2. `python bench/wild.py fetch --mirrors /work/.mirror --out /work/data/wild` writes the files under
   `/work/data/wild/files/<family>/<owner>+<name>/<path>` and checks each sha256 (idempotent).
3. `PYTHONPATH=. python bench/wild.py run --out /work/data/wild [--workers 1] [--compare old.json]`
   converts them per family with this tree's `python -m pipeline.cli convert` and writes this page and
   `bench/results/wild.json`; per-run violations (with examples) go to `/work/data/wild/violations.jsonl`.

`python bench/wild.py discover --mirrors /work/.mirror` rebuilds the manifest from whatever mirrors are
present (every `.traj`/`.json`/`.jsonl` blob of each mirror's history, 300 B to 10 MB, told by content,
byte-identical copies kept once, one version per path, no repository over 30% of the files).
The checker's rules, methods and limits are in the docstring of `bench/wild_check.py`.

Reading the numbers: the sets split the manifest by repository (the manifest's `set`: repositories
taken largest first, each into the set where its main family has fewer files), so a fix tuned on dev
runs shows whether it generalises to repositories it never saw (held-out). `convert`
writes one line per run, `{source_uid, format, messages}` when published and `{source_uid, format, drop:
{stage, reason, detail}}` when not; `source_uid` is `<file name>#row=<n>` for a JSON document (the n-th run
of a list of runs, else 0) and `<file name>#L<line>` (1-based) for JSON Lines. `bench/wild.py` calls
`convert` on groups of files with distinct names, so the file name names the source file. A violation's
kind (`rule/kind` in `wild.json`) is its sub-reason (`submission/missing_submit`, `patch_mismatch`,
`unexpected_submit`), the tool name (`exec/str_replace_editor`) or the decoration
pattern (`decoration/cat_n_note`). `run --reuse-converted` checks the outputs an earlier run left in
`OUT/convert` again without converting (for work on the checker; never for a measurement)."""


def _total(fams: dict[str, Any]) -> dict[str, Any]:
    """One family-like record summing a set's families (runs with a violation included)."""
    out: dict[str, Any] = {
        "files": 0,
        "runs": 0,
        "published": 0,
        "runs_with_violation": 0,
        "violations": Counter(),
    }
    for t in fams.values():
        for k in ("files", "runs", "published", "runs_with_violation"):
            out[k] += t.get(k, 0)
        out["violations"].update(t.get("violations", {}))
    return out


def print_summary(s: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Per set and family: published and violations, with the earlier numbers beside them (--compare)."""
    for set_name in ("all", "dev", "held-out"):
        fams = dict(s["sets"].get(set_name, {}))
        prev = dict((old or {}).get("sets", {}).get(set_name, {}))
        fams["TOTAL"], prev["TOTAL"] = _total(fams), _total(prev)
        print(f"== {set_name}")
        for fam, t in fams.items():
            line = (
                f"{fam:18} files {t['files']:5} runs {t['runs']:5} published {t['published']:5} "
                f"({_pct(t['published'], t['runs'])}), breaking a rule {t['runs_with_violation']}"
            )
            viol = " ".join(f"{r}={t['violations'].get(r, 0)}" for r in RULES)
            if old is not None:
                p = prev.get(fam, {})
                line += (
                    f"  [was {p.get('published', 0)} ({_pct(p.get('published', 0), p.get('runs', 0))}), "
                    f"{p.get('runs_with_violation', 0)}]"
                )
                pv = p.get("violations", {})
                viol = " ".join(f"{r}={pv.get(r, 0)}->{t['violations'].get(r, 0)}" for r in RULES)
            print(f"{line}\n{'':18} {viol}")


# --------------------------------------------------------------------------------------------


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("discover", help="scan mirrors and write the manifest")
    d.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    d.add_argument("--out", type=Path, default=MANIFEST)
    d.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    f = sub.add_parser("fetch", help="rebuild the harvest from the manifest")
    f.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    f.add_argument("--out", type=Path, default=Path("/work/data/wild"))
    f.add_argument("--manifest", type=Path, default=MANIFEST)
    r = sub.add_parser("run", help="convert the harvest and check the published runs")
    r.add_argument("--out", type=Path, default=Path("/work/data/wild"))
    r.add_argument("--manifest", type=Path, default=MANIFEST)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--family", action="append", help="only these families (results get a suffix)")
    r.add_argument("--results", type=Path, default=RESULTS)
    r.add_argument("--compare", type=Path, help="an earlier wild.json: print before/after side by side")
    r.add_argument(
        "--reuse-converted",
        action="store_true",
        help="check the convert outputs an earlier run left in OUT/convert again (checker work only)",
    )
    a = ap.parse_args(list(argv) if argv is not None else None)
    if a.cmd == "discover":
        discover(a.mirrors, a.out, a.repo)
        return 0
    if a.cmd == "fetch":
        return 1 if fetch(a.mirrors, a.out, a.manifest) else 0
    if a.reuse_converted:
        os.environ[REUSE_ENV] = "1"
    run(a.out, a.manifest, a.workers, a.family, a.results, a.compare)
    return 0


if __name__ == "__main__":
    sys.exit(main())
