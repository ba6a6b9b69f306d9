"""Episode → mini-swe-agent v1 messages: roots rewritten, tools → bash, rendered.

``convert_episode`` is the one entry point. Turn rules:

* one tool call → one assistant turn; ``think`` text and the thoughts of removed calls (to-do,
  memory, interrupts) are folded into the next turn's THOUGHT (``convert/think_folded``,
  ``convert/todo_removed``);
* a submit/finish tool or a command printing the sentinel ends the run with the submit command;
  its output is the sentinel line + the patch the run recorded (the finish step's observation
  when it is a diff, else empty: counted ``convert/submission_unknown``); later steps are dropped;
* a run that submits before any command ran (a chat-only run: messages, then ``finish``) shows no
  action to learn from: dropped ``convert/no_actions``;
* a thought is left as it was, three backticks included, as long as the rendered turn still holds
  exactly one ```` ```bash ```` block, the command; only a thought that would add or break a
  block has its backticks written ``~~~`` (``convert/thought_fence_rewritten``); a *command* with
  a line starting with three backticks cannot be put in one block and drops the run
  (``convert/fence_in_command``);
* a return code is the record's (the step's, or the harness's exit-code note); where there is none
  it is inferred only by a measured rule (``infer_returncode``), else it is unknown (``None`` with
  :attr:`TurnSource.rc_from` ``"unknown"``): the verify step drops such a run, a code is never
  guessed;
* a submit whose patch the record does not hold (neither ``Meta.submission`` nor a diff in the
  finish step's observation) is not rendered as a submit: the run ends unsubmitted before it
  (``convert/submission_unknown``), as mini's final message would otherwise claim an empty diff;
* a command that never finished (``Step.timed_out``) gets mini-swe-agent's timeout message as its
  reply, with what it printed before it was killed; its return code is None (mini records none),
  never an inferred 0 (``convert/timed_out``);
* runs longer than ``step_limit`` turns are cut there and are not submitted
  (``convert/step_limit_truncated``), like mini-swe-agent's LimitsExceeded (without its empty
  final message).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from pipeline.convert.actions import Action, ToolState
from pipeline.convert.bash import split_exit_marker
from pipeline.convert.render import (
    SENTINELS,
    SUBMIT_COMMAND,
    is_sentinel_output,
    parse_actions,
    render_assistant,
    render_messages,
)
from pipeline.convert.returncodes import infer_returncode
from pipeline.convert.roots import RootRewriter
from pipeline.convert.runfiles import RunFiles
from pipeline.convert.tools import BASH_TOOLS, convert_call
from pipeline.core.episode import Bash, ConvertError, Episode, ToolCall
from pipeline.parsers.affine_view import EXIT_NOTED_HARNESSES
from pipeline.parsers.assembly import SUBMIT_MARKERS
from pipeline.text.shell import peel_wrappers

__all__ = ["SUBMIT_COMMAND", "Converted", "TurnSource", "convert_episode", "convert_turns"]


@dataclass(slots=True)
class TurnSource:
    """Where one converted turn came from: what the verify step checks it against."""

    step: int  # the episode step it converts
    tool: str  # "bash" or the tool's name
    synthesised: bool  # the command was built by a converter, not recorded as shell text
    # where the return code comes from: "record" (the step's code or the harness's exit-code
    # note), "exit_note_absent" (a harness that notes every nonzero exit wrote none), "converter"
    # (a synthesised command's own outcome), "rule:<name>" (a measured
    # inference rule), "timeout", "submit", or "unknown" (none: the run cannot be published)
    rc_from: str
    observation: str  # the step's observation as recorded (roots rewritten)


@dataclass
class Converted:
    messages: list[dict[str, str]]
    commands: list[str]
    outputs: list[str]
    returncodes: list[int | None]  # None: the command timed out (rendered with mini's timeout message)
    submitted: bool
    counters: Counter[str] = field(default_factory=Counter)
    problem_statement: str = ""  # the task as rendered: its roots rewritten like every message
    thoughts: list[str] = field(default_factory=list)  # each turn's THOUGHT, as rendered
    sources: list[TurnSource] = field(default_factory=list)  # one per turn
    submission: str | None = None  # the patch the record says was submitted (Meta.submission)

    def rendering(self) -> tuple[str, list[str], list[str], list[str], list[int | None], bool]:
        """The arguments of ``render_messages`` and ``render_contents``."""
        return (
            self.problem_statement,
            self.thoughts,
            self.commands,
            self.outputs,
            self.returncodes,
            self.submitted,
        )


def _submission(obs: str) -> str:
    """The patch a finish step recorded: after a sentinel line, or a diff on its own."""
    if is_sentinel_output(obs):
        return "".join(obs.lstrip().splitlines(keepends=True)[1:])
    stripped = obs.lstrip("\n")
    return stripped if stripped.startswith("diff --git") else ""


_SUBMIT_MARKER = re.compile("|".join(re.escape(s) for s in SUBMIT_MARKERS))


# every marker holds this: a substring search for it rules most commands out faster than the
# alternation, which has no literal prefix to jump to
_MARKER_PART = "_FINAL_OUTPUT"
assert all(_MARKER_PART in s for s in SUBMIT_MARKERS)


def _is_submit_command(cmd: str) -> bool:
    # ``in`` first: a long command (a heredoc) is not copied by strip() to be compared
    return ("submit" in cmd and cmd.strip() == "submit") or (
        _MARKER_PART in cmd and _SUBMIT_MARKER.search(cmd) is not None
    )


def convert_episode(ep: Episode, step_limit: int = 250) -> Converted:
    """The run's turns and their messages."""
    conv = convert_turns(ep, step_limit)
    conv.messages = render_messages(*conv.rendering())
    return conv


