"""Render an abstract run (a list of :class:`Act`) in every harness and dialect the pipeline reads.

A harness decides which tools an action uses and what their results look like (``render_*``
functions return OpenAI-style messages with structured ``tool_calls``); a dialect decides how
those messages are baked into text for a view record (``bake_view``) or kept structured in a
trace envelope (``trace_nodes``). SWE-Lego's OpenHands text has its own renderer.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from pipeline.devkit.synth.content import cat_n, claude_read
from schemas.miniswe import SUBMIT_COMMAND

SUBMIT = SUBMIT_COMMAND


@dataclass(slots=True)
class Act:
    """One abstract agent action; harness renderers pick the tool and the result text."""

    kind: str  # sh | view | create | edit | grep | think | todo | memory | unknown | submit
    thought: str = ""
    cmd: str = ""  # sh: the command; grep: the pattern
    out: str = ""  # sh/grep: what the command printed
    rc: int = 0
    path: str = ""  # absolute path (view/create/edit), directory for grep
    text: str = ""  # view/edit: file content before the action; create: new content; think/memory text
    old: str = ""
    new: str = ""
    start: int = 0  # view range, 1-based inclusive; 0 = whole file
    end: int = 0
    parallel: bool = False  # batched with the previous action in one assistant message
    tool: str = ""  # unknown: the tool name
    args: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- prompts and tool schemas

MINI_SYSTEM = """You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks.
Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).

Include a THOUGHT section before your command where you explain your reasoning process.
Format your response as shown in <format_example>.

<format_example>
THOUGHT: Your reasoning and analysis here

```bash
your_command_here
```
</format_example>

Failure to follow these rules will cause your response to be rejected."""

MINI_INSTANCE = """<pr_description>
Consider the following PR description:
{task}
</pr_description>

<instructions>
# Task Instructions

## Overview
You're a software engineer interacting continuously with a computer by submitting commands.
You'll be helping implement necessary changes to meet requirements in the PR description.
Your task is specifically to make changes to non-test files in the current directory in order to fix the issue described in the PR description in a way that is general and consistent with the codebase.

IMPORTANT: This is an interactive process where you will think and issue ONE command, see its result, then think and issue your next command.

## Submission
When you've completed your work (reading, editing, testing), and cannot make further progress
issue exactly the following command:

