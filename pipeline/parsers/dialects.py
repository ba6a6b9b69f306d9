"""Tool calls baked into assistant text (Qwen JSON, GLM, XML and bash-fence dialects).

Dialects, tried in this order on one assistant message:

- ``<tool_call>…</tool_call>`` blocks, each holding Qwen JSON (``{"name", "arguments"}``), GLM
  (``name<arg_key>k</arg_key><arg_value>v</arg_value>…``) or XML (``<function=…>``);
- XML ``<function=NAME><parameter=K>V</parameter></function>`` outside ``<tool_call>``
  (OpenHands non-function-calling, SWE-Lego, SWE-smith ``xml``, R2E-Gym);
- shell fences ```` ```bash ```` / ```` ```mswea_bash_command ```` / ```` ```sh ```` /
  ```` ```shell ```` (mini-swe-agent v1/v2, Affine ``bash``), and with ``bare_fence`` the
  untagged ```` ``` ```` of SWE-smith ``ticks``.

The text before the first call is the thought.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from pipeline.core.episode import Bash, ParseError, ToolCall

# The XML dialect's language; _xml_spans finds the same spans with str.find
# (tests/test_xml_spans.py checks that the two agree).
FUNCTION_RE = re.compile(r"<function=([^>\n]{1,200})>(.*?)(?:</function>|\Z)", re.DOTALL)
PARAM_RE = re.compile(r"<parameter=([^>\n]{1,200})>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
GLM_ARG_RE = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)
# the shape of mini-swe-agent's action regex (schemas.miniswe.ACTION_REGEX), for each fence tag raw runs use.
FENCE_RE = re.compile(r"```(?:bash|mswea_bash_command|shell|sh)\s*\n(.*?)\n```", re.DOTALL)
BARE_FENCE_RE = re.compile(r"```[ \t]*\n(.*?)\n```", re.DOTALL)
# a JSON list of integers, in JSON's own grammar (its four whitespace characters, ASCII digits, no
# leading zero): ``\s`` and ``\d`` would also admit what orjson refuses ("[\u20031]", "[01]", "[٣]")
_JSON_WS, _JSON_INT = r"[ \t\n\r]*", r"-?(?:0|[1-9][0-9]*)"
NUM_LIST_RE = re.compile(rf"\A\[{_JSON_WS}{_JSON_INT}(?:{_JSON_WS},{_JSON_WS}{_JSON_INT})*{_JSON_WS}\]\Z")
_JSON_HEAD = re.compile(r"\s*\{")


def blocks(text: str, open_: str, close: str) -> list[tuple[int, int, int, int]]:
    """Non-overlapping ``open_…close`` spans as (start, inner_start, inner_end, end), leftmost
    first, nearest close: the same as a lazy ``open(.*?)close`` regex but linear in the text,
    however many unclosed openings a hostile message holds."""
    out: list[tuple[int, int, int, int]] = []
    pos = 0
    while True:
        i = text.find(open_, pos)
        if i < 0:
            return out
        j = text.find(close, i + len(open_))
        if j < 0:
            return out
        out.append((i, i + len(open_), j, j + len(close)))
        pos = j + len(close)


def _unwrap(value: str) -> str:
    """OpenHands and Qwen3-Coder write a multi-line parameter as ``<parameter=k>\\nV\\n</parameter>``;
    undo exactly that one newline on each side."""
    if len(value) >= 2 and value.startswith("\n") and value.endswith("\n"):
        return value[1:-1]
    return value


def _typed(value: str) -> Any:
    """Integer lists (``view_range``) come back as JSON text in text dialects; decode only those."""
    first = value[:1]
    if first != "[" and not first.isspace():  # no list can start it: not stripped, not matched
        return value
    if NUM_LIST_RE.match(value.strip()):
        got = orjson.loads(value.strip())
        # an integer past 64 bits is read as a float: no index, so the text stays
        return got if all(type(x) is int for x in got) else value
    return value


def _xml_spans(text: str, open_: str, close: str, stop: str | None, pos: int = 0) -> list[tuple[str, str]]:
    """``(name, body)`` of every ``<open_NAME>body`` from ``pos`` up to its ``close`` (or to the
    next ``stop`` when that comes first, or to the end): what ``finditer`` of FUNCTION_RE (no
    stop) or PARAM_RE (stop ``<parameter=``) finds, without the lazy ``(.*?)`` testing every
    character."""
    out: list[tuple[str, str]] = []
    while (i := text.find(open_, pos)) >= 0:
        start = i + len(open_)
        # the tag's NAME, ``[^>\n]{1,200}>``, checked with two finds instead of a regex; when it
        # is no tag, the regex would try the next opening
        end = text.find(">", start, start + 201)
        if end <= start or text.find("\n", start, end) >= 0:
            pos = i + 1
            continue
        j = text.find(close, end + 1)
        k = text.find(stop, end + 1, len(text) if j < 0 else j) if stop is not None else -1
        if k >= 0:  # the next opening ends this one (it is not consumed)
            out.append((text[start:end], text[end + 1 : k]))
            pos = k
        elif j >= 0:
            out.append((text[start:end], text[end + 1 : j]))
            pos = j + len(close)
        else:
            out.append((text[start:end], text[end + 1 :]))
            break
    return out


def _xml_calls(body: str, pos: int = 0) -> list[ToolCall]:
    """The calls of the XML dialect in ``body`` from ``pos``."""
    calls: list[ToolCall] = []
    for name, inner in _xml_spans(body, "<function=", "</function>", None, pos):
        args: dict[str, Any] = {}
        for key, value in _xml_spans(inner, "<parameter=", "</parameter>", "<parameter="):
            args[key.strip()] = _typed(_unwrap(value))
        calls.append(ToolCall(name=name.strip(), args=args))
    return calls


def _json_call(body: str) -> ToolCall:
    try:
        # JSON's own blank space is blank to str.strip too, and a value neither starts nor ends
        # with any: a body that parses as it is parses to the same as the stripped one
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            obj = orjson.loads(body.strip())  # other blank space around the JSON (U+00A0, …)
        except orjson.JSONDecodeError:
            raise ParseError(
                "bad_tool_call", f"<tool_call> JSON does not parse: {body.strip()[:80]!r}"
            ) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ParseError("bad_tool_call", "<tool_call> JSON without a name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = orjson.loads(args) if args.strip() else {}
        except orjson.JSONDecodeError:
            raise ParseError("bad_tool_call", "<tool_call> arguments string is not JSON") from None
    if not isinstance(args, dict):
        raise ParseError("bad_tool_call", f"<tool_call> arguments are {type(args).__name__}")
    return ToolCall(name=obj["name"], args=args)


def _glm_call(body: str) -> ToolCall:
    first = body.find("<arg_key>")
    name = (body if first < 0 else body[:first]).strip()
    if not name or "\n" in name or "<" in name:
        raise ParseError("bad_tool_call", f"GLM <tool_call> without a name: {body.strip()[:80]!r}")
    args: dict[str, Any] = {}
    for key, value in glm_args(body, first):
        args[key.strip()] = _typed(value)
    return ToolCall(name=name, args=args)


_ARG_VALUE_OPEN = re.compile(r"\s*<arg_value>")


def glm_args(text: str, pos: int = 0) -> list[tuple[str, str]]:
    """``(key, value)`` of every match of GLM_ARG_RE in ``text`` from ``pos``, found with
    ``str.find``: each lazy group ends at the nearest close that lets the rest match (a key at
    a later ``</arg_key>`` when ``<arg_value>`` does not follow the first), without the regex
    trying every character of a long value (tests/test_parse_fastpaths.py checks the two agree)."""
    out: list[tuple[str, str]] = []
    if pos < 0:
        return out
    while (start := text.find("<arg_key>", pos)) >= 0:
        key_start = start + len("<arg_key>")
        key_end = text.find("</arg_key>", key_start)
        opened = None
        while key_end >= 0 and (opened := _ARG_VALUE_OPEN.match(text, key_end + len("</arg_key>"))) is None:
            key_end = text.find("</arg_key>", key_end + 1)
        value_end = text.find("</arg_value>", opened.end()) if opened else -1
        if opened is None or value_end < 0:  # no key and value close here: try the next opening
            pos = start + 1
            continue
        out.append((text[key_start:key_end], text[opened.end() : value_end]))
        pos = value_end + len("</arg_value>")
    return out


def action_regex(pattern: object) -> re.Pattern[str] | None:
    """A run's own action regex (mini-swe-agent's ``agent.action_regex``, applied with
    ``re.DOTALL``) when it reads a command as one group and fences it in ``bash``; else None
    (the default ``FENCE_RE`` then stands)."""
    if not isinstance(pattern, str) or "```" not in pattern or len(pattern) > 200:
        return None
    try:
        rx = re.compile(pattern, re.DOTALL)
    except re.error:
        return None
    return rx if rx.groups == 1 else None


def extract_calls(
    text: str,
    *,
    bare_fence: bool = False,
    counters: Counter[str] | None = None,
    fence_re: re.Pattern[str] | None = None,
) -> tuple[str, list[ToolCall | Bash], str]:
    """Split one assistant message into (thought, calls, dialect); ``calls`` is empty when the
    message holds no action. Raises ParseError on a call block it recognises but cannot read.
    ``fence_re``: the run's own action regex (its harness config), used in place of ``FENCE_RE``."""
    spans = blocks(text, "<tool_call>", "</tool_call>")
    if spans:
        calls, kind = _tool_call_calls(text, spans)
        return strip_think(text[: spans[0][0]]), calls, kind
    fpos = text.find("<function=")
    if fpos >= 0:
        xs: list[ToolCall | Bash] = list(_xml_calls(text, fpos))
        if xs:
            return strip_think(text[:fpos]), xs, "xml"
    if fence_re is not None:
        # (searched up to the last fence's mark, for the same reason as below)
        fences = list(fence_re.finditer(text, 0, text.rfind("```") + 3))
    else:
        # searched only up to the last fence's close: every opening the lazy regex tries then has a
        # close after it, so ``finditer`` stays linear
        close = text.rfind("\n```")
        stop = close + len("\n```") if close >= 0 else 0
        fences = list(FENCE_RE.finditer(text, 0, stop))
    dialect = "bash"
    if not fences and bare_fence and fence_re is None:
        fences = list(BARE_FENCE_RE.finditer(text, 0, stop))
        dialect = "ticks"
    if fences:
        if len(fences) > 1 and counters is not None:
            # mini-swe would have refused this reply; Affine's extractor takes the last block.
            counters["parse/multi_fence"] += 1
        last = fences[-1]
        return strip_think(text[: fences[0].start()]), [Bash(last.group(1))], dialect
    return strip_think(text), [], "none"