def convert_turns(ep: Episode, step_limit: int = 250) -> Converted:
    """The run's turns, ``messages`` left empty: the Convert step renders only their contents
    (``render_contents``), not a dict per message."""
    counters: Counter[str] = Counter()
    state = ToolState(counters=counters)
    roots = RootRewriter(ep.meta.repo_root, ep.task.repo)
    thoughts: list[str] = []
    commands: list[str] = []
    outputs: list[str] = []
    returncodes: list[int | None] = []
    sources: list[TurnSource] = []
    exit_noted = ep.meta.harness in EXIT_NOTED_HARNESSES  # no exit note: the command exited 0
    carry: list[str] = []  # thoughts waiting for the next emitted turn
    tool_names: list[str] = []  # each step's tool, counted once the loop is done
    submitted = False
    files = RunFiles()  # what the run wrote or displayed, for the return-code rules that read scripts

    for turn, step in enumerate(ep.steps):
        thought = roots(step.thought).strip()
        obs = roots(step.observation)
        synthesised = False
        if isinstance(step.call, Bash):
            name = "bash"
            cmd = peel_wrappers(roots(step.call.command))
            out, marked = split_exit_marker(obs)
            action = (
                Action("submit", output=obs)
                if _is_submit_command(cmd)
                else Action("run", cmd, out, step.returncode if step.returncode is not None else marked)
            )
        elif isinstance(step.call, ToolCall):
            name = step.call.name
            args = roots.deep(step.call.args)
            assert isinstance(args, dict)
            action = convert_call(name, args, obs, step.returncode, turn, state)
            synthesised = name not in BASH_TOOLS
            if action.kind == "run" and _is_submit_command(action.command):
                action = Action("submit", output=obs)
        else:  # pragma: no cover - the Episode contract allows only these two
            raise ConvertError("bad_step", f"turn {turn}: {type(step.call).__name__}")
        tool_names.append(name)

        if action.kind == "fold":
            counters["convert/think_folded"] += 1
            carry += [t for t in (thought, action.text.strip()) if t]
            continue
        if action.kind == "remove":
            if not action.text:  # removals with their own counter were counted where they happened
                counters["convert/todo_removed"] += 1
            carry += [thought] if thought else []
            continue
        if action.kind == "submit":
            if not commands:
                raise ConvertError("no_actions", f"turn {turn}: {name} before any command")
            # a finish message is the agent's closing words: part of the submit turn's thought
            words = [*carry, thought, roots(action.text).strip()]
            carry = []
            recorded = ep.meta.submission
            patch = roots(recorded) if recorded is not None else _submission(action.output)
            if recorded is None and not patch:
                # the record does not say what was submitted: a submit would claim an empty diff
                counters["convert/submission_unknown"] += 1
                carry += [w for w in words if w]
                break
            thoughts.append("\n\n".join(w for w in words if w))
            commands.append(SUBMIT_COMMAND)
            outputs.append(f"{SENTINELS[0]}\n{patch}")
            returncodes.append(0)
            sources.append(TurnSource(turn, name, True, "submit", obs))
            submitted = True
            if turn < len(ep.steps) - 1:
                counters["convert/after_submit_dropped"] += len(ep.steps) - 1 - turn
            break

        cmd = action.command.strip()
        if not cmd:
            raise ConvertError("empty_command", f"turn {turn}: {name}")
        if cmd.startswith("```") or "\n```" in cmd:
            raise ConvertError("fence_in_command", f"turn {turn}: {name}")
        rc = action.returncode
        rc_from = "converter" if synthesised else "record"
        if step.timed_out:
            rc, rc_from = None, "timeout"
            counters["convert/timed_out"] += 1
        elif rc is None and not synthesised and exit_noted:
            rc, rc_from = 0, "exit_note_absent"
        elif rc is None:
            inferred = None if synthesised else infer_returncode(cmd, action.output, files)
            if inferred is None:
                rc_from = "unknown"
                counters["convert/returncode_unknown"] += 1
            else:
                rc, rule = inferred
                rc_from = f"rule:{rule}"
                counters[f"convert/returncode_inferred/{rule}"] += 1
        thoughts.append("\n\n".join([*carry, thought]) if carry else thought)
        carry = []
        commands.append(cmd)
        outputs.append(action.output)
        returncodes.append(None if rc is None else int(rc))
        files.learn(cmd, action.output, rc)
        sources.append(TurnSource(turn, name, synthesised, rc_from, obs))

    for name, n in Counter(tool_names).items():
        counters[f"convert/tool/{name}"] += n
    if carry:
        counters["convert/trailing_thought_dropped"] += 1
    if not commands:
        raise ConvertError("no_turns", f"{len(ep.steps)} steps, none a command")
    if len(commands) > step_limit:
        counters["convert/step_limit_truncated"] += 1
        del thoughts[step_limit:], commands[step_limit:], outputs[step_limit:], returncodes[step_limit:]
        del sources[step_limit:]
        submitted = False
    for i, t in enumerate(thoughts):
        if "```" in t and parse_actions(render_assistant(t, commands[i])) != [commands[i]]:
            thoughts[i] = t.replace("```", "~~~")
            counters["convert/thought_fence_rewritten"] += 1

    counters["convert/turns"] += len(commands)
    # a harness preamble in the task ("checked out at /repo") names the root too
    task = roots(ep.task.problem_statement)
    conv = Converted([], commands, outputs, returncodes, submitted, counters, task, thoughts, sources)
    conv.submission = None if ep.meta.submission is None else roots(ep.meta.submission)
    return conv
