"""Strict mini-swe-agent v1 format checks; failures are drops.

Rules (the drop reason), each reported with the turn index in the detail:

* ``roles``: system, user, then assistant/user pairs; nothing else.
* ``templates``: system and task messages equal the rendered mini-coder templates.
* ``action_count``: mini-swe-agent's regex finds exactly one ```` ```bash ```` block per assistant
  message; ``action_mismatch``: that block (stripped, as mini parses it) is the intended command
  (``commands`` column) and is non-empty.
* ``observation_shape``: every reply equals mini's observation template rendered from the raw
  output and return code (``outputs``/``returncodes``), or, for a command that timed out (return
  code null), mini's timeout message rendered from the command and its output; and no earlier
  output starts with the sentinel (mini would have stopped there).
* ``submit``: a submitted run ends with the submit command, sentinel output, return code 0, and a
  final message equal to the rest of the output; an unsubmitted run never runs it.
* ``residue``: tool-call markup outside the command (``<tool_call>``, ``<function=``,
  ``<parameter=``, ``<tool_response>``, ``"tool_calls":``) in any assistant message.
* ``foreign_root``: a repo root other than /testbed in an assistant message or observation
  (``/repo``, ``/app``, ``/<owner>__<repo>``, ``/workspace/<the run's repo>``; other paths under
  /workspace are not checkouts, see convert/roots.py).
* ``step_limit``: more assistant turns than ``ctx.config.limits.step_limit``.
* ``shape``: commands/outputs/returncodes do not line up with the turns.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from pipeline.convert.render import (
    SENTINELS,
    SUBMIT_COMMAND,
    is_sentinel_output,
    parse_actions,
    render_instance,
    render_reply,
    render_system,
    submission_of,
)
from pipeline.convert.roots import MAYBE_FOREIGN_RS, find_foreign_roots
from pipeline.stages.base import Stage, StageOutput
from schemas.miniswe import BLOCK_RE, TRUNCATE_AT, TRUNCATION_WARNING
from schemas.run import DROPS, empty

_RESIDUE = re.compile(r"<tool_call>|</tool_call>|<function=|<parameter=|<tool_response>|\"tool_calls\"\s*:")
_BLOCK = BLOCK_RE


def _has_residue(text: str) -> bool:
    """Whether ``_RESIDUE`` finds markup in ``text``. Each of its alternatives holds one of these
    words, and four substring tests (memchr) are cheaper than the regex trying every ``<`` and ``"``."""
    return (
        "tool_call" in text or "<function=" in text or "<parameter=" in text or "<tool_response>" in text
    ) and _RESIDUE.search(text) is not None


def _rendered_block_prefix(content: str, command: str) -> str | None:
    """The text before the block when ``content`` ends with the one bash block of ``command`` as
    rendered (a non-empty command without surrounding whitespace, and no other triple backtick anywhere),
    else None. Then ``parse_actions(content) == [command]`` and ``BLOCK_RE.sub("", content)`` is that
    prefix, found without the lazy regex: with two triple backticks in all, neither the prefix nor the
    command holds one, so the regex's match is the block's opening fence up to its closing one."""
    fence = f"```bash\n{command}\n```"
    if not command or command != command.strip() or not content.endswith(fence) or content.count("```") != 2:
        return None
    return content[: len(content) - len(fence)]


def _rendered_reply(command: str, output: str, rc: int | None) -> str:
    """:func:`render_reply` with the usual observation (a return code, an output neither long nor
    already truncated by mini) rendered in place."""
    if rc is not None and len(output) < TRUNCATE_AT and not output.startswith(TRUNCATION_WARNING):
        return f"<returncode>{int(rc)}</returncode>\n<output>\n{output}</output>"
    return render_reply(command, output, None if rc is None else int(rc))


def first_foreign_root(text: str, repo: str | None = None) -> str | None:
    """The first root :func:`find_foreign_roots` reports in ``text``, or None."""
    roots = find_foreign_roots(text, repo)
    return roots[0] if roots else None


def _is_sentinel(output: str) -> bool:
    """:func:`is_sentinel_output`, without splitting a long output into lines when it cannot be:
    its first stripped line can only be a sentinel if the stripped output starts with one."""
    return output.lstrip().startswith(SENTINELS) and is_sentinel_output(output)


def check_messages(
    messages: list[dict[str, Any]], commands: list[str], **kwargs: Any
) -> list[tuple[str, str]]:
    """All rule violations as (rule, detail), in message order: :func:`check_turns` of the
    messages' roles and contents."""
    return check_turns(
        [m.get("role") for m in messages], [m.get("content") for m in messages], commands, **kwargs
    )


