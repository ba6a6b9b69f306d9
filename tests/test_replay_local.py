"""Replay without upstream trees: every real fixture run is converted, the files it
displayed whole (``cat``, ``cat -n``, a SWE-agent window showing every line) are rebuilt from its
own outputs, and the converted commands that touch only those files (edit scripts, creates,
later displays) are run with bash and must print exactly the converted observation.

The upstream-tree replay of the same runs is ``bench/replay.py`` (results in README "Replay").
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pipeline.devkit.replay import (
    RewriteShell,
    Turn,
    local_replay,
    render_timeout,
    runtime_dependent,
    skip_reason,
    touched_paths,
    turns_of,
    whole_display,
)
from pipeline.orchestration.convert_files import convert_files

REAL = Path(__file__).parent / "fixtures" / "real"
FILES = sorted(
    f
    for f in REAL.iterdir()
    if f.is_file() and f.suffix in (".traj", ".json", ".jsonl") and f.name != "EXPECTATIONS.json"
)

# Differences the converter still has, by run and turn, with their defect class. A
# difference not listed here fails the test; a listed one that is fixed may disappear.
KNOWN: dict[str, dict[int, str]] = {
    # class 8: the earliest pre-1.0 mini-swe-agent dialect (<args> echo of the docker command,
    # <returncode>/<stdout>/<stderr> blocks, NANO sentinel) keeps its tags in the observation
    "mini-pre1-0701-github-issue.traj.json#row=0": {5: "class 8", 9: "class 8"},
}


def _converted(tmp: Path) -> list[dict]:
    out = tmp / "converted.jsonl"
    convert_files(FILES, out)
    return [r for r in map(orjson.loads, out.read_bytes().splitlines()) if r.get("messages")]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return _converted(tmp_path_factory.mktemp("replay"))


@pytest.fixture(scope="module")
def outcomes(converted: list[dict], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    res = {}
    for run in converted:
        tree = tmp_path_factory.mktemp("testbed")
        res[run["source_uid"]] = local_replay(turns_of(run["messages"]), tree, RewriteShell(tree))
    return res


def test_every_locally_replayable_turn_prints_its_converted_observation(outcomes: dict[str, list]) -> None:
    unexplained = {
        uid: [
            (o.index, o.command.splitlines()[0][:80], o.diff)
            for o in outs
            if o.status == "differs" and o.index not in KNOWN.get(uid, {})
        ]
        for uid, outs in outcomes.items()
    }
    assert {k: v for k, v in unexplained.items() if v} == {}


def test_local_replay_covers_edits_and_later_displays(outcomes: dict[str, list]) -> None:
    statuses = [o for outs in outcomes.values() for o in outs]
    replayed = [o for o in statuses if o.status in ("identical", "differs")]
    edits = [o for o in replayed if o.command.startswith("python3 - <<")]
    seeded = [o for o in statuses if o.status == "seeded"]
    assert len(seeded) >= 3 and len(replayed) >= 10 and len(edits) >= 2


def test_a_changed_edit_observation_is_caught(converted: list[dict], tmp_path: Path) -> None:
    """Given a real run whose edit observation is changed by one character, the turn differs."""
    run = next(r for r in converted if r["source_uid"].startswith("sweagent-demo-function-calling-simple"))
    turns = turns_of(run["messages"])
    clean = local_replay(turns, tmp_path / "a", RewriteShell(tmp_path / "a"))
    edit = next(o for o in clean if o.status == "identical" and o.command.startswith("python3 - <<"))
    bad = [
        Turn(
            t.index,
            t.command,
            t.observation.replace("\n", "\nX", 1) if t.index == edit.index else t.observation,
            t.submit,
        )
        for t in turns
    ]
    (tmp_path / "b").mkdir()
    again = local_replay(bad, tmp_path / "b", RewriteShell(tmp_path / "b"))
    assert [o.status for o in again if o.index == edit.index] == ["differs"]


def _turn(cmd: str, out: str, rc: int = 0) -> Turn:
    return Turn(1, cmd, f"<returncode>{rc}</returncode>\n<output>\n{out}</output>")


def test_whole_displays_rebuild_the_file_they_show() -> None:
    assert whole_display(_turn("cat -n /testbed/a.py", "     1\tx = 1\n     2\t\n     3\ty")) == (
        "/testbed/a.py",
        "x = 1\n\ny",
    )
    assert whole_display(_turn("cat README", "hello\n")) == ("README", "hello\n")
    window = "awk 'NR>=1&&NR<=100{l[NR]=$0} END{n=NR; print n}' '/testbed/r.py'"
    assert whole_display(_turn(window, "[File: /testbed/r.py (2 lines total)]\n1:a\n2:b\n")) == (
        "/testbed/r.py",
        "a\nb\n",
    )
    # a window that does not reach the end, a failed cat, a pipe: not whole
    assert (
        whole_display(_turn(window.replace("NR>=1", "NR>=2"), "[File: /testbed/r.py (2 lines total)]\n2:b\n"))
        is None
    )
    assert whole_display(_turn("cat /testbed/x", "cat: /testbed/x: No such file or directory\n", 1)) is None
    assert whole_display(_turn("cat -n /testbed/a.py | sed -n '1,2p'", "     1\tx\n")) is None


def test_commands_are_classified_for_replay() -> None:
    assert touched_paths("sed -i 's/a/b/' src/x.py") == ({"/testbed/src/x.py"}, set())
    assert touched_paths("cat <<'EOF' > new.py\nprint(1)\nEOF") == (set(), {"/testbed/new.py"})
    assert touched_paths("cat <<'EOF' >> old.py\nprint(1)\nEOF") == ({"/testbed/old.py"}, set())
    assert touched_paths("grep -n foo /etc/passwd") is None
    assert touched_paths("python reproduce.py") is None
    assert skip_reason("pip install -e .") == "package" and skip_reason("cd x && git clone u") == "network"
    assert skip_reason("python -m pip list") == "package" and skip_reason("grep pip setup.py") is None
    assert runtime_dependent("python reproduce.py") and runtime_dependent("pytest -x tests/")
    assert not runtime_dependent("python3 - <<'EOF'\nimport sys\nprint(1)\nEOF")
    assert runtime_dependent("python3 - <<'EOF'\nimport requests\nEOF")


def test_timeout_template_is_mini_swe_agents() -> None:
    """render_timeout equals mini-swe-agent 1.17.5's own timeout_template, rendered by jinja2."""
    from jinja2 import StrictUndefined, Template
    from minisweagent.agents.default import AgentConfig

    for output in ("partial\n", "x" * 12000):
        expected = Template(AgentConfig.timeout_template, undefined=StrictUndefined).render(
            action={"action": "sleep 100"}, output=output
        )
        assert render_timeout("sleep 100", output) == expected


def test_replay_turns_of_a_converted_run(converted: list[dict]) -> None:
    run = next(r for r in converted if r["source_uid"].startswith("sweagent-demo-textaction-window"))
    turns = turns_of(run["messages"])
    assert turns[-1].submit and not any(t.submit for t in turns[:-1])
    assert len(turns) == (len(run["messages"]) - 2) // 2


def test_file_dates_alone_are_told_apart_from_other_differences() -> None:
    from pipeline.devkit.replay import dates_only

    ours = "-rw-r--r-- 1 root root   61 Nov 30 21:31 Dockerfile\n"
    assert dates_only("-rw-r--r-- 1 root root   61 Jul 17 01:31 Dockerfile\n", ours)
    assert dates_only("-rw-r--r-- 1 root root   61 Jul 17  2024 Dockerfile\n", ours)
    assert not dates_only("-rw-r--r-- 1 root root   62 Jul 17 01:31 Dockerfile\n", ours)
