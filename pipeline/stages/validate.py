"""Strict mini-swe-agent v1 format checks (research/target-format.md §4.1); failures are drops.

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
    _TRUNCATED_RE,
    SENTINELS,
    SUBMIT_COMMAND,
    TRUNCATE_AT,
    is_sentinel_output,
    parse_actions,
    render_instance,
    render_reply,
    render_system,
    submission_of,
)
from pipeline.convert.roots import MAYBE_FOREIGN_RS, find_foreign_roots
from pipeline.stages.base import Stage, StageOutput
from schemas.miniswe import (
    ACTION_REGEX,
    ACTION_REGEX_POLARS,
    BLOCK_RE,
    INSTANCE_TEMPLATE,
    TRUNCATION_WARNING,
    template,
)
from schemas.run import DROPS, empty

_RESIDUE = re.compile(r"<tool_call>|</tool_call>|<function=|<parameter=|<tool_response>|\"tool_calls\"\s*:")
_BLOCK = BLOCK_RE


def first_foreign_root(text: str, repo: str | None = None) -> str | None:
    """The first root :func:`find_foreign_roots` reports in ``text``, or None."""
    roots = find_foreign_roots(text, repo)
    return roots[0] if roots else None


def _is_sentinel(output: str) -> bool:
    """:func:`is_sentinel_output`, without splitting a long output into lines when it cannot be:
    its first stripped line can only be a sentinel if the stripped output starts with one."""
    return output.lstrip().startswith(SENTINELS) and is_sentinel_output(output)


def check_messages(
    messages: list[dict[str, Any]],
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
    """All rule violations as (rule, detail), in message order.

    ``maybe_roots``, one flag per message, lets a caller that has already ruled out foreign roots
    in some messages (false: certainly none; see :func:`maybe_roots_in`) skip their scan."""
    problems: list[tuple[str, str]] = []
    roles = [m.get("role") for m in messages]
    n_turns = (len(messages) - 2) // 2
    expected = ["system", "user"] + ["assistant", "user"] * n_turns
    if roles != expected or len(messages) < 4:
        bad = next(
            (i for i, (a, b) in enumerate(zip(roles, expected, strict=False)) if a != b),
            min(len(roles), len(expected)),
        )
        return [("roles", f"message {bad}: {roles[bad] if bad < len(roles) else 'missing'}")]
    if messages[0]["content"] != render_system():
        problems.append(("templates", "message 0: system prompt differs"))
    if problem_statement is not None and messages[1]["content"] != render_instance(problem_statement):
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

    for t in range(n_turns):
        a = messages[2 + 2 * t]["content"]
        reply = messages[3 + 2 * t]["content"]
        actions = parse_actions(a)
        if len(actions) != 1:
            problems.append(("action_count", f"turn {t}: {len(actions)} bash blocks"))
        elif not actions[0] or actions[0] != commands[t]:
            problems.append(("action_mismatch", f"turn {t}: block is not the intended command"))
        if _RESIDUE.search(_BLOCK.sub("", a)) or _RESIDUE.search(commands[t]):
            problems.append(("residue", f"turn {t}: tool-call markup"))
        scan_a, scan_reply = (True, True) if maybe_roots is None else maybe_roots[2 + 2 * t : 4 + 2 * t]
        root = (first_foreign_root(a, repo) if scan_a else None) or (
            first_foreign_root(reply, repo) if scan_reply else None
        )
        if root:
            problems.append(("foreign_root", f"turn {t}: {root}"))
        last = t == n_turns - 1
        is_submit = commands[t] == SUBMIT_COMMAND
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
        if reply != render_reply(commands[t], out, None if rc is None else int(rc)):
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


# --- the vectorised proof of validity (Validate's fast path) -----------------------------------------
# Rust's ``\s`` (and str.strip_chars) leave out U+001C-U+001F, which Python's ``\s`` (and str.strip)
# include: a text holding one of them is left to the Python rules, and every other text is matched
# the same by both engines.
_CTRL_RS = r"[\x1c-\x1f]"
_BLOCK_RS = ACTION_REGEX.replace("(.*?)", "(?s:.*?)")
_RESIDUE_RS = _RESIDUE.pattern.replace(r"\s", r"[\s\x1c-\x1f]")


# is_truncated_render's fullmatch, with ASCII digits (Rust's \d knows newer Unicode digits than
# Python's): a match here is one in Python; an output that starts like a cut render and does not match
# is left to the Python rules.
_TRUNCATED_RS = "(?s)^" + _TRUNCATED_RE.pattern.replace(r"\d", "[0-9]") + "$"


def _observations(out: pl.Expr, rc: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """:func:`render_observation` as polars expressions: which case applies, then the render of each
    case (0 whole, 1 truncated, 2 already truncated by mini), to be evaluated on its own turns only."""
    head = pl.concat_str(pl.lit("<returncode>"), rc.cast(pl.Utf8), pl.lit("</returncode>\n"))
    case = (
        pl.when(out.str.starts_with(TRUNCATION_WARNING) & out.str.contains(_TRUNCATED_RS))
        .then(2)
        .when(out.str.len_chars() < TRUNCATE_AT)
        .then(0)
        .otherwise(1)
    )
    whole = pl.concat_str(head, pl.lit("<output>\n"), out, pl.lit("</output>"))
    cut = pl.concat_str(
        head,
        pl.lit(f"{TRUNCATION_WARNING}<output_head>\n"),
        out.str.slice(0, 5000),
        pl.lit("\n</output_head>\n<elided_chars>\n"),
        (out.str.len_chars() - TRUNCATE_AT).cast(pl.Utf8),
        pl.lit(" characters elided\n</elided_chars>\n<output_tail>\n"),
        out.str.slice(-5000),
        pl.lit("\n</output_tail>"),
    )
    return case, whole, cut, pl.concat_str(head, out)


def _all(lists: pl.Expr, cond: pl.Expr) -> pl.Expr:
    """Whether ``cond`` holds for every element of ``lists`` (a null is false)."""
    return lists.list.eval(cond.fill_null(False)).list.all()


def proven_valid(batch: pl.DataFrame, step_limit: int) -> pl.Series:
    """Per run: true when :func:`check_messages` certainly finds nothing (false: it may find a
    problem, and the Python rules decide). Whole columns in Rust for the turns of every run; only a
    submitted run's last turn (the submission, cut on Python's line boundaries) is checked in Python.
    tests/test_validate_fast.py checks that a run proven valid is one the Python rules accept."""
    content = pl.element().struct.field("content")
    role = pl.element().struct.field("role")
    msgs = pl.col("messages")
    n = msgs.list.len().cast(pl.Int64)  # (n - 2) on the unsigned length would wrap
    n_turns = (n - 2) // 2
    parts = template(INSTANCE_TEMPLATE).split("{{task}}")
    statement = pl.col("problem_statement")
    instance = pl.concat_str(
        [x for i, p in enumerate(parts) for x in ((statement,) if i else ()) + (pl.lit(p),)]
    )
    contents = pl.col("contents")
    rows = (
        batch.with_columns(msgs.list.eval(content).alias("contents"))
        .select(
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("i"),
            pl.col("submitted"),
            (
                (n >= 4)
                & (n % 2 == 0)
                & (n_turns <= step_limit)
                & (msgs.list.first().struct.field("role") == "system")
                & (msgs.list.first().struct.field("content") == render_system())
                & (msgs.list.get(1, null_on_oob=True).struct.field("role") == "user")
                & (
                    statement.is_null()
                    | (msgs.list.get(1, null_on_oob=True).struct.field("content") == instance)
                )
                & _all(msgs.list.slice(2).list.gather_every(2), role == "assistant")
                & _all(msgs.list.slice(3).list.gather_every(2), role == "user")
                & (pl.col("commands").list.len() == n_turns)
                & (pl.col("outputs").list.len() == n_turns)
                & (pl.col("returncodes").list.len() == n_turns)
            )
            .fill_null(False)
            .alias("ok"),
            contents.list.slice(2).list.gather_every(2).alias("a"),
            contents.list.slice(3).list.gather_every(2).alias("reply"),
            pl.col("commands").alias("cmd"),
            pl.col("outputs").alias("out"),
            pl.col("returncodes").alias("rc"),
            pl.int_ranges(0, n_turns).alias("t"),
            n_turns.alias("n_turns"),
        )
        .filter(pl.col("ok"))
    )
    proven = pl.Series("proven", [False] * batch.height)
    if rows.height == 0:
        return proven
    a, reply, cmd, out, rc = (pl.col(c) for c in ("a", "reply", "cmd", "out", "rc"))
    last = pl.col("t") == pl.col("n_turns") - 1
    submission = last & pl.col("submitted").fill_null(False)
    turn_ok = (
        reply.is_not_null()
        & ~a.str.contains(_CTRL_RS)
        & (a.str.count_matches(ACTION_REGEX_POLARS) == 1)
        & (a.str.extract(ACTION_REGEX_POLARS, 1).str.strip_chars() == cmd)
        & (cmd != "")
        & ~a.str.replace_all(_BLOCK_RS, "").str.contains(_RESIDUE_RS)
        & ~cmd.str.contains(_RESIDUE_RS)
        & ((cmd != SUBMIT_COMMAND) | (last & (pl.col("submitted") != False)).fill_null(last))  # noqa: E712
        & (
            submission
            | (
                rc.is_not_null()
                & ~pl.any_horizontal([out.str.contains(x, literal=True) for x in SENTINELS])
                & ~(out.str.starts_with(TRUNCATION_WARNING) & ~out.str.contains(_TRUNCATED_RS))
            )
        )
    ).fill_null(False)
    case, *renders = _observations(out, rc)
    turns = rows.explode(["a", "reply", "cmd", "out", "rc", "t"]).select(
        "i",
        turn_ok.alias("ok"),
        submission.alias("sub"),
        # foreign roots: the Rust pre-check, then the exact Python scan on what it flags
        a.str.contains(MAYBE_FOREIGN_RS).fill_null(True).alias("scan_a"),
        reply.str.contains(MAYBE_FOREIGN_RS).fill_null(True).alias("scan_r"),
        case.alias("case"),
        a,
        reply,
        cmd,
        out,
        rc,
    )
    # every other reply is the observation of its output: each case rendered on its own turns only
    wrong = pl.concat(
        [
            turns.select("i", "case", "sub", "reply", "out", "rc")
            .filter((pl.col("case") == k) & ~pl.col("sub"))
            .filter(~(reply == render).fill_null(False))
            .select("i")
            for k, render in enumerate(renders)
        ]
    )
    ok_runs = (
        turns.group_by("i")
        .agg(pl.col("ok").all())
        .filter(pl.col("ok") & ~pl.col("i").is_in(wrong["i"].implode()))["i"]
    )
    among_ok = pl.col("i").is_in(ok_runs.implode())
    bad: set[int] = set()
    repos = batch["repo"]
    for i, a_text, r_text, scan_a, scan_r in (
        turns.select("i", "a", "reply", "scan_a", "scan_r")
        .filter((pl.col("scan_a") | pl.col("scan_r")) & among_ok)
        .iter_rows()
    ):
        repo = repos[i]
        if (scan_a and first_foreign_root(a_text, repo)) or (scan_r and first_foreign_root(r_text, repo)):
            bad.add(i)
    # a submitted run's last turn: the submit, a successful sentinel output, the submission
    submissions = turns.select("i", "cmd", "out", "rc", "reply").filter(turns["sub"] & among_ok)
    for i, c, o, r, rep in submissions.iter_rows():
        if not (
            c == SUBMIT_COMMAND and r == 0 and o is not None and _is_sentinel(o) and rep == submission_of(o)
        ):
            bad.add(i)
    good = [i for i in ok_runs.to_list() if i not in bad]
    return proven.scatter(good, True) if good else proven


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
        proven = proven_valid(batch, limit)
        if proven.all():  # the usual batch: nothing to split off
            return StageOutput(batch, empty(DROPS))
        # The runs not proven valid go through the Python rules (the first problem is the reason).
        idx = (~proven).arg_true()
        reasons = [""] * batch.height
        details = [""] * batch.height
        cols = batch[idx].select(
            "messages",
            "commands",
            "outputs",
            "returncodes",
            "problem_statement",
            "submitted",
            maybe_roots_in(pl.col("messages")),
            "repo",
        )
        for i, (messages, commands, outputs, rcs, statement, submitted, maybe_roots, repo) in zip(
            idx, cols.iter_rows(), strict=True
        ):
            found = check_messages(
                messages or [],
                commands or [],
                outputs=outputs,
                returncodes=rcs,
                problem_statement=statement,
                submitted=submitted,
                step_limit=limit,
                maybe_roots=maybe_roots,
                repo=repo,
            )
            if found:
                reasons[i], details[i] = found[0]
        if not any(reasons):  # the usual batch: nothing to split off
            return StageOutput(batch, empty(DROPS))
        reason = pl.Series("reason", reasons, dtype=pl.Utf8)
        return self.split(batch, reason != "", reason, pl.Series("detail", details, dtype=pl.Utf8))