```bash
echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached
```
</instructions>"""

TOOL_SYSTEM = (
    "You are an autonomous software engineering agent working in a sandboxed repository at {root}. "
    "Use the provided tools to inspect the code, make changes and run tests. Call one or more tools per "
    "reply; when the task is done, answer without a tool call."
)

TOOL_TASK = (
    "<uploaded_files>\n{root}\n</uploaded_files>\nI've uploaded a {language} code repository in the directory "
    "{root}. Consider the following issue description:\n\n<issue_description>\n{task}\n</issue_description>\n\n"
    "Can you help me implement the necessary changes to the repository so that the requirements specified in "
    "the <issue_description> are met? Do not modify the tests."
)


def _schema(name: str, desc: str, **params: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": desc,
        "parameters": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in params.items()},
            "required": [k for k in params if k not in ("offset", "limit", "description")],
        },
    }


TOOLS: dict[str, list[dict[str, Any]]] = {
    "bash": [
        _schema("bash", "Run a shell command in the repository container.", command="string"),
        _schema(
            "edit",
            "Replace a unique string in a file. old_str must appear exactly once.",
            path="string",
            old_str="string",
            new_str="string",
        ),
    ],
    "pi": [
        _schema("read", "Read a file.", path="string", offset="integer", limit="integer"),
        _schema("bash", "Execute a bash command.", command="string"),
        _schema("edit", "Replace exact text in a file.", path="string", oldText="string", newText="string"),
        _schema("write", "Write a file.", path="string", content="string"),
    ],
    "claude_code": [
        _schema("Bash", "Executes a bash command.", command="string", description="string"),
        _schema("Read", "Reads a file.", file_path="string", offset="integer", limit="integer"),
        _schema(
            "Edit",
            "Performs exact string replacement.",
            file_path="string",
            old_string="string",
            new_string="string",
        ),
        _schema("Write", "Writes a file.", file_path="string", content="string"),
        _schema("Grep", "Searches file contents.", pattern="string", path="string", output_mode="string"),
        _schema("Glob", "Finds files by pattern.", pattern="string", path="string"),
        _schema("TodoWrite", "Updates the to-do list.", todos="array"),
    ],
    "hermes_agent": [
        _schema("terminal", "Run a terminal command.", command="string"),
        _schema("read_file", "Read a file with line numbers.", path="string"),
        _schema("patch", "Replace text in a file.", path="string", old_string="string", new_string="string"),
        _schema("write_file", "Write a file.", path="string", content="string"),
        _schema("todo", "Manage the task list.", todos="array"),
        _schema("memory", "Save a note to long-term memory.", action="string", content="string"),
    ],
}


# ---------------------------------------------------------------- mini-swe (bash fence)


def mini_observation(out: str, rc: int) -> str:
    """mini-swe-agent 1.17.5 ``action_observation_template`` (truncation at 10,000 chars)."""
    if len(out) < 10000:
        return f"<returncode>{rc}</returncode>\n<output>\n{out}</output>"
    return (
        f"<returncode>{rc}</returncode>\n<warning>\nThe output of your last command was too long.\n"
        "Please try a different command that produces less output.\n"
        "If you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.\n"
        "If you're using grep or find and it produced too much output, you can use a more selective search pattern.\n"
        "If you really need to see something from the full command's output, you can redirect output to a file and then search in that file.\n"
        f"</warning><output_head>\n{out[:5000]}\n</output_head>\n<elided_chars>\n{len(out) - 10000} characters elided\n"
        f"</elided_chars>\n<output_tail>\n{out[-5000:]}\n</output_tail>"
    )


def heredoc_delim(text: str) -> str:
    d = "EOF"
    while d in text:
        d += "_X"
    return d


def python_edit_cmd(path: str, old: str, new: str) -> str:
    return (
        "python3 - <<'PY'\nfrom pathlib import Path\n"
        f"p = Path({path!r})\ns = p.read_text()\nold = {old!r}\nnew = {new!r}\n"
        "assert s.count(old) == 1, s.count(old)\np.write_text(s.replace(old, new))\nPY"
    )


def shell_form(a: Act, rng: random.Random) -> tuple[str, str, int]:
    """(command, output, returncode) of an action when the harness only has a shell."""
    if a.kind == "view":
        if a.start:
            if rng.random() < 0.5:
                return f"sed -n '{a.start},{a.end}p' {a.path}", _sed(a.text, a.start, a.end), 0
            return f"nl -ba {a.path} | sed -n '{a.start},{a.end}p'", cat_n(a.text, a.start, a.end), 0
        return f"cat -n {a.path}", cat_n(a.text), 0
    if a.kind == "create":
        d = heredoc_delim(a.text)
        return f"cat <<'{d}' > {a.path}\n{a.text}{'' if a.text.endswith(chr(10)) else chr(10)}{d}", "", 0
    if a.kind == "edit":
        return python_edit_cmd(a.path, a.old, a.new), "", 0
    if a.kind == "grep":
        return f'grep -rn "{a.cmd}" {a.path}', a.out, 0 if a.out else 1
    if a.kind == "submit":
        return SUBMIT, a.out, 0
    return a.cmd, a.out, a.rc


def _sed(text: str, start: int, end: int) -> str:
    lines = text.split("\n")
    return "\n".join(lines[start - 1 : end]) + "\n"


def render_mini(acts: list[Act], task: str, rng: random.Random, fence: str = "bash") -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": MINI_SYSTEM},
        {"role": "user", "content": MINI_INSTANCE.format(task=task)},
    ]
    carry = ""
    for a in acts:
        if a.kind in ("think", "todo", "memory"):
            carry += a.text + " "
            continue
        cmd, out, rc = shell_form(a, rng)
        msgs.append(
            {"role": "assistant", "content": f"THOUGHT: {carry}{a.thought}\n\n```{fence}\n{cmd}\n```"}
        )
        carry = ""
        if a.kind == "submit":
            # mini-swe ends on Submitted: the final user message is the submission itself
            msgs.append({"role": "user", "content": out.split("\n", 1)[1] if "\n" in out else ""})
        else:
            msgs.append({"role": "user", "content": mini_observation(out, rc)})
    return msgs


# ---------------------------------------------------------------- tool-calling harnesses


def _wrap(cmd: str, root: str, rng: random.Random) -> str:
    """Harness wrappers the converter must peel: bash -lc, cd root &&, timeout."""
    r = rng.random()
    if r < 0.12 and "'" not in cmd and "\n" not in cmd:
        return f"bash -lc '{cmd}'"
    if r < 0.30:
        return f"cd {root} && {cmd}"
    if r < 0.36 and "\n" not in cmd and "&&" not in cmd:
        return f"timeout {rng.choice((30, 60, 120, 600))} {cmd}"
    return cmd


def _snippet(after: str, new: str, arrow: bool) -> str:
    pos = after.find(new)
    line = after.count("\n", 0, max(pos, 0)) + 1
    lo, hi = max(1, line - 4), line + new.count("\n") + 4
    return claude_read(after, lo, hi - lo + 1) if arrow else cat_n(after, lo, hi)


def tool_form(a: Act, harness: str, root: str, rng: random.Random) -> tuple[str, dict[str, Any], str] | None:
    """(tool name, arguments, result text) for one action in a tool harness; None = no call."""
    if a.kind == "unknown":
        return a.tool, a.args, a.out
    after = a.text.replace(a.old, a.new, 1) if a.kind == "edit" else ""
    if harness == "claude_code":
        if a.kind == "view":
            args: dict[str, Any] = {"file_path": a.path}
            if a.start:
                args |= {"offset": a.start, "limit": a.end - a.start + 1}
            return "Read", args, claude_read(a.text, a.start or 1, (a.end - a.start + 1) if a.start else None)
        if a.kind == "edit":
            return (
                "Edit",
                {"file_path": a.path, "old_string": a.old, "new_string": a.new},
                (
                    f"The file {a.path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                    + _snippet(after, a.new, True)
                ),
            )
        if a.kind == "create":
            return (
                "Write",
                {"file_path": a.path, "content": a.text},
                f"File created successfully at: {a.path}",
            )
        if a.kind == "grep":
            return (
                "Grep",
                {"pattern": a.cmd, "path": a.path, "output_mode": "content", "-n": True},
                a.out or "No matches found",
            )
        if a.kind == "todo":
            return (
                "TodoWrite",
                {"todos": a.args["todos"]},
                (
                    "Todos have been modified successfully. Ensure that you continue "
                    "to use the todo list to track your progress. Please proceed "
                    "with the current tasks if applicable"
                ),
            )
        if a.kind == "sh":
            out = a.out if a.rc == 0 else f"Exit code {a.rc}\n{a.out}"
            return "Bash", {"command": _wrap(a.cmd, root, rng), "description": a.thought[:60]}, out
        return None
    if harness == "pi":
        if a.kind == "view":
            args = {"path": a.path}
            if a.start:
                args |= {"offset": a.start, "limit": a.end - a.start + 1}
                return "read", args, _sed(a.text, a.start, a.end)
            return "read", args, a.text
        if a.kind == "edit":
            return (
                "edit",
                {"path": a.path, "oldText": a.old, "newText": a.new},
                f"Successfully replaced text in {a.path}.",
            )
        if a.kind == "create":
            return (
                "write",
                {"path": a.path, "content": a.text},
                f"Successfully wrote {len(a.text.encode())} bytes to {a.path}",
            )
    if harness == "hermes_agent":
        if a.kind == "view" and not a.start:
            return "read_file", {"path": a.path}, cat_n(a.text)
        if a.kind == "edit":
            return (
                "patch",
                {"path": a.path, "old_string": a.old, "new_string": a.new},
                f"Patched {a.path}: 1 replacement",
            )
        if a.kind == "create":
            return (
                "write_file",
                {"path": a.path, "content": a.text},
                f"Wrote {len(a.text.encode())} bytes to {a.path}",
            )
        if a.kind == "todo":
            return "todo", {"todos": a.args["todos"]}, f"Todo list updated ({len(a.args['todos'])} items)"
        if a.kind == "memory":
            return "memory", {"action": "add", "content": a.text}, "Memory saved."
    if harness == "bash" and a.kind == "edit":
        return (
            "edit",
            {"path": a.path, "old_str": a.old, "new_str": a.new},
            f"The file {a.path} has been edited successfully.",
        )
    if a.kind in ("think", "todo", "memory", "submit"):
        return None
    cmd, out, rc = shell_form(a, rng)
    name = {"pi": "bash", "hermes_agent": "terminal"}.get(harness, "bash")
    if rc:
        out = out + (f"\n\nCommand exited with code {rc}" if harness == "pi" else f"\n[exit code: {rc}]")
    return name, {"command": _wrap(cmd, root, rng)}, out


def render_tools(
    acts: list[Act],
    harness: str,
    task: str,
    root: str,
    language: str,
    rng: random.Random,
    final_text: str | None,
) -> list[dict[str, Any]]:
    """OpenAI-style messages with structured tool calls (``role: tool`` results)."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": TOOL_SYSTEM.format(root=root)},
        {"role": "user", "content": TOOL_TASK.format(root=root, language=language, task=task)},
    ]
    carry = ""
    n = 0
    i = 0
    while i < len(acts):
        group = [acts[i]]
        i += 1
        while i < len(acts) and acts[i].parallel:
            group.append(acts[i])
            i += 1
        calls, results = [], []
        text = carry + group[0].thought
        carry = ""
        for a in group:
            form = tool_form(a, harness, root, rng)
            if form is None:
                carry += a.text + " "
                continue
            n += 1
            cid = f"call_{n:02d}_{rng.getrandbits(40):010x}"
            calls.append({"id": cid, "name": form[0], "arguments": form[1]})
            results.append({"role": "tool", "tool_call_id": cid, "name": form[0], "content": form[2]})
        if not calls:
            continue
        msgs.append({"role": "assistant", "content": text, "tool_calls": calls})
        msgs.extend(results)
    if final_text is not None:
        msgs.append({"role": "assistant", "content": carry + final_text})
    return msgs


