"""Shared helpers for every parser: defensive field access, message normalisation, the message
walker that pairs calls with observations, observation cleanup, roots, submit detection.

Everything here treats its input as hostile: wrong types become ``ParseError("bad_shape", …)``
with a location, never a ``KeyError``/``TypeError``.

Format-error policy (``pipeline/parsers/format_errors.py``): a reply mini-swe-agent rejected (no or
several ``bash`` blocks) and its nudge are removed (``parse/format_error_removed``), since the v1
format has no place for them; the run is kept with its actions and observations untouched. When
the next reply's thought refers to that exchange, only its sentences about the formatting mistake
itself are removed (``parse/format_thought_repaired``); a thought that would still refer to it
drops the run (``parse/format_error_reference``).
Timeouts: mini-swe-agent's own timeout message marks ``Step.timed_out`` with the partial output;
one whose output is elided or was not kept is dropped (``parse/elided_output``,
``parse/timeout_output_unknown``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from pipeline.core.episode import Bash, Episode, Meta, ParseError, Resolved, Step, Task, ToolCall
from pipeline.parsers.dialects import (  # the thought helpers are re-exported for the parsers
    extract_calls,
    join_thought,
    split_tool_responses,
    strip_think,
)
from pipeline.parsers.format_errors import (  # re-exported: the format-error policy's names
    FORMAT_ERROR_MARKERS,
    FORMAT_ERROR_REFERENCE_RE,
    is_format_nudge,
    repair_thought,
)
from schemas.miniswe import INPUT_SENTINELS

__all__ = [
    "FORMAT_ERROR_MARKERS",
    "FORMAT_ERROR_REFERENCE_RE",
    "extract_calls",
    "join_thought",
    "repair_thought",
    "split_tool_responses",
    "strip_think",
]

SUBMIT_MARKERS = INPUT_SENTINELS
# Affine completion.py's finish-tool names (case-insensitive).
FINISH_RE = re.compile(
    r"^(submit|finish|done|complete|task_complete|complete_task|attempt_completion|final_answer"
    r"|submit_answer|finish_task)$",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- field access


def as_dict(x: Any, where: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise ParseError("bad_shape", f"{where}: expected object, got {type(x).__name__}")
    return x


def sub_dict(d: dict[str, Any], key: str) -> dict[str, Any]:
    """``d[key]`` when it is an object, else an empty one (an optional nested object)."""
    v = d.get(key)
    return v if isinstance(v, dict) else {}


def as_list(x: Any, where: str) -> list[Any]:
    if isinstance(x, str):
        # Several datasets (SWE-smith trajectories, SWE-Lego mirrors) store lists as JSON text.
        try:
            x = orjson.loads(x)
        except orjson.JSONDecodeError as e:
            raise ParseError("bad_json", f"{where}: {e}") from None
    if not isinstance(x, list):
        raise ParseError("bad_shape", f"{where}: expected list, got {type(x).__name__}")
    return x


def opt_str(x: Any) -> str | None:
    """A scalar as text (ids may be ints); None for missing or structured values."""
    if x is None or isinstance(x, dict | list):
        return None
    if isinstance(x, bool):
        return str(x).lower()
    return str(x)


def text_of(content: Any, where: str) -> str:
    """Message content as text: a string, or a list of ``{type: "text", text}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for i, p in enumerate(content):
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                t = p.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif p.get("type") not in (None, "text") or t is None:
                    continue  # images and other non-text parts carry no shell output
                else:
                    raise ParseError("bad_shape", f"{where}[{i}].text: {type(t).__name__}")
            else:
                raise ParseError("bad_shape", f"{where}[{i}]: {type(p).__name__}")
        return "".join(parts)
    raise ParseError("bad_shape", f"{where}: content is {type(content).__name__}")


