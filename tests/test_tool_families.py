"""The tool-family tables of ``convert_call``: a call belongs to the first family that owns it, and
every tool a family names reaches that family (no earlier family shadows it)."""

from __future__ import annotations

import pytest

from pipeline.convert.actions import ToolState
from pipeline.convert.tools import (
    BASH_TOOLS,
    CLAUDE_TOOLS,
    EDITOR_TOOLS,
    FILE_FAMILIES,
    HARNESS_FAMILIES,
    LIST_TOOLS,
    NO_EFFECT_TOOLS,
    PATCH_TOOLS,
    PI_TOOLS,
    READ_TOOLS,
    SEARCH_TOOLS,
    THINK_TOOLS,
    TODO_TOOLS,
    WRITE_TOOLS,
    convert_call,
)
from pipeline.core.episode import ConvertError

BY_NAME = {
    "bash": BASH_TOOLS,
    "think": THINK_TOOLS,
    "todo": TODO_TOOLS,
    "no_effect": NO_EFFECT_TOOLS,
    "editor": EDITOR_TOOLS,
    "claude": CLAUDE_TOOLS,
    "read": READ_TOOLS,
    "write": WRITE_TOOLS,
    "list": LIST_TOOLS,
    "search": SEARCH_TOOLS,
    "patch": PATCH_TOOLS,
    "pi": PI_TOOLS,
}


def owner(name: str, args: dict[str, object]) -> str | None:
    for family in (*HARNESS_FAMILIES, *FILE_FAMILIES):
        if family.owns(name, args):
            return family.name
    return None


def test_the_families_have_distinct_names() -> None:
    names = [f.name for f in (*HARNESS_FAMILIES, *FILE_FAMILIES)]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("family", sorted(BY_NAME))
def test_every_tool_a_family_names_reaches_that_family(family: str) -> None:
    for tool in sorted(BY_NAME[family]):
        assert owner(tool, {}) == family, tool


def test_submits_and_arguments_decide_between_families() -> None:
    assert owner("submit", {}) == "submit"
    assert owner("submit", {"args": "flag{x}"}) == "flag_submit"
    assert owner("str_replace", {"path": "a.py"}) is None  # no old text: not a replace
    assert owner("str_replace", {"path": "a.py", "old_str": "x"}) == "replace"
    assert owner("view", {"path": "a.py"}) == "view" and owner("view", {}) is None


def test_a_call_no_family_owns_is_an_unknown_tool() -> None:
    with pytest.raises(ConvertError) as err:
        convert_call("launch_rocket", {}, "", 0, 1, ToolState())
    assert (err.value.reason, err.value.detail) == ("unknown_tool", "launch_rocket")


def test_a_think_call_folds_its_thought_and_a_bash_call_runs() -> None:
    folded = convert_call("think", {"thought": "plan"}, "", None, 1, ToolState())
    assert (folded.kind, folded.text) == ("fold", "plan")
    ran = convert_call("bash", {"command": "ls"}, "a.py\n", 0, 1, ToolState())
    assert (ran.kind, ran.command, ran.output, ran.returncode) == ("run", "ls", "a.py\n", 0)