# ---------------------------------------------------------------- baking into view text


def _args_text(v: Any) -> str:
    return v if isinstance(v, str) else orjson.dumps(v).decode()


def bake_call(name: str, args: dict[str, Any], dialect: str) -> str:
    if dialect == "qwen_json":
        return "<tool_call>\n" + _json_spaced({"name": name, "arguments": args}) + "\n</tool_call>"
    if dialect == "glm":
        parts = "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{_args_text(v)}</arg_value>\n" for k, v in args.items()
        )
        return f"<tool_call>{name}\n{parts}</tool_call>"
    # xml (Qwen3-Coder template): every value on its own lines
    parts = "".join(f"<parameter={k}>\n{_args_text(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{parts}</function>\n</tool_call>"


def _json_spaced(obj: Any) -> str:
    """``json.dumps`` default separators (", ", ": "), as chat templates print tool calls."""
    return json.dumps(obj, ensure_ascii=False)


def tools_block(tools: list[dict[str, Any]], dialect: str) -> str:
    if dialect == "xml":
        body = "\n".join(
            f"<function>\n<name>{t['name']}</name>\n<description>{t['description']}</description>\n<parameters>\n"
            + "".join(
                f"<parameter>\n<name>{k}</name>\n<type>{v['type']}</type>\n</parameter>\n"
                for k, v in t["parameters"]["properties"].items()
            )
            + "</parameters>\n</function>"
            for t in tools
        )
        return (
            "# Tools\n\nYou have access to the following functions:\n\n<tools>\n" + body + "\n</tools>\n\n"
            "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n"
            "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n"
            "</tool_call>"
        )
    lines = "\n".join(_json_spaced({"type": "function", "function": t}) for t in tools)
    if dialect == "glm":
        return (
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            + lines
            + "\n</tools>\n\nFor each function call, output the function name and arguments within the following XML "
            "format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
            "...\n</tool_call>"
        )
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        + lines
        + "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
        "</tool_call>"
    )