def decode_args(raw: Any, where: str) -> dict[str, Any]:
    """Tool-call arguments: an object, a JSON string of one, or empty."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ParseError("bad_arguments", f"{where}: arguments are not JSON") from None
        if isinstance(val, dict):
            return val
        raise ParseError("bad_arguments", f"{where}: arguments decode to {type(val).__name__}")
    raise ParseError("bad_arguments", f"{where}: arguments are {type(raw).__name__}")


def structured_call(tc: Any, where: str) -> ToolCall:
    """One OpenAI-style tool call: ``{name, arguments}`` or ``{function: {name, arguments}}``."""
    tc = as_dict(tc, where)
    fn = tc.get("function")
    src = fn if isinstance(fn, dict) else tc
    name = src.get("name")
    if not isinstance(name, str) or not name:
        raise ParseError("bad_shape", f"{where}: tool call without a name")
    args_raw = src.get("arguments", src.get("args", src.get("input")))
    return ToolCall(
        name=name, args=decode_args(args_raw, f"{where}.arguments"), call_id=opt_str(tc.get("id"))
    )


# --------------------------------------------------------------------------- messages


@dataclass(slots=True)
class Msg:
    role: str
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    returncode: int | None = None  # from a structured field (mini-swe v2 ``extra.returncode``)
    format_error: bool = False  # mini-swe v2 marks its nudge ``extra.interrupt_type: FormatError``


def _int_or_none(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str) and re.fullmatch(r"-?\d{1,9}", x.strip()):
        return int(x)
    return None


_ROLE_ALIASES = {"ai": "assistant", "human": "user", "function": "tool"}


def normalize_message(m: Any, where: str) -> Msg:
    m = as_dict(m, where)
    role = m.get("role")
    if not isinstance(role, str):
        raise ParseError("bad_shape", f"{where}.role: {type(role).__name__}")
    role = _ROLE_ALIASES.get(role, role)
    content = m.get("content")
    # plain text (the usual case) needs no location string for text_of's errors
    text = content if isinstance(content, str) else text_of(content, f"{where}.content")
    calls: list[ToolCall] = []
    raw_calls = m.get("tool_calls")
    if raw_calls:
        for j, tc in enumerate(as_list(raw_calls, f"{where}.tool_calls")):
            calls.append(structured_call(tc, f"{where}.tool_calls[{j}]"))
    tcid = opt_str(m.get("tool_call_id"))
    ids = m.get("tool_call_ids")
    if tcid is None and isinstance(ids, list) and ids:
        tcid = opt_str(ids[0])
    extra = m.get("extra")
    rc = _int_or_none(extra.get("returncode")) if isinstance(extra, dict) else None
    nudge = isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError"
    return Msg(role=role, text=text, tool_calls=calls, tool_call_id=tcid, returncode=rc, format_error=nudge)


def normalize_messages(raw: Any, where: str) -> list[Msg]:
    return [normalize_message(m, f"{where}[{i}]") for i, m in enumerate(as_list(raw, where))]


def first_user_index(msgs: list[Msg]) -> int:
    for i, m in enumerate(msgs):
        if m.role == "user":
            return i
    raise ParseError("no_task", "no user message")


# --------------------------------------------------------------------------- tail searches
# Harness trailers are anchored at the end of an output (``\s*\Z``) but ``Pattern.search`` tries
# every position of a 50 KB output. These helpers bound where a match can start, so only the tail
# is scanned; each caller states why its pattern cannot match earlier.


def rstripped_len(text: str) -> int:
    """``len(text.rstrip())`` without copying a long text: only its tail is stripped."""
    cut = max(len(text) - 64, 0)
    tail = text[cut:].rstrip()
    return cut + len(tail) if tail or not cut else len(text[:cut].rstrip())


def tail_line_start(text: str, lines: int, end: int | None = None) -> int:
    """Index of the newline before the last ``lines`` lines of ``text`` without its trailing
    whitespace (``end``: its length when known), or 0 when it has fewer lines."""
    end = rstripped_len(text) if end is None else end
    for _ in range(lines):
        end = text.rfind("\n", 0, end)
        if end <= 0:
            return 0
    return end


def newline_run_start(text: str, i: int) -> int:
    """Start of the run of newlines that ends at ``i`` (``i`` itself when none precedes it)."""
    while i > 0 and text[i - 1] == "\n":
        i -= 1
    return i


def tail_search(
    pattern: re.Pattern[str], text: str, lines: int, end: int | None = None
) -> re.Match[str] | None:
    """``pattern.search(text)`` for an end-anchored pattern whose matches are chains of one-line
    items, each item optionally led by one newline: any match starting before the window also
    matches from the window's first newline, so only that case needs the whole text (``end``:
    ``rstripped_len(text)`` when known)."""
    start = tail_line_start(text, lines, end)
    m = pattern.search(text, start)
    if start and m is not None and m.start() == start:
        return pattern.search(text)
    return m


# --------------------------------------------------------------------------- observations

# mini-swe-agent before 1.0 (micro-swe-agent, until July 2025) kept the streams apart:
# "<returncode>\n{rc}\n</returncode>\n<stderr>\n{stderr}\n</stderr>\n<stdout>\n{stdout}\n</stdout>"
# (nano-swe-agent, its first days, led with the <args> of its docker exec and put stdout first)
PRE1_OBS_RE = re.compile(
    r"\A(?:<args>\n[^\n]*\n</args>\n)?<returncode>\n(-?\d{1,9})\n</returncode>\n"
    r"(?:<stderr>\n(?P<e1>.*?)\n</stderr>\n<stdout>\n(?P<o1>.*)\n</stdout>"
    r"|<stdout>\n(?P<o2>.*?)\n</stdout>\n<stderr>\n(?P<e2>.*)\n</stderr>)\Z",
    re.DOTALL,
)
PRE1_ELIDED_RE = re.compile(r"\A<warning>\n.*</warning>\s*<observation_head>\n", re.DOTALL)
# mini-swe-agent 1.x's timeout message (1.17.5; versions before 1.16 put a space before <output>)
MINI_TIMEOUT_RE = re.compile(
    r"\AThe last command <command>.*?</command> timed out and has been killed\.\n"
    r"The output of the command was:\n ?<output>\n(.*)\n</output>\n"
    r"Please try another command and make sure to avoid those requiring interactive input\.\Z",
    re.DOTALL,
)
MINI_TIMEOUT_ELIDED_RE = re.compile(
    r"\AThe last command <command>.*?</command> timed out and has been killed\.\n"
    r"The output of the command was:\n<warning>Output was too long",
    re.DOTALL,
)
PRE1_TIMEOUT = "The command timed out. Please change your command and make sure it doesn't require input."
MINI_OBS_RE = re.compile(r"\A\s*<returncode>\s*(-?\d{1,9})\s*</returncode>\s*\n?(.*)\Z", re.DOTALL)
MINI_OUTPUT_RE = re.compile(r"\A<output>\n?(.*)</output>\s*\Z", re.DOTALL)
# the two above as mini-swe-agent 1.x renders a finished command (its usual observation): one
# match from the start instead of the chain of prefixes that decorated_observation tries
MINI_RENDERED_RE = re.compile(
    r"<returncode>(-?\d{1,9})</returncode>\n<output>\n(.*)</output>\s*\Z", re.DOTALL
)
EXEC_RESULT_RE = re.compile(r"\AEXECUTION RESULT of \[([^\]\n]{0,200})\]:\n?")
OH_EXIT_RE = re.compile(r"\[Command finished with exit code (-?\d{1,9})\]")
# OpenHands appends its shell state after the output; none of it is printed by the command:
# a chain of one-line notes ``\n?[…]`` (tests/test_parsers_tail.py gives it in that form). The
# first note's head is spelled "\n[" or "[", so that a search skips to those two characters
# instead of trying the whole pattern at every position of the tail.
_OH_CWD, _OH_PYTHON, _OH_EXIT = (
    "Current working directory: ",
    "Python interpreter: ",
    "Command finished with exit code ",
)
_OH_NOTE_BODY = rf"(?:{_OH_CWD}[^\n\]]*|{_OH_PYTHON}[^\n\]]*|{_OH_EXIT}-?\d+)\]"
OH_TRAILER_RE = re.compile(rf"(?:\n\[|\[){_OH_NOTE_BODY}(?:\n?\[{_OH_NOTE_BODY})*\s*\Z")
SWEAGENT_PREFIX_RE = re.compile(r"\A(?:OBSERVATION:\n|Observation: ?)")
# SWE-agent's window-state footer (templates, not command output).
SWEAGENT_FOOTER_RE = re.compile(r"\n?\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*\Z")
SWEAGENT_EMPTY = "Your command ran successfully and did not produce any output."
# clean_observation's fast path: a text that no prefix above can start (each needs its head at
# the start; the returncode and the empty-output notice after blank space), with no trailer at
# its end and no OH_EXIT_MARK in the last 300 characters (where the exit code is read) comes back
# unchanged. Both trailers end, bar blank space, with "]" or "$"; OpenHands' last note, "[" and
# its head, lies on the text's last line (no note spans a newline), so a text ending with "]"
# (a printed list, a test summary) is plain when its last line holds no note head.
_DECORATED_HEAD = re.compile(
    r"\s*(?:<returncode>|Your command ran)|<args>\n|<warning>\n|EXECUTION RESULT of \[|O(?:BSERVATION:\n|bservation:)"
    r"|The (?:last command <command>|command timed out)"  # _fill's timeout messages
)
_DECORATED_LAST = "]$"
_OH_NOTE_HEAD = re.compile(rf"\[(?:{_OH_CWD}|{_OH_PYTHON}|{_OH_EXIT})")
OH_EXIT_MARK = f"[{_OH_EXIT}"


def clean_observation(text: str, counters: Counter[str]) -> tuple[str, int | None]:
    """Strip harness decoration around a tool result and read its return code if it has one.

    mini-swe ``<returncode>N</returncode><output>…</output>`` gives N and the raw output; its
    truncated form (``<warning>…<output_head>…``) is kept as observed. OpenHands'
    ``EXECUTION RESULT of [t]:`` prefix and ``[Command finished with exit code N]`` trailer,
    SWE-agent's ``OBSERVATION:`` prefix, state footer and empty-output notice are removed.
    """
    return (text, None) if is_plain_output(text) else decorated_observation(text, counters)


def is_plain_output(text: str) -> bool:
    """Whether no harness prefix starts ``text`` (nor a timeout message), no trailer ends it
    and no exit code can be read from it: :func:`clean_observation` returns it unchanged."""
    # its last non-blank character: from the tail alone unless 64 blanks end the text;
    # "" (a blank text) is in every string, so it takes the long way
    last = text[-64:].rstrip()[-1:] or text.rstrip()[-1:]
    if _DECORATED_HEAD.match(text) or text.find(OH_EXIT_MARK, -300) >= 0:
        return False
    if last == "]":
        end = rstripped_len(text)
        return _OH_NOTE_HEAD.search(text, text.rfind("\n", 0, end) + 1, end) is None
    return last not in _DECORATED_LAST


def decorated_observation(text: str, counters: Counter[str]) -> tuple[str, int | None]:
    """:func:`clean_observation` tried on every prefix and trailer (its fast path's specification)."""
    rc: int | None = None
    pm1 = PRE1_OBS_RE.match(text) if text.startswith(("<returncode>\n", "<args>\n")) else None
    if pm1:
        stderr, stdout = pm1.group("e1") or pm1.group("e2") or "", pm1.group("o1") or pm1.group("o2") or ""
        if stderr and stdout:
            # mini-swe-agent >= 1.0 records one merged stream; in what order the two were
            # printed is not recorded, so the merged output cannot be derived
            raise ParseError("split_streams", "a pre-1.0 observation with both stdout and stderr")
        counters["parse/pre1_observation"] += 1
        return stdout or stderr, int(pm1.group(1))
    if PRE1_ELIDED_RE.match(text):
        raise ParseError("elided_output", "a pre-1.0 observation whose middle the harness elided")
    m = MINI_OBS_RE.match(text)
    if m:
        rc = int(m.group(1))
        rest = m.group(2)
        om = MINI_OUTPUT_RE.match(rest)
        if om:
            return om.group(1), rc
        counters["parse/truncated_observation"] += 1
        return rest, rc
    em = EXEC_RESULT_RE.match(text)
    if em:
        text = text[em.end() :]
    codes = OH_EXIT_RE.findall(text[-300:])
    if codes:
        rc = int(codes[-1])
    # both trailers end the text (bar whitespace) with a fixed character or word: test that first.
    # OpenHands' is a chain of one-line ``[…]`` items; it writes at most three notes, each on its
    # line: a window of four lines holds them and the newline before (the window changes only how
    # often the whole text is searched, not what is found)
    end = rstripped_len(text)
    tm = tail_search(OH_TRAILER_RE, text, 4, end) if text.endswith("]", 0, end) else None
    if tm:
        text = text[: tm.start()]
        end = rstripped_len(text)
    pm = SWEAGENT_PREFIX_RE.match(text)
    if pm:
        text = text[pm.end() :]
        end = rstripped_len(text)
    # the footer spans the last 2-3 lines, plus the newline before them: it cannot start earlier
    fm = (
        SWEAGENT_FOOTER_RE.search(text, tail_line_start(text, 3, end))
        if text.endswith("bash-$", 0, end)
        else None
    )
    if fm:
        text = text[: fm.start()]
        end = rstripped_len(text)
    # = text.strip() == SWEAGENT_EMPTY, without a copy of a long output
    if text.endswith(SWEAGENT_EMPTY, 0, end) and not text[: end - len(SWEAGENT_EMPTY)].strip():
        counters["parse/empty_output_notice"] += 1
        text = ""
    return text, rc


_BARE_LF = re.compile(r"(?<!\r)\n")


def restore_pty_newlines(ep: Episode) -> Episode:
    """Undo a terminal's ``\n`` → ``\r\n`` translation in the observations of a harness that
    ran commands in a pty (SWE-agent 1.x / swe-rex, hence SWE-smith runs).

    Only an observation in which EVERY line feed follows a CR went through the pty; replacing
    ``\r\n`` by ``\n`` there is the exact inverse of the translation (a program's own ``\r\n``
    was recorded as ``\r\r\n`` and comes back as ``\r\n``). The command then prints what
    mini-swe-agent (pipes, no pty) would record. Counted ``parse/pty_newlines_restored``.
    """
    for st in ep.steps:
        obs = st.observation
        if "\r\n" in obs and not _BARE_LF.search(obs):
            st.observation = obs.replace("\r\n", "\n")
            ep.counters["parse/pty_newlines_restored"] += 1
    return ep


# --------------------------------------------------------------------------- the walker


def walk_messages(
    msgs: list[Msg],
    counters: Counter[str],
    *,
    bare_fence: bool = False,
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


# --------------------------------------------------------------------------- small text helpers


def is_submit(call: ToolCall | Bash) -> bool:
    if isinstance(call, Bash):
        return any(k in call.command for k in SUBMIT_MARKERS) or call.command.strip() == "submit"
    return bool(FINISH_RE.match(call.name))


ROOT_UPLOADED_RE = re.compile(r"<uploaded_files>\s*\n?\s*(/[^\s<]+)\s*\n?\s*</uploaded_files>")
ROOT_CD_RE = re.compile(
    r"(?:^|&&|;|\n)\s*cd\s+(/(?:testbed|repo|app|workspace/[\w.-]+|home/[\w.-]+/[\w.-]+"
    r"|tmp/[\w./-]+|[\w-]+__[\w.-]+))/?\s*(?:&&|;|$)",
    re.MULTILINE,
)
ROOT_DIR_RE = re.compile(r"in the directory (/[^\s.,]+(?:\.[^\s.,]+)*)")


def detect_root(task_text: str, steps: list[Step]) -> str | None:
    """The repo root the harness used, when the run shows it."""
    m = ROOT_UPLOADED_RE.search(task_text) or ROOT_DIR_RE.search(task_text)
    if m:
        return m.group(1).rstrip("/")
    for s in steps[:20]:
        cmd = (
            s.call.command
            if isinstance(s.call, Bash)
            else str(s.call.args.get("command", ""))
            if isinstance(s.call.args.get("command"), str)
            else ""
        )
        cm = ROOT_CD_RE.search(cmd) if "cd" in cmd else None  # a cd needs its letters
        if cm:
            return cm.group(1).rstrip("/")
    return None


HEX_RE = re.compile(r"\A[0-9a-f]{7,40}\Z")
SWESMITH_ID_RE = re.compile(r"\A([\w.-]+?__[\w.-]+?)\.([0-9a-f]{8})\.")


def swesmith_commit(instance_id: str) -> str | None:
    m = SWESMITH_ID_RE.match(instance_id)
    return m.group(2) if m else None


def repo_from_id(instance_id: str) -> str:
    """``owner__repo`` from SWE-smith (``owner__repo.c0ffee12.x``) or SWE-bench (``owner__repo-123``) ids."""
    m = SWESMITH_ID_RE.match(instance_id)
    if m:
        return m.group(1)
    m2 = re.match(r"\A([\w.-]+__[\w.-]+?)-\d+\Z", instance_id)
    return m2.group(1) if m2 else ""


LANG_RE = re.compile(r"uploaded an? ([A-Za-z+#]+) code repository")


def first_user_text(msgs: list[Msg]) -> str:
    """The task message: the first user message's text ("" when there is none)."""
    return next((m.text for m in msgs if m.role == "user"), "")


def row_task_messages(row: dict[str, Any]) -> tuple[str, list[Msg]]:
    """``instance_id`` and the normalised ``messages`` of a row-shaped record (SWE-Lego, SWE-smith)."""
    instance_id = opt_str(row.get("instance_id")) or ""
    if not instance_id:
        raise ParseError("missing_field", "instance_id")
    return instance_id, normalize_messages(row.get("messages"), "messages")


def language_hint(task_text: str) -> str:
    m = LANG_RE.search(task_text)
    return m.group(1).lower() if m else "unknown"


# --------------------------------------------------------------------------- episode assembly


def resolved_from(value: Any) -> Resolved:
    """A record's own verdict: bools, 0/1, or "resolved" / "not resolved" / "unknown"; anything else is unknown."""
    if isinstance(value, bool):
        return "resolved" if value else "not resolved"
    if isinstance(value, int | float):
        return "resolved" if value > 0 else "not resolved"
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "resolved":
            return "resolved"
        if v in ("not resolved", "unresolved", "not_resolved"):
            return "not resolved"
    return "unknown"


def make_episode(
    *,
    task_text: str,
    steps: list[Step],
    dialect: str,
    counters: Counter[str],
    instance_id: str,
    repo: str,
    pool: str,
    language: str,
    base_commit: str | None,
    patch: str | None,
    origin: str,
    harness: str,
    model: str,
    source_uid: str,
    resolved: Resolved,
    fold_group: str | None,
    epoch: int | None,
    root_hint: str | None = None,
) -> Episode:
    from pipeline.parsers.problem import extract_problem

    if not steps:
        raise ParseError("no_steps", f"{source_uid}: no tool call or command found")
    statement, fallback = extract_problem(task_text)
    if fallback:
        counters["parse/problem_statement_fallback"] += 1
    if not statement.strip():
        raise ParseError("no_task", f"{source_uid}: empty first user message")
    counters[f"parse/dialect/{dialect}"] += 1
    # SWE-smith configs put the branch name (= instance id) in base_commit; only a hash is a checkout.
    if base_commit is not None and not HEX_RE.match(base_commit):
        counters["parse/base_commit_not_hash"] += 1
        base_commit = None
    commit = base_commit or swesmith_commit(instance_id)
    task = Task(
        instance_id=instance_id,
        repo=repo or repo_from_id(instance_id),
        problem_statement=statement,
        pool=pool,
        language=language,
        base_commit=commit,
        patch=patch or None,
    )
    meta = Meta(
        origin=origin,
        harness=harness,
        model=model,
        source_uid=source_uid,
        dialect=dialect,
        resolved=resolved,
        submitted=is_submit(steps[-1].call),
        fold_group=fold_group,
        epoch=epoch,
        repo_root=root_hint or detect_root(task_text, steps),
    )
    return Episode(task=task, meta=meta, steps=steps, counters=counters)


def messages_episode(msgs: list[Msg], **kw: Any) -> Episode:
    """Walk a message list and assemble the Episode (task text = first user message)."""
    counters: Counter[str] = Counter()
    bare = kw.pop("bare_fence", False)
    fence_re = kw.pop("fence_re", None)
    dialect_override = kw.pop("dialect", None)
    steps, dialect = walk_messages(msgs, counters, bare_fence=bare, fence_re=fence_re)
    task_text = msgs[first_user_index(msgs)].text
    return make_episode(
        task_text=task_text,
        steps=steps,
        counters=counters,
        dialect=dialect_override(dialect) if callable(dialect_override) else dialect,
        **kw,
    )