def _tool_call_calls(text: str, spans: list[tuple[int, int, int, int]]) -> tuple[list[ToolCall | Bash], str]:
    """The calls of the ``<tool_call>`` blocks at ``spans`` (:func:`blocks`'), and their kind: the
    most frequent, ties to the first."""
    calls: list[ToolCall | Bash] = []
    kinds: list[str] = []
    for _, a, b, _ in spans:
        body = text[a:b]
        if _JSON_HEAD.match(body):  # = body.strip().startswith("{"), without the copy
            calls.append(_json_call(body))
            kinds.append("qwen_json")
        elif "<function=" in body:
            xs = _xml_calls(body)
            if not xs:
                raise ParseError("bad_tool_call", "<tool_call> with an unreadable <function=")
            calls.extend(xs)
            kinds.append("tool_call_xml")
        else:
            calls.append(_glm_call(body))
            kinds.append("glm")
    # one kind (the usual case) needs no count
    kind = kinds[0] if kinds.count(kinds[0]) == len(kinds) else Counter(kinds).most_common(1)[0][0]
    return calls, kind


# thoughts: here rather than in common, which imports this module, so no call imports lazily
THOUGHT_PREFIX_RE = re.compile(r"\A\s*THOUGHT:\s*", re.IGNORECASE)