def bake_view(msgs: list[dict[str, Any]], dialect: str, tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, content) chain of a view record: only system/user/assistant, all text."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    for m in msgs:
        role = m["role"]
        if role == "tool":
            pending.append(f"<tool_response>\n{m['content']}\n</tool_response>")
            continue
        if pending:
            out.append(("user", "\n".join(pending)))
            pending = []
        if role == "system" and dialect in ("qwen_json", "xml") and tools:
            out.append(("system", m["content"] + "\n\n" + tools_block(tools, dialect)))
        elif role == "system" and dialect == "glm" and tools:
            out.append(("system", m["content"]))
            out.append(("system", tools_block(tools, dialect)))
        elif role == "assistant" and m.get("tool_calls"):
            calls = "\n".join(bake_call(c["name"], c["arguments"], dialect) for c in m["tool_calls"])
            out.append(("assistant", (m["content"].strip() + "\n\n" if m["content"].strip() else "") + calls))
        else:
            out.append((role, m["content"]))
    if pending:
        out.append(("user", "\n".join(pending)))
    return out


def trace_nodes(msgs: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """Trace v1 nodes with structured tool calls, in both shapes Affine accepts."""
    nested = rng.random() < 0.5  # {id, type, function: {name, arguments}} vs {id, name, arguments}
    as_string = rng.random() < 0.7  # arguments as a JSON string (OpenAI) or an object
    parts = rng.random() < 0.2  # tool content as a list of {type: text} parts
    nodes: list[dict[str, Any]] = []
    for i, m in enumerate(msgs):
        msg: dict[str, Any] = {"role": m["role"], "content": m["content"]}
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                args: Any = _json_spaced(c["arguments"]) if as_string else c["arguments"]
                if nested:
                    calls.append(
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": args},
                        }
                    )
                else:
                    calls.append({"id": c["id"], "name": c["name"], "arguments": args})
            msg["tool_calls"] = calls
        if m["role"] == "tool":
            msg["tool_call_id"] = m["tool_call_id"]
            msg["name"] = m["name"]
            if parts:
                msg["content"] = [{"type": "text", "text": m["content"]}]
        nodes.append({"message": msg, "sampled": m["role"] == "assistant", "parent": i - 1 if i else None})
    return nodes


