"""Tools of the interactive coding agents (Claude Code, Codex CLI, Kimi CLI) that change nothing.

A call that changes no file and no shell state, and whose result only the harness prints (a
plan, a loaded skill's text, a read-only sub-agent's report), is not a command: its turn is
removed and what the agent wrote into it (the sub-agent's task, the plan) is folded into the
next turn's thought (``convert/no_effect_folded``), so the run keeps its actions.

A sub-agent that may edit (Claude Code's ``Task``/``Agent`` with ``general-purpose`` or any
custom agent) made changes the run's own turns do not show: the run is dropped
(``convert/subagent_effect``), never folded as if nothing happened.

Claude Code's Bash in the background, or killed at its timeout, has no one-shot command:
``convert/background_process``, ``convert/timeout_output_unknown``.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.core.episode import ConvertError

# Claude Code's sub-agent tool (``Task``, renamed ``Agent``) and the agents that cannot write:
# they are given only read and search tools
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
READ_ONLY_AGENTS = frozenset({"Explore", "Plan", "statusline-setup", "claude-code-guide"})
# calls whose only product is text the harness shows the model (plans, skills, context reads)
NO_EFFECT_TOOLS = frozenset({"ExitPlanMode", "Skill", "ReadContext", "read_context"})


def _text(args: dict[str, Any], *names: str) -> str:
    for n in names:
        v = args.get(n)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return ""


_TIMED_OUT = re.compile(r"\A\s*(?:Exit code \d+\n)?Command timed out after ")


def refuse_unreplayable(name: str, args: dict[str, Any], obs: str, turn: int) -> None:
    """Claude Code's Bash calls no one-shot command stands for: a background run (its result is
    a job id; the output comes later, through another tool) and a command Claude Code killed at
    its timeout (what it printed before is not recorded as mini's timeout message would need)."""
    if name != "Bash":
        return
    if str(args.get("run_in_background", "")).lower() in ("true", "1"):
        raise ConvertError("background_process", f"turn {turn}: Bash run_in_background")
    if _TIMED_OUT.match(obs):
        raise ConvertError("timeout_output_unknown", f"turn {turn}: {obs.strip()[:60]}")


def no_effect_text(name: str, args: dict[str, Any], turn: int) -> str | None:
    """The text a no-effect call folds into the next thought ("" when none), or None when
    ``name`` is not one of these tools; a sub-agent that may write raises."""
    if name in SUBAGENT_TOOLS:
        agent = _text(args, "subagent_type") or "general-purpose"
        if agent not in READ_ONLY_AGENTS:
            raise ConvertError("subagent_effect", f"turn {turn}: {name}({agent}) may have edited files")
        return _text(args, "prompt", "description")
    if name in NO_EFFECT_TOOLS:
        return _text(args, "plan", "explanation", "skill", "command")
    return None
