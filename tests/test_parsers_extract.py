"""One assistant message split into thought, calls and dialect: ``extract_calls`` walks the
``<tool_call>`` blocks as it finds them and reads the XML dialect in place, and returns what the
block-list form below (its earlier code, kept as the specification) returns, on any text built
from the dialects' own pieces, errors included."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.episode import Bash, ParseError, ToolCall
from pipeline.parsers import dialects
from pipeline.parsers.dialects import (
    BARE_FENCE_RE,
    FENCE_RE,
    _glm_call,
    _json_call,
    _xml_calls,
    blocks,
    extract_calls,
    strip_think,
)

PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "bash>",
    "command>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    '{"name": "bash", "arguments": {"command": "ls"}}',
    '{"name": 1}',
    "{",
    "read",
    "\n",
    " ",
    "x",
    "[1, 2]",
    "```bash\n",
    "```\n",
    "\n```",
    "<think>",
    "</think>",
    "THOUGHT: ",
]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def reference_extract_calls(
    text: str, *, bare_fence: bool = False, counters: Counter[str] | None = None
) -> tuple[str, list[ToolCall | Bash], str]:
    """extract_calls as it was: every ``<tool_call>`` span listed first, the XML dialect read
    from a copy of the text's tail."""
    spans = blocks(text, "<tool_call>", "</tool_call>")
    if spans:
        calls: list[ToolCall | Bash] = []
        kinds: list[str] = []
        for _, a, b, _ in spans:
            body = text[a:b]
            if body.strip().startswith("{"):
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
        kind = Counter(kinds).most_common(1)[0][0]
        return strip_think(text[: spans[0][0]]), calls, kind
    fpos = text.find("<function=")
    if fpos >= 0:
        xml = _xml_calls(text[fpos:])
        if xml:
            return strip_think(text[:fpos]), list(xml), "xml"
    fences = list(FENCE_RE.finditer(text))
    dialect = "bash"
    if not fences and bare_fence:
        fences = list(BARE_FENCE_RE.finditer(text))
        dialect = "ticks"
    if fences:
        if len(fences) > 1 and counters is not None:
            counters["parse/multi_fence"] += 1
        return strip_think(text[: fences[0].start()]), [Bash(fences[-1].group(1))], dialect
    return strip_think(text), [], "none"


def _outcome(fn: object, text: str, bare: bool) -> object:
    counters: Counter[str] = Counter()
    try:
        return fn(text, bare_fence=bare, counters=counters), counters  # type: ignore[operator]
    except ParseError as e:
        return e.reason, e.detail


@settings(max_examples=1500, deadline=None)
@given(texts, st.booleans())
def test_extract_calls_is_the_block_list_form(text: str, bare: bool) -> None:
    assert _outcome(extract_calls, text, bare) == _outcome(reference_extract_calls, text, bare)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_xml_calls_from_the_first_function_read_the_text_in_place(text: str) -> None:
    pos = text.find("<function=")
    if pos >= 0:
        assert _xml_calls(text, pos) == _xml_calls(text[pos:])


def test_parallel_calls_of_two_kinds_take_the_first_kind_on_a_tie() -> None:
    text = (
        'go<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        "<tool_call>b<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>"
    )
    thought, calls, kind = extract_calls(text)
    assert (thought, kind) == ("go", "qwen_json")
    assert calls == [ToolCall("a", {}), ToolCall("b", {"k": "v"})]


def test_an_unclosed_tool_call_leaves_the_text_to_the_other_dialects() -> None:
    assert dialects.extract_calls("<tool_call>\n```bash\nls\n```") == ("<tool_call>", [Bash("ls")], "bash")
