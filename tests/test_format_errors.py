"""The format-error policy (pipeline/parsers/format_errors.py), on real Gemini 3 Pro runs of
mini-swe-agent 1.15 (tests/fixtures/real/format_errors/, trimmed, see PROVENANCE.md): the refused
reply and the nudge are removed, the next reply loses only its sentences about the mistake, and a
run whose reference also speaks of the task is dropped rather than cut."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.core.config import Config
from pipeline.core.episode import Bash, ParseError, RawRun
from pipeline.orchestration.convert_files import convert_files
from pipeline.orchestration.runner import run_pipeline
from pipeline.parsers import parse_raw
from pipeline.parsers.format_errors import is_mistake_sentence, repair_thought
from tests.corpus_kit import add_epoch, view_record

FIXTURES = Path(__file__).parent / "fixtures" / "real" / "format_errors"
APOLOGY = FIXTURES / "mini-v1-gemini3-django__django-13670-trimmed.traj.json"
MIXED = FIXTURES / "mini-v1-gemini3-django__django-12273-trimmed.traj.json"
DROPPED = FIXTURES / "mini-v1-gemini3-django__django-16493-trimmed.traj.json"


def raw_messages(path: Path) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = orjson.loads(path.read_bytes())["messages"]
    return msgs


def converted(path: Path, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "out.jsonl"
    convert_files([path], out)
    (line,) = out.read_bytes().splitlines()
    got: dict[str, Any] = orjson.loads(line)
    return got


def raw_run(path: Path) -> RawRun:
    return RawRun(f"{path.name}#row=0", "mini-swe-agent", "miniswe", None, orjson.loads(path.read_bytes()), 0)


# --------------------------------------------------------------------------- real runs, end to end


def test_the_exchange_and_the_apology_go_and_every_other_message_stays(tmp_path: Path) -> None:
    raw = raw_messages(APOLOGY)
    # the raw run: message 22 has two bash blocks, 23 is mini's nudge, 24 starts with an apology
    assert raw[22]["content"].count("```bash") == 2
    assert raw[23]["content"].startswith(
        "Please always provide EXACTLY ONE action in triple backticks, found 2"
    )
    assert raw[24]["content"].startswith("THOUGHT: My apologies. I will run the grep command")
    published = converted(APOLOGY, tmp_path)["messages"]
    assert published == [
        *[{"role": m["role"], "content": m["content"]} for m in raw[:22]],
        {
            "role": "assistant",
            "content": 'THOUGHT: I will run the grep command to search for "year" in `django/utils/dateformat.py`.'
            '\n\n```bash\ngrep -n -i "year" django/utils/dateformat.py\n```',
        },
        {"role": "user", "content": raw[25]["content"]},
    ]


def test_a_sentence_about_the_format_and_the_task_is_kept_whole(tmp_path: Path) -> None:
    raw = raw_messages(MIXED)
    assert raw[9]["content"].startswith("Please always provide EXACTLY ONE action")
    published = converted(MIXED, tmp_path)["messages"]
    assert published[:8] == [{"role": m["role"], "content": m["content"]} for m in raw[:8]]
    assert published[8]["content"] == raw[10]["content"].replace(
        "I made a mistake in the previous response by including the `cat` command and the `python3` "
        "command in separate blocks (or implying I would run them). I must provide exactly one bash block."
        "\n\n",
        "",
    )
    # the sentence that names the file stays, with its "single command block"
    assert published[8]["content"].startswith(
        "THOUGHT: I will update `reproduce_issue.py` and run it in a single command block.\n\n```bash\n"
    )
    assert published[9] == {"role": "user", "content": raw[11]["content"]}
    assert len(published) == len(raw) - 2


def test_a_reference_that_also_speaks_of_the_task_drops_the_run() -> None:
    with pytest.raises(ParseError) as err:
        parse_raw(raw_run(DROPPED))
    assert err.value.reason == "format_error_reference"
    # the sentence it could not remove: it is about the refused reply and about the `sed` command
    assert not is_mistake_sentence(
        "I haven't executed the `sed` command yet because the previous response was rejected."
    )


def test_the_counters_count_exchanges_and_edited_thoughts() -> None:
    ep = parse_raw(raw_run(APOLOGY))
    assert (ep.counters["parse/format_error_removed"], ep.counters["parse/format_thought_repaired"]) == (1, 1)
    assert ep.steps[10].call == Bash('grep -n -i "year" django/utils/dateformat.py')


# --------------------------------------------------------------------------- sentences (real thoughts)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("I apologize for the formatting error.", ""),
        (
            "I apologize for the formatting error. I will apply the `sed` command to modify "
            "`django/contrib/auth/backends.py`.",
            "I will apply the `sed` command to modify `django/contrib/auth/backends.py`.",
        ),
        (
            "I made a mistake in the previous response by including two bash blocks. I will correct this."
            "\n\nI want to test the edge case where the field is not removed from the base class.",
            "I want to test the edge case where the field is not removed from the base class.",
        ),
        (
            "I made a mistake in the previous response by including two code blocks (one for `cat` and one "
            "for `python3`). I should only provide one command. I will create the file `reproduce_issue_v3.py`"
            " and then run it in the next step.",
            "I will create the file `reproduce_issue_v3.py` and then run it in the next step.",
        ),
        (
            "I made a mistake again with multiple blocks. I will find the line number and replace it in one go.",
            "I will find the line number and replace it in one go.",
        ),
        (
            "I am very confused. I provided one block.\nMaybe the system counts lines of code as actions? No."
            "\n\nI will try to be extremely simple.",
            "I will try to be extremely simple.",
        ),
        (  # a code block in the thought is never touched
            "My apologies. The line is:\n```python\nx = 1  # only one command\n```\nI will edit it.",
            "The line is:\n```python\nx = 1  # only one command\n```\nI will edit it.",
        ),
    ],
)
def test_only_the_sentences_about_the_mistake_are_removed(before: str, after: str) -> None:
    assert repair_thought(before).thought == after


@pytest.mark.parametrize(
    "sentence",
    [  # real sentences after a format error that speak of the format AND the task: never removed
        "I will update `reproduce_issue.py` and run it in a single command block.",
        "I will combine the `sed` and `python3` commands.",
        "I will combine the two sed commands for the denominator fix into one block.",
        "I will combine the creation of `reproduce_app/models.py` and `reproduce_issue.py` into one command.",
        "I will correct this by running the `nl` command first to verify the line content.",
        "I made a mistake by running multiple `sed` delete commands with line numbers that shift.",
        "I want to see the line numbers around `get_format` definition to insert the fix correctly.",
        "I will create the python script to update `astropy/units/format/cds.py`.",
        "The function should return exactly one element.",
        "Line 97 is:",
    ],
)
def test_a_sentence_that_also_says_something_about_the_task_is_not_removed(sentence: str) -> None:
    assert not is_mistake_sentence(sentence)
    kept = repair_thought(f"I apologize. {sentence}")
    assert kept.removed == ("I apologize.",)
    assert kept.thought in (sentence, None)  # kept whole, or the run dropped: never cut


def test_a_task_sentence_that_only_mentions_the_format_rule_keeps_the_run() -> None:
    thought = "I apologize. I will update `reproduce_issue.py` and run it in a single command block."
    assert repair_thought(thought).thought == (
        "I will update `reproduce_issue.py` and run it in a single command block."
    )


def test_a_kept_sentence_that_still_refers_to_the_exchange_drops_the_run() -> None:
    assert (
        repair_thought("My apologies. I will correct this by running the `nl` command first.").thought is None
    )


# --------------------------------------------------------------------------- counters in audit


def test_audit_counters_show_the_removed_exchanges_and_repaired_thoughts(tmp_path: Path) -> None:
    """An Affine trace of a mini harness with a format error (the same exchange): the counters
    reach stats.json and ``trajpipe audit --counters``."""
    rec = view_record("roll-1")
    nodes = rec["nodes"]
    refused = {"role": "assistant", "content": "THOUGHT: two.\n\n```bash\nls\n```\n\n```bash\npwd\n```"}
    nudge = {
        "role": "user",
        "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
    }
    nodes[2:2] = [refused, nudge]
    nodes[4]["content"] = (
        "THOUGHT: I apologize for the multiple blocks. Let me look around.\n\n```bash\nls /testbed\n```"
    )
    for i, node in enumerate(nodes):
        node["parent"] = i - 1 if i else None
    corpus, work = tmp_path / "corpus", tmp_path / "work"
    add_epoch(corpus, 1, [[rec]])
    run_pipeline(Config(affine=(str(corpus),), workdir=str(work), no_benchmarks=True, workers=1))
    res = CliRunner().invoke(app, ["audit", "--workdir", str(work), "--json"])
    assert res.exit_code == 0, res.output
    report = orjson.loads(res.stdout)
    assert report["totals"]["published"] == 1
    other = report["counters"]["other"]
    assert (other["parse/format_error_removed"], other["parse/format_thought_repaired"]) == (1, 1)
    text = (
        CliRunner(env={"COLUMNS": "200"}).invoke(app, ["audit", "--workdir", str(work), "--counters"]).stdout
    )
    assert "parse/format_error_removed" in text and "parse/format_thought_repaired" in text


# --------------------------------------------------------------------------- mini-swe-agent v2


def _v2(messages: list[dict[str, Any]]) -> RawRun:
    payload = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.1.0"},
        "messages": messages,
    }
    return RawRun("v2#row=0", "mini-swe-agent", "miniswe", None, payload, 0)


V2_NUDGE = (
    "Format error:\n\n<error>\nPlease always provide EXACTLY ONE action in triple backticks, found 2 actions.\n"
    "</error>\n\nHere is general guidance on how to format your response:"
)


def test_a_v2_text_run_loses_its_exchange_and_its_apology() -> None:
    ep = parse_raw(
        _v2(
            [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "Please solve this issue: Fix x"},
                {
                    "role": "assistant",
                    "content": "Two.\n```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```",
                },
                {"role": "user", "content": V2_NUDGE, "extra": {"interrupt_type": "FormatError"}},
                {
                    "role": "assistant",
                    "content": "Sorry about that. Listing `src`.\n```mswea_bash_command\nls src\n```",
                },
                {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>"},
            ]
        )
    )
    assert [(s.thought, s.call, s.observation, s.returncode) for s in ep.steps] == [
        ("Listing `src`.", Bash("ls src"), "a.py\n", 0)
    ]


def test_a_v2_tool_call_refused_by_the_harness_is_no_step() -> None:
    """mini v2 answers a tool call it cannot run (unknown tool, no command) with a FormatError
    message, not a tool result: nothing ran, so the call is not a step and its nudge no output."""
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    good = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    ep = parse_raw(
        _v2(
            [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "Please solve this issue: Fix x"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {
                    "role": "user",
                    "content": "Tool call error:\n\n<error>\nMissing 'command' argument in bash tool call.\n</error>",
                    "extra": {"interrupt_type": "FormatError"},
                },
                {"role": "assistant", "content": "I apologize. Listing.", "tool_calls": [good]},
                {"role": "tool", "tool_call_id": "c2", "content": "a.py\n", "extra": {"returncode": 0}},
            ]
        )
    )
    assert [(s.thought, s.observation, s.returncode) for s in ep.steps] == [("Listing.", "a.py\n", 0)]
    assert ep.counters["parse/format_error_removed"] == 1
