"""The convert step keeps each run's messages as their contents (``render_contents``) and builds
the messages column from them with the roles ``message_roles`` gives: the same messages
``render_messages`` renders (compared with the dict-per-message loop it replaced), and, on the
real conformance runs, the same column as ``convert_episode``'s messages."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.convert import convert_episode
from pipeline.convert.render import (
    SENTINELS,
    TRUNCATE_AT,
    message_roles,
    render_assistant,
    render_contents,
    render_instance,
    render_messages,
    render_reply,
    render_system,
    submission_of,
)
from pipeline.core.episode import PipelineDrop, RawRun
from pipeline.parsers import parse_raw
from pipeline.parsers.files import iter_trajectory_file
from pipeline.stages.convert import Convert
from pipeline.stages.parse import Parsed
from pipeline.stages.verify import Verify
from schemas.miniswe import TRUNCATION_WARNING
from tests.builders import CTX

REAL = Path(__file__).parent / "fixtures" / "real"


def reference_messages(
    task: str,
    thoughts: list[str],
    commands: list[str],
    outputs: list[str],
    returncodes: list[int | None],
    submitted: bool,
) -> list[dict[str, str]]:
    """render_messages as it was: a dict per message, built turn by turn."""
    messages = [
        {"role": "system", "content": render_system()},
        {"role": "user", "content": render_instance(task)},
    ]
    for i, (thought, cmd, out, rc) in enumerate(zip(thoughts, commands, outputs, returncodes, strict=True)):
        messages.append({"role": "assistant", "content": render_assistant(thought, cmd)})
        last = i == len(commands) - 1
        reply = submission_of(out) if (submitted and last) else render_reply(cmd, out, rc)
        messages.append({"role": "user", "content": reply})
    return messages


_pieces = ["a", "\n", " ", "`", "```", "é", "\u2192", "THOUGHT:", "x" * 997]
_texts = st.lists(st.sampled_from(_pieces), max_size=14).map("".join)
_outputs = st.one_of(
    _texts,
    st.builds(lambda t: f"{SENTINELS[0]}\n{t}", _texts),
    st.builds(lambda t: TRUNCATION_WARNING + t, _texts),  # mini's own truncated render, or not quite
    st.builds(lambda n, t: "y" * n + t, st.integers(TRUNCATE_AT - 2, TRUNCATE_AT + 2), _texts),
)
_turn = st.tuples(_texts, _texts, _outputs, st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)))


@settings(max_examples=300, deadline=None)
@given(task=_texts, turns=st.lists(_turn, max_size=4), submitted=st.booleans())
def test_contents_and_roles_are_the_messages(
    task: str, turns: list[tuple[str, str, str, int | None]], submitted: bool
) -> None:
    thoughts, commands, outputs, codes = (
        (list(x) for x in zip(*turns, strict=True)) if turns else ([], [], [], [])
    )
    want = reference_messages(task, thoughts, commands, outputs, codes, submitted)
    assert render_messages(task, thoughts, commands, outputs, codes, submitted) == want
    contents = render_contents(task, thoughts, commands, outputs, codes, submitted)
    assert contents == [m["content"] for m in want]
    assert message_roles(len(commands)) == [m["role"] for m in want]


def _parsed() -> list[Parsed]:
    items = []
    for path in sorted(REAL.glob("*.json*")):
        for raw in iter_trajectory_file(path):
            if isinstance(raw, RawRun):
                try:
                    items.append(Parsed(raw, parse_raw(raw)))
                except PipelineDrop:
                    continue
    return items


def test_the_step_keeps_the_messages_convert_episode_renders() -> None:
    items = _parsed()
    out = Verify(CTX)(Convert(CTX)(items).kept)
    kept = {(r["source_uid"], r["epoch"]): r["messages"] for r in out.kept.to_dicts()}
    assert len(kept) >= 10
    for item in items:
        key = (item.raw.source_uid, item.raw.epoch)
        if key in kept:
            assert kept[key] == convert_episode(item.episode).messages, key
