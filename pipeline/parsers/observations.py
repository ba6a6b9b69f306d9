"""Observations as the harnesses recorded them: their decoration (return-code and output tags,
timeout messages, OpenHands' shell-state notes, SWE-agent's footer) removed and the return code it
noted read. Timeouts: mini-swe-agent's own timeout message marks ``Step.timed_out`` with the partial
output; one whose output is elided or was not kept is dropped (``parse/elided_output``,
``parse/timeout_output_unknown``)."""

from __future__ import annotations

import re
from collections import Counter

from pipeline.core.episode import Episode, ParseError
from pipeline.text.tails import rstripped_len, tail_line_start, tail_search

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