def check_turns(
    roles: list[str | None],
    contents: list[Any],
    commands: list[str],
    *,
    outputs: list[str] | None = None,
    returncodes: list[int | None] | None = None,
    problem_statement: str | None = None,
    submitted: bool | None = None,
    step_limit: int = 250,
    maybe_roots: list[bool] | None = None,
    repo: str | None = None,
) -> list[tuple[str, str]]:
    """All rule violations as (rule, detail), in message order, of the messages with these roles
    and contents (the stage reads the two columns out of polars, never a dict per message).

    ``maybe_roots``, one flag per message, lets a caller that has already ruled out foreign roots
    in some messages (false: certainly none; see :func:`maybe_roots_in`) skip their scan."""
    problems: list[tuple[str, str]] = []
    n_turns = (len(roles) - 2) // 2
    expected = ["system", "user"] + ["assistant", "user"] * n_turns
    if roles != expected or len(roles) < 4:
        bad = next(
            (i for i, (a, b) in enumerate(zip(roles, expected, strict=False)) if a != b),
            min(len(roles), len(expected)),
        )
        return [("roles", f"message {bad}: {roles[bad] if bad < len(roles) else 'missing'}")]
    if contents[0] != render_system():
        problems.append(("templates", "message 0: system prompt differs"))
    if problem_statement is not None and contents[1] != render_instance(problem_statement):
        problems.append(("templates", "message 1: task message differs"))
    if n_turns > step_limit:
        problems.append(("step_limit", f"{n_turns} turns > {step_limit}"))
    if (
        len(commands) != n_turns
        or (outputs is not None and len(outputs) != n_turns)
        or (returncodes is not None and len(returncodes) != n_turns)
    ):
        problems.append(("shape", f"{n_turns} turns, {len(commands)} commands"))
        return problems

    scans = (
        zip(maybe_roots[2::2], maybe_roots[3::2], strict=True)
        if maybe_roots is not None
        else ((True, True) for _ in range(n_turns))
    )
    last_t = n_turns - 1
    for t, (a, reply, command, (scan_a, scan_reply)) in enumerate(
        zip(contents[2::2], contents[3::2], commands, scans, strict=True)
    ):
        outside = _rendered_block_prefix(a, command)
        if outside is None:  # not the one block of the command as rendered: mini's regex decides
            actions = parse_actions(a)
            if len(actions) != 1:
                problems.append(("action_count", f"turn {t}: {len(actions)} bash blocks"))
            elif not actions[0] or actions[0] != command:
                problems.append(("action_mismatch", f"turn {t}: block is not the intended command"))
            outside = _BLOCK.sub("", a)
            residue = _has_residue(outside) or _has_residue(command)
        else:  # ``a`` is outside + the block around the command: markup in either is markup in ``a``
            residue = _has_residue(a) and (_has_residue(outside) or _has_residue(command))
        if residue:
            problems.append(("residue", f"turn {t}: tool-call markup"))
        root = (first_foreign_root(a, repo) if scan_a else None) or (
            first_foreign_root(reply, repo) if scan_reply else None
        )
        if root:
            problems.append(("foreign_root", f"turn {t}: {root}"))
        last = t == last_t
        is_submit = command == SUBMIT_COMMAND
        if is_submit and not (last and submitted is not False):
            problems.append(("submit", f"turn {t}: submit command before the end"))
        if outputs is None or returncodes is None:
            if not (last and is_submit) and not reply.startswith(
                ("<returncode>", "The last command <command>")
            ):
                problems.append(("observation_shape", f"turn {t}: not an observation"))
            continue
        out, rc = outputs[t], returncodes[t]
        if last and submitted:
            if not (is_submit and _is_sentinel(out) and rc == 0):
                problems.append(("submit", f"turn {t}: last turn is not a successful submit"))
            elif reply != submission_of(out):
                problems.append(("submit", f"turn {t}: final message is not the submission"))
            continue
        if rc == 0 and _is_sentinel(out):
            problems.append(("observation_shape", f"turn {t}: output starts with the sentinel"))
        if reply != _rendered_reply(command, out, rc):
            problems.append(("observation_shape", f"turn {t}: observation differs from its output"))
    if submitted and n_turns and commands[-1] != SUBMIT_COMMAND:
        problems.append(("submit", f"turn {n_turns - 1}: submitted run does not end with submit"))
    return problems


def validate_messages(messages: list[dict[str, Any]], commands: list[str], **kwargs: Any) -> list[str]:
    """Problems as ``"<rule>: <detail>"`` strings (empty list: valid). See :func:`check_messages`."""
    return [f"{rule}: {detail}" for rule, detail in check_messages(messages, commands, **kwargs)]


def maybe_roots_in(messages: pl.Expr) -> pl.Expr:
    """Per message: whether it might hold a foreign root (false: it certainly holds none). The
    turns' texts are most of a batch's bytes; one Rust pass over all of them leaves the exact
    Python scan to the rare message that needs it."""
    content = pl.element().struct.field("content")
    return messages.list.eval(content.str.contains(MAYBE_FOREIGN_RS).fill_null(True)).alias("maybe_roots")


class Validate(Stage):
    name = "validate"
    reasons = (
        "roles",
        "templates",
        "action_count",
        "action_mismatch",
        "observation_shape",
        "shape",
        "submit",
        "residue",
        "foreign_root",
        "step_limit",
    )

    def process(self, batch: pl.DataFrame) -> StageOutput[pl.DataFrame]:
        limit = self.ctx.config.limits.step_limit
        reasons: list[str] = []
        details: list[str] = []
        field = pl.col("messages").list.eval
        cols = batch.select(
            field(pl.element().struct.field("role")).fill_null([]).alias("roles"),
            field(pl.element().struct.field("content")).fill_null([]).alias("contents"),
            pl.col("commands").fill_null([]),
            "outputs",
            "returncodes",
            "problem_statement",
            "submitted",
            maybe_roots_in(pl.col("messages")),
            "repo",
        )
        for (
            roles,
            contents,
            commands,
            outputs,
            rcs,
            statement,
            submitted,
            maybe_roots,
            repo,
        ) in cols.iter_rows():
            found = check_turns(
                roles,
                contents,
                commands,
                outputs=outputs,
                returncodes=rcs,
                problem_statement=statement,
                submitted=submitted,
                step_limit=limit,
                maybe_roots=maybe_roots,
                repo=repo,
            )
            reasons.append(found[0][0] if found else "")
            details.append(found[0][1] if found else "")
        if not any(reasons):  # the usual batch: nothing to split off
            return StageOutput(batch, empty(DROPS))
        reason = pl.Series("reason", reasons, dtype=pl.Utf8)
        return self.split(batch, reason != "", reason, pl.Series("detail", details, dtype=pl.Utf8))