# ---------------------------------------------------------------- OpenHands (SWE-Lego)

OH_SYSTEM = """You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve tasks.

You have access to the following functions:

---- BEGIN FUNCTION #1: execute_bash ----
Description: Execute a bash command in the terminal within a persistent shell session.
Parameters:
  (1) command (string, required): The bash command to execute.
  (2) is_input (string, optional): If True, the command is an input to the running process.
  (3) timeout (number, optional): Optional. Sets a hard timeout in seconds for the command execution.
---- END FUNCTION #1 ----

---- BEGIN FUNCTION #2: think ----
Description: Use the tool to think about something. It will not obtain new information or make any changes to the repository.
Parameters:
  (1) thought (string, required): The thought to log.
---- END FUNCTION #2 ----

---- BEGIN FUNCTION #3: finish ----
Description: Signals the completion of the current task or conversation.
Parameters:
  (1) message (string, required): Final message to send to the user
---- END FUNCTION #3 ----

---- BEGIN FUNCTION #4: str_replace_editor ----
Description: Custom editing tool for viewing, creating and editing files in plain-text format
Parameters:
  (1) command (string, required): The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`.
  (2) path (string, required): Absolute path to file or directory.
  (3) file_text (string, optional): Required parameter of `create` command.
  (4) old_str (string, optional): Required parameter of `str_replace` command.
  (5) new_str (string, optional): Parameter of `str_replace` / `insert` command.
  (6) insert_line (integer, optional): Required parameter of `insert` command.
  (7) view_range (array, optional): Line range to show when viewing a file.
---- END FUNCTION #4 ----

If you choose to call a function ONLY reply in the following format with NO suffix:

<function=example_function_name>
<parameter=example_parameter_1>value_1</parameter>
<parameter=example_parameter_2>
This is the value for the second parameter
that can span
multiple lines
</parameter>
</function>"""

