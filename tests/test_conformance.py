"""Conformance corpus: real public runs in tests/fixtures/real, each with a hand-checked
expectation in EXPECTATIONS.json, converted by the same code as ``trajpipe convert``.

Given a real run, the published result is exactly: converted or dropped (stage/reason), the number
of assistant actions that survive, whether it ends with the submit command, and the submitted
patch the final message shows; some entries also pin exact observations, command shapes, verbatim
text or a foreign root that must not survive. An entry whose expected result needs a fix of one of
the converter's known defect classes carries ``known_defect`` and is a strict xfail: once the class is fixed
the test XPASSes and fails until the mark is removed from the JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.convert.render import SUBMIT_COMMAND
from pipeline.orchestration.convert_files import convert_files
from pipeline.parsers.dialects import strip_think
from pipeline.parsers.format_errors import repair_thought
from pipeline.stages.validate import validate_messages

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
EXPECTATIONS: dict[str, dict[str, Any]] = json.loads((REAL / "EXPECTATIONS.json").read_text())
NOT_RUN_FILES = {"PROVENANCE.md", "README.md", "EXPECTATIONS.json"}
FILES = sorted(p.name for p in REAL.iterdir() if p.is_file() and p.name not in NOT_RUN_FILES)
OUTCOME = re.compile(r"converted|drop:[a-z_]+/[a-z_]+")
TIMEOUT_HEAD = "The last command <command>"  # mini-swe-agent 1.17.5 AgentConfig.timeout_template
TIMEOUT_TAIL = "</command> timed out and has been killed."
FORMAT_ERROR = "Please always provide EXACTLY ONE action in triple backticks"  # mini 1.x format-error reply
EMPTY_EDIT = re.compile(r"^(path|old) = (''|\"\")$", re.M)  # an edit script without its file or old text


def normalized_patch(text: str) -> str:
    """A patch as compared here: CRLF (SWE-agent's pty) as LF, without leading/trailing blank lines
    (SWE-agent's submit prints a newline before the diff)."""
    return text.replace("\r\n", "\n").strip("\n")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def raw_mini_actions(uid: str) -> list[str]:
    """The assistant messages of a raw mini-swe-agent run that are actions (a message answered by
    mini's format-error reply is not), the one after that reply without the sentences the
    format-error policy removes (specified in tests/test_format_errors.py)."""
    doc = orjson.loads((REAL / uid.split("#")[0]).read_bytes())
    msgs = doc if isinstance(doc, list) else doc["messages"]
    out = []
    for i, m in enumerate(msgs):
        if m["role"] != "assistant" or (i + 1 < len(msgs) and FORMAT_ERROR in msgs[i + 1]["content"]):
            continue
        text = m["content"]
        if FORMAT_ERROR in msgs[i - 1]["content"]:
            for sentence in repair_thought(strip_think(text.split("```bash", 1)[0])).removed:
                text = (
                    text.replace(sentence + " ", "", 1)
                    if sentence + " " in text
                    else text.replace(sentence, "", 1)
                )
        out.append(text)
    return out


def command_of(assistant: str) -> str:
    return assistant.rsplit("```bash\n", 1)[1].removesuffix("\n```")


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every run of every corpus file through ``convert_files`` (what ``trajpipe convert`` runs)."""
    out = tmp_path_factory.mktemp("conformance") / "out.jsonl"
    convert_files([REAL / name for name in FILES], out)
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    by_uid = {line["source_uid"]: line for line in lines}
    assert len(by_uid) == len(lines), "one line per run"
    return by_uid


def outcome_of(line: dict[str, Any]) -> str:
    return "converted" if "messages" in line else f"drop:{line['drop']['stage']}/{line['drop']['reason']}"


def test_every_file_is_covered_and_every_entry_is_complete() -> None:
    covered = {uid.split("#")[0] for uid in EXPECTATIONS}
    assert covered == set(FILES), "every corpus file has an expectation and every expectation a file"
    provenance = (REAL / "PROVENANCE.md").read_text()
    for uid, e in EXPECTATIONS.items():
        assert OUTCOME.fullmatch(e["outcome"]), uid
        assert e["format"] is None or e["format"] in {
            "SWE-agent",
            "OpenHands",
            "SWE-smith",
            "mini-swe-agent",
        }, uid
        if e["outcome"] == "converted":
            assert isinstance(e["actions"], int) and e["actions"] > 0 and isinstance(e["submit"], bool), uid
            assert e["submit"] or "patch_sha256" not in e, uid
        name = uid.split("#")[0]
        digest = hashlib.sha256((REAL / name).read_bytes()).hexdigest()
        assert f"| `{name}` |" in provenance and digest in provenance, (
            f"{name}: PROVENANCE.md row with its sha256"
        )


def test_every_run_in_the_corpus_has_an_expectation(published: dict[str, dict[str, Any]]) -> None:
    assert set(published) == set(EXPECTATIONS)


def _params() -> list[Any]:
    params = []
    for uid, e in EXPECTATIONS.items():
        marks = (
            [pytest.mark.xfail(strict=True, reason=f"known defect class {e['known_defect']}")]
            if "known_defect" in e
            else []
        )
        params.append(pytest.param(uid, id=uid, marks=marks))
    return params


@pytest.mark.parametrize("uid", _params())
def test_real_run_converts_as_expected(uid: str, published: dict[str, dict[str, Any]]) -> None:
    e = EXPECTATIONS[uid]
    line = published[uid]
    assert line["format"] == e["format"]
    assert outcome_of(line) == e["outcome"]
    if e["outcome"] != "converted":
        return
    msgs = line["messages"]
    commands = [command_of(m["content"]) for m in msgs[2::2]]
    assert len(commands) == e["actions"]
    assert (commands[-1] == SUBMIT_COMMAND) is e["submit"]
    assert SUBMIT_COMMAND not in commands[:-1], "only the last action may be the submit"
    assert not [t for t, cmd in enumerate(commands) if EMPTY_EDIT.search(cmd)], (
        "an edit lost its path or old text"
    )
    if "patch_sha256" in e:
        final = normalized_patch(msgs[-1]["content"])
        assert (sha256(final), len(final.splitlines())) == (e["patch_sha256"], e["patch_lines"])
    for turn in e.get("timeout_turns", []):
        reply = msgs[3 + 2 * turn]["content"]
        assert reply.startswith(TIMEOUT_HEAD) and TIMEOUT_TAIL in reply, f"turn {turn}: {reply[:120]!r}"
    for turn, reply in e.get("replies", {}).items():  # exact observations (e.g. a kept final newline)
        assert msgs[3 + 2 * int(turn)]["content"] == reply, f"turn {turn}"
    for turn, pattern in e.get("command_regex", {}).items():
        assert re.search(pattern, commands[int(turn)]), f"turn {turn}: {commands[int(turn)][:200]!r}"
    for turn, pattern in e.get("command_not_regex", {}).items():  # e.g. a clipped view is not a `cat -n`
        assert not re.search(pattern, commands[int(turn)]), f"turn {turn}: {commands[int(turn)][:200]!r}"
    if e.get("assistant_verbatim"):  # mini v1 text that mini itself parsed to one action is kept as it was
        assert [m["content"] for m in msgs[2::2]] == raw_mini_actions(uid)
    for pattern in e.get("absent", []):  # a foreign root that must have become /testbed everywhere
        assert not [i for i, m in enumerate(msgs) if re.search(pattern, m["content"])], pattern


def test_every_converted_run_is_read_back_by_mini_swe_agent(published: dict[str, dict[str, Any]]) -> None:
    """Whatever today's fidelity, a published run is valid mini-swe-agent 1.17.5 format."""
    from tests.test_samples import real_agent

    agent = real_agent()
    converted = [line for line in published.values() if "messages" in line]
    assert converted
    for line in converted:
        msgs = line["messages"]
        commands = [command_of(m["content"]) for m in msgs[2::2]]
        assert validate_messages(msgs, commands) == [], line["source_uid"]
        for t, cmd in enumerate(commands):
            assert agent.parse_action({"content": msgs[2 + 2 * t]["content"]})["action"] == cmd, (
                line["source_uid"],
                t,
            )