def strip_think(text: str) -> str:
    """Reasoning in ``<think>`` tags is kept as thought text, without the tags (an unclosed
    ``<think>`` or a stray ``</think>`` left by a chat template is dropped too)."""
    if "think>" not in text:  # the common case: no <think> or </think> tag to take apart
        # the prefix starts with blank space or its T (no other character folds to t)
        first = text[:1]
        m = THOUGHT_PREFIX_RE.match(text) if first in "tT" or first.isspace() else None
        return (text[m.end() :] if m else text).strip()
    spans = blocks(text, "<think>", "</think>")
    inner = [text[a:b].strip() for _, a, b, _ in spans]
    kept, pos = [], 0
    for s, _, _, e in spans:
        kept.append(text[pos:s])
        pos = e
    kept.append(text[pos:])
    rest = "".join(kept).replace("<think>", "").replace("</think>", "")
    m = THOUGHT_PREFIX_RE.match(rest)  # anchored at \A: matching is enough, no need to scan
    rest = (rest[m.end() :] if m else rest).strip()
    out = ""
    for part in [*inner, rest]:
        out = join_thought(out, part)
    return out


def join_thought(a: str, b: str) -> str:
    a, b = a.strip(), b.strip()
    return f"{a}\n\n{b}" if a and b else (a or b)


_RESPONSE_OPEN, _RESPONSE_CLOSE = "<tool_response>", "</tool_response>"


def split_tool_responses(text: str) -> list[str] | None:
    """The ``<tool_response>`` blocks of one user message, in order (None when it has none).
    Chat templates write ``<tool_response>\\nOUT\\n</tool_response>``: one newline each side is theirs."""
    # blocks() inlined (no span tuples): each (often long) output is cut once, _unwrap applied
    # to its bounds
    out: list[str] = []
    pos = 0
    while (i := text.find(_RESPONSE_OPEN, pos)) >= 0:
        a = i + len(_RESPONSE_OPEN)
        b = text.find(_RESPONSE_CLOSE, a)
        if b < 0:
            break
        out.append(
            text[a + 1 : b - 1] if b - a >= 2 and text[a] == "\n" and text[b - 1] == "\n" else text[a:b]
        )
        pos = b + len(_RESPONSE_CLOSE)
    return out or None
