"""The message walker: the messages after the task as Steps, each call paired with its
observation, in the dialect the replies use.

Format-error policy (``pipeline/parsers/format_errors.py``): a reply mini-swe-agent rejected (no or
several ``bash`` blocks) and its nudge are removed (``parse/format_error_removed``), since the v1
format has no place for them; the run is kept with its actions and observations untouched. When
the next reply's thought refers to that exchange, only its sentences about the formatting mistake
itself are removed (``parse/format_thought_repaired``); a thought that would still refer to it
drops the run (``parse/format_error_reference``)."""

from __future__ import annotations

import re
from collections import Counter

from pipeline.core.episode import Bash, ParseError, Step, ToolCall
from pipeline.parsers.dialects import (
    extract_calls,
    join_thought,
    split_tool_responses,
    strip_think,
)
from pipeline.parsers.format_errors import (
    is_format_nudge,
    repair_thought,
)
from pipeline.parsers.messages import Msg, first_user_index
from pipeline.parsers.observations import (
    MINI_RENDERED_RE,
    MINI_TIMEOUT_ELIDED_RE,
    MINI_TIMEOUT_RE,
    PRE1_TIMEOUT,
    decorated_observation,
    is_plain_output,
)


def walk_messages(
    msgs: list[Msg],
    counters: Counter[str],
    *,
    bare_fence: bool = False,
    structured: bool = False,
    fence_re: re.Pattern[str] | None = None,
) -> tuple[list[Step], str]:
    """Turn the messages after the task into Steps; return them and the dominant dialect.

    Assistant messages give calls (structured ``tool_calls`` first, else a text dialect);
    parallel calls become consecutive Steps with the thought on the first. ``tool`` messages
    are matched to calls by id, else in order; a ``user`` message answers the pending calls,
    one ``<tool_response>`` block per call in order. Text-only assistant messages carry their
    text into the next thought (``think``-like narration); an unanswered user message
    (format-error nudge) discards that carried text. A format-error exchange is removed and the
    thought of the reply after it repaired (:func:`repair_after_format_errors`).
    """
    steps: list[Step] = []
    # indices into steps of the last reply's calls still waiting for an observation, in order
    open_: list[int] = []
    carry = ""
    dialects: dict[str, int] = {}  # in first-seen order: the most frequent, ties to the first
    last_text_dialect = ""
    after_format_error = False
    # the first step of each reply that follows a removed exchange: its thought is repaired
    repair: list[int] = []
    start = first_user_index(msgs) + 1
    for m in msgs[start:]:
        role = m.role
        if role == "system":
            continue
        if role == "assistant":
            open_ = []
            if m.tool_calls:
                thought = strip_think(m.text)
                calls: list[ToolCall | Bash] = list(m.tool_calls)
                dialect = "tool_calls"
            elif structured:
                # a harness whose calls are all structured: a reply's text is narration, never
                # an action (a fenced block in it is an example the agent showed, not run)
                thought, calls, dialect = strip_think(m.text), [], "tool_calls"
            else:
                thought, calls, dialect = extract_calls(
                    m.text, bare_fence=bare_fence, counters=counters, fence_re=fence_re
                )
            if not calls:
                carry = join_thought(carry, thought)
                continue
            if after_format_error:
                repair.append(len(steps))
            after_format_error = False
            dialects[dialect] = dialects.get(dialect, 0) + 1
            last_text_dialect = dialect
            if carry:
                thought = join_thought(carry, thought)
                carry = ""
            for c in calls:
                open_.append(len(steps))
                steps.append(Step(thought, c, "", None))
                thought = ""  # on the first of parallel calls only
            continue
        if role == "tool":
            target = None
            if m.tool_call_id is not None:
                target = next((i for i in open_ if _call_id(steps[i]) == m.tool_call_id), None)
            if target is None and open_:
                target = open_[0]
            if target is None:
                counters["parse/orphan_tool_result"] += 1
                continue
            _fill(steps[target], m.text, m.returncode, counters)
            open_.remove(target)
            continue
        if role != "user":
            counters[f"parse/unknown_role/{role[:30]}"] += 1
            continue
        if not open_:
            carry = ""
            if m.format_error or is_format_nudge(m.text):  # a reply without any action refused
                counters["parse/format_error_removed"] += 1
                after_format_error = True
            else:
                counters["parse/orphan_user_message"] += 1
            continue
        if m.format_error or (last_text_dialect == "bash" and is_format_nudge(m.text)):
            # mini-swe rejected the reply: nothing ran, so the turn is not a step.
            for i in sorted(open_, reverse=True):
                del steps[i]
            repair = [i for i in repair if i < len(steps)]
            open_, carry = [], ""
            counters["parse/format_error_removed"] += 1
            after_format_error = True
            continue
        blocks = split_tool_responses(m.text)
        if blocks is None:
            _fill(steps[open_[0]], m.text, m.returncode, counters)
            del open_[0]
        else:
            if len(blocks) != len(open_):
                counters["parse/tool_response_count_mismatch"] += 1
            for i, b in zip(open_, blocks, strict=False):
                _fill(steps[i], b, None, counters)
            del open_[: len(blocks)]
    repair_after_format_errors(steps, repair, counters)
    dialect = max(dialects.items(), key=_count)[0] if dialects else "none"
    return steps, dialect


def repair_after_format_errors(steps: list[Step], indices: list[int], counters: Counter[str]) -> None:
    """Repair the thought of each step at ``indices`` (the first of a reply after a removed
    format-error exchange): its sentences about the mistake go (``parse/format_thought_repaired``);
    one that would still refer to the exchange drops the run (``parse/format_error_reference``)."""
    for i in indices:
        fixed = repair_thought(steps[i].thought)
        if fixed.thought is None:
            raise ParseError(
                "format_error_reference",
                f"the reply after a removed format error refers to it: {steps[i].thought[:80]!r}",
            )
        if fixed.removed:
            steps[i].thought = fixed.thought
            counters["parse/format_thought_repaired"] += 1


def _count(item: tuple[str, int]) -> int:
    return item[1]


def _call_id(s: Step) -> str | None:
    return s.call.call_id if isinstance(s.call, ToolCall) else None


def _fill(step: Step, raw: str, rc: int | None, counters: Counter[str]) -> None:
    if is_plain_output(raw):  # the usual output: kept as it is
        step.observation, step.returncode = raw, rc
    elif m := MINI_RENDERED_RE.match(raw):
        step.observation, step.returncode = m.group(2), rc if rc is not None else int(m.group(1))
    else:
        fill_decorated(step, raw, rc, counters)


def fill_decorated(step: Step, raw: str, rc: int | None, counters: Counter[str]) -> None:
    """``step``'s observation and return code from a tool result in any harness's wrapping
    (:func:`_fill`'s long way, the specification of its fast path)."""
    if raw.startswith(("The last command <command>", PRE1_TIMEOUT)):
        tm = MINI_TIMEOUT_RE.match(raw)
        if tm:  # mini-swe-agent killed the command: what it printed until then
            step.observation, step.returncode, step.timed_out = tm.group(1), None, True
            counters["parse/timed_out"] += 1
            return
        if MINI_TIMEOUT_ELIDED_RE.match(raw):
            raise ParseError("elided_output", "a timed-out command whose output the harness elided")
        if raw.strip() == PRE1_TIMEOUT:
            raise ParseError(
                "timeout_output_unknown", "pre-1.0 timeout message: what it printed was not kept"
            )
    obs, marker_rc = decorated_observation(raw, counters)  # = clean_observation: not plain
    step.observation = obs
    step.returncode = rc if rc is not None else marker_rc