OH_TASK = (
    "<uploaded_files>\n{root}\n</uploaded_files>\n\nI've uploaded a python code repository in the directory {root}. "
    "Consider the following PR description:\n\n<pr_description>\n{task}\n</pr_description>\n\n"
    "Can you help me implement the necessary changes to the repository so that the requirements specified in the "
    "<pr_description> are met?\nI've already taken care of all changes to any of the test files described in the "
    "<pr_description>. This means you DON'T have to modify the testing logic or any of the tests in any way!"
)


def _oh_call(name: str, params: list[tuple[str, str]]) -> str:
    body = "".join(
        f"<parameter={k}>\n{v}\n</parameter>\n"
        if "\n" in v or k in ("old_str", "new_str", "file_text")
        else f"<parameter={k}>{v}</parameter>\n"
        for k, v in params
    )
    return f"<function={name}>\n{body}</function>"


def render_openhands(
    acts: list[Act], task: str, root: str, rng: random.Random, finish: str | None
) -> list[dict[str, str]]:
    msgs = [
        {"role": "system", "content": OH_SYSTEM},
        {"role": "user", "content": OH_TASK.format(root=root, task=task)},
    ]
    for a in acts:
        if a.kind in ("think", "todo", "memory"):
            call, res = (
                _oh_call("think", [("thought", a.text)]),
                "EXECUTION RESULT of [think]:\nYour thought has been logged.",
            )
        elif a.kind == "view":
            params = [("command", "view"), ("path", a.path)]
            if a.start:
                params.append(("view_range", f"[{a.start}, {a.end}]"))
            call = _oh_call("str_replace_editor", params)
            res = (
                f"EXECUTION RESULT of [str_replace_editor]:\nHere's the result of running `cat -n` on {a.path}:\n"
                + cat_n(a.text, a.start or 1, a.end or None)
            )
        elif a.kind == "create":
            call = _oh_call(
                "str_replace_editor",
                [("command", "create"), ("path", a.path), ("file_text", a.text.rstrip("\n"))],
            )
            res = f"EXECUTION RESULT of [str_replace_editor]:\nFile created successfully at: {a.path}"
        elif a.kind == "edit" and a.args.get("insert_line"):
            line = int(a.args["insert_line"])
            call = _oh_call(
                "str_replace_editor",
                [
                    ("command", "insert"),
                    ("path", a.path),
                    ("insert_line", str(line)),
                    ("new_str", a.args["insert_text"]),
                ],
            )
            after = a.text.replace(a.old, a.new, 1)
            res = (
                "EXECUTION RESULT of [str_replace_editor]:\nThe file "
                + a.path
                + " has been edited. Here's the result of "
                "running `cat -n` on a snippet of the edited file:\n"
                + cat_n(after, max(1, line - 3), line + 5)
                + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
                "Edit the file again if necessary."
            )
        elif a.kind == "edit":
            call = _oh_call(
                "str_replace_editor",
                [("command", "str_replace"), ("path", a.path), ("old_str", a.old), ("new_str", a.new)],
            )
            after = a.text.replace(a.old, a.new, 1)
            res = (
                f"EXECUTION RESULT of [str_replace_editor]:\nThe file {a.path} has been edited. Here's the result of "
                f"running `cat -n` on a snippet of {a.path}:\n"
                + _snippet(after, a.new, False)
                + "Review the changes and make sure they are as expected. Edit the file again if necessary."
            )
        elif a.kind == "submit":
            continue
        else:
            cmd, out, rc = shell_form(a, rng)
            call = _oh_call("execute_bash", [("command", cmd)])
            res = f"EXECUTION RESULT of [execute_bash]:\n{out}\n[Command finished with exit code {rc}]"
        msgs.append({"role": "assistant", "content": (a.thought + "\n\n" if a.thought else "") + call})
        msgs.append({"role": "user", "content": res})
    if finish is not None:
        msgs.append({"role": "assistant", "content": _oh_call("finish", [("message", finish)])})
    return msgs
