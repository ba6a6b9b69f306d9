"""The verify rules on real runs: each rule refuses the real run converted the faulty way it used
to be (a tool typed as a command, a viewer's header left in an output, a submit lost or emptied,
a refusal turned into an edit), and passes the same run converted right.

The runs are the vendored real fixtures (tests/fixtures/real/, PROVENANCE.md); each faulty form
is built from the run's own recorded actions and observations, not made up.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from pipeline.convert import convert_turns
from pipeline.convert.render import SENTINELS, SUBMIT_COMMAND
from pipeline.core.episode import Bash, Episode, RawRun, Step, ToolCall
from pipeline.parsers import parse_raw
from pipeline.verify import verify

REAL = Path(__file__).parent / "fixtures" / "real"


def real(name: str, kind: str) -> Episode:
    return parse_raw(RawRun(name, "test", kind, None, json.loads((REAL / name).read_bytes()), 0))  # type: ignore[arg-type]


def rule_of(ep: Episode, rules: tuple[str, ...]) -> str | None:
    v = verify(ep, convert_turns(ep), rules=rules)
    return None if v is None else v.rule


PYDICOM = "sweagent-0x-gpt4-pydicom-1458.traj"


def test_a_windowed_tool_passed_through_as_a_command_is_refused() -> None:
    ep = real(PYDICOM, "sweagent")
    assert rule_of(ep, ("executable",)) is None
    # the faulty form: SWE-agent's own action text (`open FILE 293`) run as a shell command
    bad = copy.deepcopy(ep)
    step = bad.steps[4]
    assert isinstance(step.call, ToolCall) and step.call.name == "open"
    bad.steps[4] = Step(step.thought, Bash(f"open {step.call.args['args']}"), step.observation, 0)
    assert rule_of(bad, ("executable",)) == "harness_tool"


def test_the_viewers_window_header_in_an_output_is_refused() -> None:
    ep = real(PYDICOM, "sweagent")
    assert rule_of(ep, ("observations",)) is None
    # the faulty form: the window the viewer printed shown as a plain `cat`'s output
    window = ep.steps[4].observation
    assert window.startswith("[File: /pydicom__pydicom/pydicom/pixel_data_handlers/numpy_handler.py (")
    bad = copy.deepcopy(ep)
    bad.steps[4] = Step("", Bash("cat pydicom/pixel_data_handlers/numpy_handler.py"), window, 0)
    assert rule_of(bad, ("observations",)) == "harness_decoration"


def test_a_return_code_the_record_lacks_and_no_rule_decides_is_refused() -> None:
    ep = real(PYDICOM, "sweagent")
    conv = convert_turns(ep)
    # the run's `python reproduce_bug.py` ends in a traceback: SWE-agent records no exit status
    assert ep.steps[2].returncode is None and ep.steps[2].observation.startswith("Traceback")
    assert conv.returncodes[2] != 0  # never a 0 on it: unknown, or a measured rule's code
    if conv.sources[2].rc_from == "unknown":
        assert rule_of(ep, ("returncodes",)) == "returncode_unknown"
    # the faulty form: the code the old converter filled in
    guessed = copy.deepcopy(conv)
    guessed.returncodes[2] = 0
    guessed.sources[2].rc_from = "rule:loud_success"
    v = verify(ep, guessed, rules=("returncodes",))
    assert v is not None and v.rule == "returncode_contradicted"


def test_a_submitted_patch_lost_or_emptied_is_refused() -> None:
    ep = real(PYDICOM, "sweagent")
    conv = convert_turns(ep)
    assert conv.submitted and conv.submission and verify(ep, conv, rules=("submission",)) is None
    # the faulty forms: the final message emptied, and the submit cut off
    emptied = copy.deepcopy(conv)
    emptied.outputs[-1] = f"{SENTINELS[0]}\n"
    v = verify(ep, emptied, rules=("submission",))
    assert v is not None and v.rule == "submission"
    cut = copy.deepcopy(ep)
    del cut.steps[-1]
    assert rule_of(cut, ("submission",)) == "submission_lost"
    assert SUBMIT_COMMAND not in convert_turns(cut).commands


def test_a_real_refused_create_is_converted_to_no_write_and_proven() -> None:
    """OpenHands refused a create because the file existed: the conversion must not write it."""
    from pipeline.convert import edits
    from pipeline.verify.effects import edit_violation

    ep = real("openhands-0.15-verified-django-11149-refused-create.json", "openhands")
    conv = convert_turns(ep)
    turn = next(i for i, s in enumerate(conv.sources) if "File already exists at" in s.observation)
    refusal = conv.sources[turn].observation
    assert conv.returncodes[turn] == 1 and verify(ep, conv, rules=("effect",)) is None
    # the faulty form: an edit script that writes the file and prints the refusal as its success
    script = edits.replace_command("/testbed/reproduce.py", [("a", "b", False)], refusal)
    assert edit_violation(script, refusal, 0, refusal) == "the success path prints a failure"
