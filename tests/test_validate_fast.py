"""Validate's regex-free path for a rendered bash block agrees with mini-swe-agent's regex (speed
only): whenever it answers, ``parse_actions`` finds exactly the command and removing the blocks
leaves exactly the text before it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert.render import parse_actions, render_assistant
from pipeline.stages.validate import _BLOCK, _rendered_block_prefix

PIECES = ["```bash", "```", "``", "`", "\n", " ", "\t", "\x1c", "\u2028", "ls", "x", "bash", "THOUGHT: "]
text = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


def _agrees(content: str, command: str) -> bool:
    prefix = _rendered_block_prefix(content, command)
    if prefix is None:
        return False
    assert parse_actions(content) == [command], (content, command)
    assert _BLOCK.sub("", content) == prefix, (content, command)
    return True


@settings(max_examples=1500, deadline=None)
@given(text, text, text)
def test_the_fast_path_answers_only_what_the_regex_finds(prefix: str, command: str, tail: str) -> None:
    _agrees(prefix + f"```bash\n{command}\n```" + tail, command)
    _agrees(prefix + f"```bash\n{command}\n```", command)
    _agrees(render_assistant(prefix, command), command)


def test_the_fast_path_takes_the_usual_turn_and_leaves_the_odd_ones_to_the_regex() -> None:
    assert _agrees(render_assistant("THOUGHT: list files", "ls -la"), "ls -la")
    assert _rendered_block_prefix("```bash\nls\n```", "ls") == ""
    assert _rendered_block_prefix("```bash\n ls\n```", " ls") is None  # leading space: regex strips it
    assert _rendered_block_prefix("see ```x``` then\n```bash\nls\n```", "ls") is None  # another fence
    assert _rendered_block_prefix("```bash\n\n```", "") is None
    assert _rendered_block_prefix("```bash\nls\n```", None) is None  # type: ignore[arg-type]
