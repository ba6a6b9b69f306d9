"""The message walker keeps the calls still waiting for an observation as one list, in order:
it pairs calls and observations exactly as its earlier form (below, kept as the specification)
did with the last reply's calls and the set of those already answered, on any sequence of the
messages harnesses write (parallel calls, results by id or in order, several tool responses,
format-error nudges, orphans)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.episode import Bash, ParseError, Step, ToolCall
from pipeline.parsers import walker
from pipeline.parsers.dialects import extract_calls, join_thought, split_tool_responses, strip_think
from pipeline.parsers.format_errors import FORMAT_ERROR_MARKERS
from pipeline.parsers.messages import Msg, first_user_index
from pipeline.parsers.walker import _fill, repair_after_format_errors, walk_messages


def reference_walk(msgs: list[Msg], counters: Counter[str]) -> tuple[list[Step], str]:
    """walk_messages as it was: the last reply's calls (pending) and the answered ones (filled);
    format errors as they are now (the exchange removed, the next reply's thought repaired)."""
    steps: list[Step] = []
    pending: list[int] = []
    filled: set[int] = set()
    carry = ""
    dialects: dict[str, int] = {}
    last_text_dialect = ""
    after_format_error = False
    repair: list[int] = []
    for m in msgs[first_user_index(msgs) + 1 :]:
        role = m.role
        if role == "system":
            continue
        if role == "assistant":
            pending = []
            if m.tool_calls:
                thought, calls, dialect = (
                    strip_think(m.text),
                    list[ToolCall | Bash](m.tool_calls),
                    "tool_calls",
                )
            else:
                thought, calls, dialect = extract_calls(m.text, counters=counters)
            if not calls:
                carry = join_thought(carry, thought)
                continue
            if after_format_error:
                repair.append(len(steps))
            after_format_error = False
            dialects[dialect] = dialects.get(dialect, 0) + 1
            last_text_dialect = dialect
            if carry:
                thought, carry = join_thought(carry, thought), ""
            for c in calls:
                pending.append(len(steps))
                steps.append(Step(thought, c, "", None))
                thought = ""
            continue
        open_ = [i for i in pending if i not in filled] if filled else pending
        if role == "tool":
            target = None
            if m.tool_call_id is not None:
                target = next((i for i in open_ if walker._call_id(steps[i]) == m.tool_call_id), None)
            if target is None and open_:
                target = open_[0]
            if target is None:
                counters["parse/orphan_tool_result"] += 1
                continue
            _fill(steps[target], m.text, m.returncode, counters)
            filled.add(target)
            continue
        if role != "user":
            counters[f"parse/unknown_role/{role[:30]}"] += 1
            continue
        nudge = "<returncode>" not in m.text and any(k in m.text for k in FORMAT_ERROR_MARKERS)
        if not open_:
            carry = ""
            counters["parse/format_error_removed" if nudge else "parse/orphan_user_message"] += 1
            after_format_error = after_format_error or nudge
            continue
        if last_text_dialect == "bash" and nudge:
            for i in sorted(open_, reverse=True):
                del steps[i]
            pending, filled, carry = [], {i for i in filled if i < len(steps)}, ""
            repair = [i for i in repair if i < len(steps)]
            counters["parse/format_error_removed"] += 1
            after_format_error = True
            continue
        blocks = split_tool_responses(m.text)
        if blocks is None:
            _fill(steps[open_[0]], m.text, m.returncode, counters)
            filled.add(open_[0])
        else:
            if len(blocks) != len(open_):
                counters["parse/tool_response_count_mismatch"] += 1
            for i, b in zip(open_, blocks, strict=False):
                _fill(steps[i], b, None, counters)
                filled.add(i)
    repair_after_format_errors(steps, repair, counters)
    dialect = max(dialects.items(), key=lambda kv: kv[1])[0] if dialects else "none"
    return steps, dialect


def _calls(n: int) -> list[ToolCall]:
    return [ToolCall("bash", {"command": f"c{j}"}, call_id=f"id{j}") for j in range(n)]


MESSAGES = [
    Msg("assistant", "run\n```bash\nls\n```"),
    Msg("assistant", "two\n```bash\na\n```\n```bash\nb\n```"),
    Msg("assistant", "just narration"),
    Msg("assistant", "sorry, exactly one command\n```bash\nls\n```"),
    Msg("assistant", "I apologize. Let me list `src`.\n```bash\nls src\n```"),
    Msg("assistant", '<tool_call>{"name": "bash", "arguments": {}}</tool_call>'),
    Msg("assistant", "", tool_calls=_calls(1)),
    Msg("assistant", "par", tool_calls=_calls(3)),
    Msg("user", "<returncode>0</returncode>\n<output>\nok\n</output>"),
    Msg("user", "<tool_response>\nA\n</tool_response>"),
    Msg("user", "<tool_response>\nA\n</tool_response><tool_response>\nB\n</tool_response>"),
    Msg("user", "Please always provide EXACTLY ONE action in triple backticks."),
    Msg("user", "plain output"),
    Msg("tool", "by id 1", tool_call_id="id1"),
    Msg("tool", "by id 2", tool_call_id="id2"),
    Msg("tool", "no id"),
    Msg("tool", "unknown id", tool_call_id="nope"),
    Msg("system", "sys"),
    Msg("critic", "?"),
]
runs = st.lists(st.sampled_from(MESSAGES), max_size=25).map(lambda ms: [Msg("user", "task"), *ms])


def _outcome(walk: object, msgs: list[Msg]) -> object:
    counters: Counter[str] = Counter()
    try:
        steps, dialect = walk(msgs, counters)  # type: ignore[operator]
    except ParseError as e:
        return e.reason
    return repr(steps), dialect, counters


@settings(max_examples=1500, deadline=None)
@given(runs)
def test_walker_pairs_calls_and_observations_as_its_earlier_form(msgs: list[Msg]) -> None:
    assert _outcome(walk_messages, msgs) == _outcome(reference_walk, msgs)
