"""The parse step's fast paths equal the long ways they skip (speed only).

Each fast path is checked against the code it short-cuts, on hostile compositions of the very
markers that code looks for: the same result, the same counters, the same ParseError."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.core.episode import Bash, ParseError, Step, ToolCall
from pipeline.parsers.affine_view import _checked_path, _is_chain
from pipeline.parsers.dialects import (
    BARE_FENCE_RE,
    FENCE_RE,
    GLM_ARG_RE,
    _json_call,
    _typed,
    extract_calls,
    glm_args,
)
from pipeline.parsers.messages import Msg
from pipeline.parsers.observations import clean_observation, decorated_observation
from pipeline.parsers.walker import _fill, fill_decorated, walk_messages

FAST = settings(max_examples=400, deadline=None)

OBSERVATION_PIECES = [
    "",
    "x",
    "ok\n",
    "Y",
    "E",
    "O",
    "<",
    "$",
    "]",
    "[",
    " ",
    "\n",
    "\t",
    "\u00a0",
    "\u2028",
    "\x1c",
    "12",
    "<returncode>\n0\n</returncode>\n<stdout>\nout\n</stdout>\n<stderr>\n\n</stderr>",
    "<returncode>0</returncode>\n",
    " \n<returncode>3</returncode>",
    "\t Your command ran successfully and did not produce any output.\n",
    "<output>\n",
    "</output>",
    "<warning>\nlong</warning>\n<observation_head>\n",
    "EXECUTION RESULT of [bash]:\n",
    "OBSERVATION:\n",
    "Observation: ",
    "[Current working directory: /w]",
    "[Python interpreter: /p]",
    "[Command finished with exit code 1]",
    "[Command finished with exit code -2]",
    "\n(Open file: a.py)\n(Current directory: /r)\nbash-$",
    "bash-$",
    "Your command ran successfully and did not produce any output.",
    "y" * 310,
    "The last command <command>sleep 9</command> timed out and has been killed.\n",
    "The output of the command was:\n<output>\npartial\n</output>\n",
    "Please try another command and make sure to avoid those requiring interactive input.",
    "The command timed out. Please change your command and make sure it doesn't require input.",
    " " * 70,
]
observations = st.lists(st.sampled_from(OBSERVATION_PIECES), max_size=12).map("".join)


def _outcome(fn: Any, *args: Any) -> tuple[Any, Counter[str]]:
    counters: Counter[str] = Counter()
    try:
        return fn(*args, counters), counters
    except ParseError as e:
        return ("ParseError", e.args), counters


@FAST
@given(text=observations)
@example(" <returncode>0</returncode>\n<output>\nx\n</output>")
@example("\u2028Your command ran successfully and did not produce any output.")
@example("Observation: x\n[Python interpreter: /p]")
@example("y\n[Command finished with exit code 4]\n" + "z" * 200)
@example("[1, 2, 3]\n")  # ends with "]", no note on its last line: plain
@example("[Current working directory: /w]\nx]")
@example("out [Python interpreter: /p] \n")  # a note on the last line: a trailer
def test_clean_observation_fast_path_equals_trying_every_decoration(text: str) -> None:
    assert _outcome(clean_observation, text) == _outcome(decorated_observation, text)


@FAST
@given(text=observations, rc=st.sampled_from([None, 0, 2]))
@example(
    "The last command <command>sleep 9</command> timed out and has been killed.\n"
    "The output of the command was:\n<output>\npartial\n</output>\n"
    "Please try another command and make sure to avoid those requiring interactive input.",
    None,
)
@example("The command timed out. Please change your command and make sure it doesn't require input.", 1)
@example("<returncode>-2</returncode>\n<output>\nx\n</output>\n</output> \n", None)  # as mini-swe renders it
@example("<returncode>0</returncode>\n<output>\n</output>", 3)
@example("<returncode>0</returncode>\n<output>\ncut short", None)
@example("<returncode>\u0663</returncode>\n<output>\nx</output>", None)
def test_filling_a_step_fast_equals_unwrapping_every_harness_message(text: str, rc: int | None) -> None:
    def filled(fill: Any) -> Any:
        step = Step("", Bash("true"), "", None)
        outcome, counters = _outcome(lambda t, c: fill(step, t, rc, c), text)
        return outcome, counters, step

    assert filled(_fill) == filled(fill_decorated)


def test_plain_output_takes_the_fast_path_unchanged() -> None:
    counters: Counter[str] = Counter()
    assert clean_observation("total 8\n-rw-r--r-- a.py\n", counters) == ("total 8\n-rw-r--r-- a.py\n", None)
    assert clean_observation("x\n[Command finished with exit code 3]\n", counters) == ("x", 3)
    assert not counters


# a node's parent: mostly the previous node (the usual chain), else every kind of wrong value
def _nodes(draw: st.DrawFn) -> list[Any]:
    n = draw(st.integers(0, 7))
    out: list[Any] = []
    for i in range(n):
        kind = draw(
            st.sampled_from(
                ["prev", "prev", "prev", "none", "missing", "other", "bool", "float", "str", "list"]
            )
        )
        node: Any = {"role": "user", "content": "x"}
        if kind == "prev":
            node["parent"] = i - 1 if i else None
        elif kind == "none":
            node["parent"] = None
        elif kind == "other":
            node["parent"] = draw(st.integers(-2, n + 1))
        elif kind == "bool":
            node["parent"] = i == 2
        elif kind == "float":
            node["parent"] = float(i - 1)
        elif kind == "str":
            node["parent"] = str(i - 1)
        elif kind == "list":
            node = [node]
        out.append(node)
    return out


@FAST
@given(nodes=st.composite(_nodes)(), linear_default=st.booleans())
def test_a_chain_of_nodes_is_the_path_the_graph_check_finds(nodes: list[Any], linear_default: bool) -> None:
    if _is_chain(nodes):
        assert _checked_path(nodes, "nodes", linear_default) == list(range(len(nodes)))


def test_near_chains_are_not_taken_for_chains() -> None:
    chain: list[Any] = [{"parent": None}, {"parent": 0}, {"parent": 1}]
    assert _is_chain(chain)
    assert not _is_chain([])
    assert not _is_chain([{"parent": None}, {"parent": 0}, {"parent": True}])
    assert not _is_chain([{"parent": None}, {"parent": 0.0}])
    assert not _is_chain([{"parent": None}, {}])  # a missing parent: the graph check decides
    assert not _is_chain([{"parent": None}, [{"parent": 0}]])


GLM_PIECES = ["<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", " ", "\n", "k", "v", "<", ">", "/"]


@FAST
@given(text=st.lists(st.sampled_from(GLM_PIECES), max_size=30).map("".join), pos=st.integers(-1, 12))
@example("<arg_key>a</arg_key>x<arg_key>b</arg_key>\n <arg_value>v</arg_value>", 0)
@example("<arg_key>a</arg_key><arg_value>v", 0)
def test_glm_arguments_by_find_equal_the_lazy_regex(text: str, pos: int) -> None:
    want = [] if pos < 0 else [(m.group(1), m.group(2)) for m in GLM_ARG_RE.finditer(text, pos)]
    assert glm_args(text, pos) == want


def _json_int_list(text: str) -> list[int] | None:
    """What orjson reads ``text`` as when that is a non-empty list of integers, else None."""
    try:
        got = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return got if isinstance(got, list) and got and all(type(x) is int for x in got) else None


@FAST
@given(
    value=st.lists(
        st.sampled_from(["[", "]", " ", "\t", "\n", "\u2003", "1", "0", "07", "-2", "\u0663", ",", "x", ""]),
        max_size=8,
    ).map("".join)
)
@example("[\u20031]")  # Unicode whitespace inside: not JSON
@example("[01]")  # a leading zero: not JSON
@example("[\u0663]")  # an Arabic-Indic digit: not JSON
@example(" [1, -2]\n")
@example("[99999999999999999999999]")  # past 64 bits orjson reads a float
def test_a_parameter_is_decoded_only_when_it_is_a_json_integer_list(value: str) -> None:
    want = _json_int_list(value.strip())
    assert _typed(value) == (value if want is None else want)


def test_the_walker_keeps_thoughts_on_first_calls_and_names_the_first_of_tied_dialects() -> None:
    fence = "```bash\nls\n```"
    msgs = [
        Msg("user", "task"),
        Msg("assistant", "just narration"),
        Msg(
            "assistant",
            'look <tool_call>\n{"name": "bash", "arguments": {"command": "a"}}\n</tool_call>'
            '<tool_call>\n{"name": "bash", "arguments": {"command": "b"}}\n</tool_call>',
        ),
        Msg("user", "<tool_response>\nA\n</tool_response><tool_response>\nB\n</tool_response>"),
        Msg("assistant", f"then {fence}"),
        Msg("user", "<returncode>0</returncode>\n<output>\nC\n</output>"),
    ]
    counters: Counter[str] = Counter()
    steps, dialect = walk_messages(msgs, counters)
    assert [(s.thought, s.observation, s.returncode) for s in steps] == [
        ("just narration\n\nlook", "A", None),
        ("", "B", None),
        ("then", "C\n", 0),
    ]
    assert dialect == "qwen_json"  # one reply each: the tie goes to the first seen
    assert not counters


def _json_call_before(body: str) -> ToolCall:  # the parse before the fast path, word for word
    try:
        obj = orjson.loads(body.strip())
    except orjson.JSONDecodeError:
        raise ParseError("bad_tool_call", f"<tool_call> JSON does not parse: {body.strip()[:80]!r}") from None
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


@FAST
@given(
    body=st.lists(
        st.sampled_from(
            [
                " ",
                "\n",
                "\t",
                "\r",
                "\u00a0",
                "\x0c",
                "\u2028",
                '{"name": "bash"}',
                "{",
                "}",
                '"x"',
                "1",
                "[]",
            ]
        ),
        max_size=6,
    ).map("".join)
)
@example('\u00a0{"name": "bash", "arguments": {"command": "ls"}}\n')
@example('\r\n {"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}\t')
def test_a_json_call_parses_as_its_stripped_body_did(body: str) -> None:
    def outcome(fn: Any) -> Any:
        try:
            return fn(body)
        except ParseError as e:
            return e.args

    assert outcome(_json_call) == outcome(_json_call_before)


@FAST
@given(
    text=st.lists(
        st.sampled_from(["```bash\n", "```sh\n", "```\n", "\n```", "ls\n", "x", "\n", " "]), max_size=12
    ).map("".join),
    bare=st.booleans(),
)
def test_fences_searched_in_place_equal_fences_in_the_cut_text(text: str, bare: bool) -> None:
    cut = text[: text.rfind("\n```") + 4] if "\n```" in text else ""
    want = [m.group(1) for m in FENCE_RE.finditer(cut)] or (
        [m.group(1) for m in BARE_FENCE_RE.finditer(cut)] if bare else []
    )
    _, calls, _ = extract_calls(text, bare_fence=bare)
    assert calls == ([Bash(want[-1])] if want else [])
