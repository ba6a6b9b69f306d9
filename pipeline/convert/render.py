"""Render converted turns as mini-swe-agent v1 messages (its system and instance templates, observations, timeouts).

Pure-Python equivalents of the jinja2 templates of mini-swe-agent 1.17.5 ``extra/swebench.yaml``
(jinja2 is only a test dependency); tests/test_render.py checks them against the real package.
"""

from __future__ import annotations

import re

from schemas.miniswe import (
    ACTION_RE,
    ACTION_REGEX,
    INSTANCE_TEMPLATE,
    PROMPTS_DIR,
    SENTINELS,
    SUBMIT_COMMAND,
    SYSTEM_TEMPLATE,
    TRUNCATE_AT,
    TRUNCATION_WARNING,
    template,
)

__all__ = ["ACTION_REGEX", "PROMPTS_DIR", "SENTINELS", "SUBMIT_COMMAND", "TRUNCATE_AT"]

_ACTION_RE = ACTION_RE
_WARNING = TRUNCATION_WARNING


def _template(name: str) -> str:
    return template(name)


def render_system() -> str:
    return _template(SYSTEM_TEMPLATE)


def render_instance(task: str) -> str:
    # {{task}} is the only construct in the template; jinja substitutes the value verbatim
    return _template(INSTANCE_TEMPLATE).replace("{{task}}", task)


def is_truncated_render(output: str) -> bool:
    """True for an output that mini-swe-agent itself already truncated (a mini-swe run's recorded
    observation): the full text is gone, so it is passed through as mini showed it."""
    return output.startswith(_WARNING) and _TRUNCATED_RE.fullmatch(output) is not None


def render_observation(output: str, returncode: int) -> str:
    """mini-swe-agent's action_observation_template, rendered exactly (including truncation)."""
    if is_truncated_render(output):
        return f"<returncode>{returncode}</returncode>\n{output}"
    if len(output) < TRUNCATE_AT:
        return f"<returncode>{returncode}</returncode>\n<output>\n{output}</output>"
    elided = len(output) - TRUNCATE_AT
    return (
        f"<returncode>{returncode}</returncode>\n{_WARNING}<output_head>\n{output[:5000]}\n</output_head>\n"
        f"<elided_chars>\n{elided} characters elided\n</elided_chars>\n"
        f"<output_tail>\n{output[-5000:]}\n</output_tail>"
    )


_TRUNCATED_RE = re.compile(
    re.escape(_WARNING) + r"<output_head>\n.*\n</output_head>\n<elided_chars>\n\d+ characters elided\n"
    r"</elided_chars>\n<output_tail>\n.*\n</output_tail>",
    re.S,
)


def render_timeout(command: str, output: str) -> str:
    """mini-swe-agent 1.17.5's ``AgentConfig.timeout_template`` (swebench.yaml keeps the default),
    rendered exactly: the user message a command that was killed on its timeout gets. It has no
    return code; ``output`` is what the command printed before it was killed."""
    head = (
        f"The last command <command>{command}</command> timed out and has been killed.\n"
        "The output of the command was:\n"
    )
    if len(output) < TRUNCATE_AT:
        body = f"<output>\n{output}\n</output>"
    else:
        body = (
            "<warning>Output was too long and has been truncated.</warning>\n"
            f"<output_head>\n{output[:5000]}\n</output_head>\n"
            f"<elided_chars>{len(output) - TRUNCATE_AT} characters elided</elided_chars>\n"
            f"<output_tail>\n{output[-5000:]}\n</output_tail>"
        )
    return (
        f"{head}{body}\nPlease try another command and make sure to avoid those requiring interactive input."
    )


def render_reply(command: str, output: str, returncode: int | None) -> str:
    """The user message after a command: its observation, or the timeout message when the
    command never finished (``returncode`` None: mini records no return code for it)."""
    return render_timeout(command, output) if returncode is None else render_observation(output, returncode)


def render_assistant(thought: str, command: str) -> str:
    """THOUGHT + exactly one ```bash block; an empty thought leaves the block alone."""
    thought = thought.strip()
    block = f"```bash\n{command}\n```"
    if not thought:
        return block
    if not thought.startswith("THOUGHT:"):
        thought = f"THOUGHT: {thought}"
    return f"{thought}\n\n{block}"


def parse_actions(content: str) -> list[str]:
    """What mini-swe-agent's DefaultAgent.parse_action finds (stripped), in order."""
    return [m.strip() for m in _ACTION_RE.findall(content)]


def is_sentinel_output(output: str) -> bool:
    """mini-swe-agent's has_finished test on a command's raw output (returncode aside)."""
    lines = output.lstrip().splitlines(keepends=True)
    return bool(lines) and lines[0].strip() in SENTINELS


def submission_of(output: str) -> str:
    """The final user message mini writes after a submit: every output line after the sentinel."""
    return "".join(output.lstrip().splitlines(keepends=True)[1:])


def message_roles(turns: int) -> list[str]:
    """The roles of a run's messages: system, the task, then an assistant turn and its reply per turn."""
    return ["system", "user", *(["assistant", "user"] * turns)]


def render_contents(
    task: str,
    thoughts: list[str],
    commands: list[str],
    outputs: list[str],
    returncodes: list[int | None],
    submitted: bool,
) -> list[str]:
    """The contents of ``render_messages``, in order (their roles: ``message_roles``). The
    Convert step keeps only these: a dict per message would be built, then taken apart again."""
    contents = [render_system(), render_instance(task)]
    last = len(commands) - 1
    for i, (thought, cmd, out, rc) in enumerate(zip(thoughts, commands, outputs, returncodes, strict=True)):
        contents.append(render_assistant(thought, cmd))
        contents.append(submission_of(out) if (submitted and i == last) else render_reply(cmd, out, rc))
    return contents


def render_messages(
    task: str,
    thoughts: list[str],
    commands: list[str],
    outputs: list[str],
    returncodes: list[int | None],
    submitted: bool,
) -> list[dict[str, str]]:
    """[system, user(task), (assistant, user(observation))*]; a submit turn's reply is the patch,
    a timed-out command's (return code None) is mini's timeout message."""
    contents = render_contents(task, thoughts, commands, outputs, returncodes, submitted)
    roles = message_roles(len(commands))
    return [{"role": role, "content": text} for role, text in zip(roles, contents, strict=True)]
