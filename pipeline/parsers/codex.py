"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (the session's id and
``cwd``), ``turn_context`` (the model), ``response_item`` (what the model saw and said: messages,
``function_call``/``custom_tool_call``/``local_shell_call`` and their outputs, encrypted
``reasoning``), ``event_msg`` (the UI's copy of the same, not read). Rollouts before the
wrapper (one item a line, a first line with the session's ``id``) are read the same way.

* Human messages are the ``user`` messages that are not the harness's own preamble
  (``<environment_context>``, ``<user_instructions>``, AGENTS.md instructions, permission notes);
  the second one ends the run (``parse/second_prompt_cut``, see ``pipeline.parsers.sessions``).
* Shell tools (``exec_command``, ``shell``, ``shell_command``, ``local_shell_call``) keep their
  arguments; their output's wrapping is read here: unified exec's ``Chunk ID … Process exited
  with code N … Output:``, ``Exit code: N … Output:``, and the older JSON ``{"output",
  "metadata": {"exit_code"}}``. The code is the record's; an output in none of these shapes is
  kept as it is, with no code (the converter then needs a measured rule or the run is dropped).
* A unified-exec process still running after its call (``Process running with session ID S``)
  is read on by ``write_stdin`` polls with no input: the polls' outputs are the command's, in
  order, and its code the one the last poll reports; the polls are not turns. Input written to
  it (``chars``) is interactive (``parse/interactive_input``); another call made while it runs,
  or a process that never reports its exit, is a background job no one-shot command is
  (``parse/background_process``).
* An output Codex shortened for the model (``[... omitted N of M lines ...]``, ``…N tokens
  truncated…``) is ``parse/elided_output``.
* ``apply_patch`` (the tool, or a shell ``apply_patch <<'EOF'`` heredoc Codex intercepts) keeps
  its patch text and the working directory its paths are relative to.
* A call the person declined at Codex's approval prompt (``exec command rejected by user``)
  never ran; the decline is their turn and ends the run.
* ``web_search_call`` results are shown to the model but no command prints them:
  ``parse/unsupported_tool``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pipeline.core.episode import Episode, ParseError, RawRun, ToolCall
from pipeline.parsers.fields import opt_str
from pipeline.parsers.format import Format
from pipeline.parsers.messages import Msg
from pipeline.parsers.sessions import (
    cut_at_second_prompt,
    never_a_record,
    require_task,
    session_episode,
    session_events,
)

_PREAMBLE = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
)
_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "reasoning",
        "web_search_call",
    }
)
SHELL_CALLS = frozenset({"exec_command", "shell", "shell_command", "local_shell"})
_UNIFIED = re.compile(
    r"\AChunk ID: [^\n]*\nWall time: [^\n]*\n"
    r"(?:Process exited with code (-?\d+)|Process running with session ID (\d+))\n"
    r"(?:Original token count: \d+\n)?Output:\n(.*)\Z",
    re.S,
)
_EXIT_WRAP = re.compile(
    r"\AExit code: (-?\d+)\nWall time: [^\n]*\n(?:Total output lines: \d+\n)?Output:\n(.*)\Z", re.S
)
_ELIDED = re.compile(r"\[\.\.\. omitted \d+ of \d+ lines \.\.\.\]|\u2026\d+ tokens truncated\u2026")
# Codex's result for a call the person declined at its approval prompt
_REJECTED = ("exec command rejected by user", "patch rejected by user")
_ENV_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")
_PATCH_HEREDOC = re.compile(r"\A\s*apply_patch\s+<<-?\s*['\"]?(\w+)['\"]?\n(.*?)\n\1\s*\Z", re.S)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(c.get("text", ""))
            for c in content
            if isinstance(c, dict) and c.get("type") in ("input_text", "output_text", "text")
        )
    return ""


def read_output(output: Any) -> tuple[str, int | None, str | None]:
    """(what the command printed, its code or None, the session id of a process still running)."""
    if isinstance(output, dict):
        body = output.get("content", output.get("output", ""))
        text = body if isinstance(body, str) else _text(body)
    else:
        text = str(output)
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("output"), str):
            meta = doc.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            text = doc["output"]
            if isinstance(code, int) and not isinstance(code, bool):
                return _checked(text), code, None
            return _checked(text), None, None
    m = _UNIFIED.match(text)
    if m:
        return _checked(m.group(3)), int(m.group(1)) if m.group(1) else None, m.group(2)
    m = _EXIT_WRAP.match(text)
    if m:
        return _checked(m.group(2)), int(m.group(1)), None
    return _checked(text), None, None


def _checked(text: str) -> str:
    if _ELIDED.search(text):
        raise ParseError("elided_output", "Codex shortened an output for the model")
    return text


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        doc = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        raise ParseError("bad_arguments", f"tool arguments are not JSON: {str(raw)[:80]}") from None
    if not isinstance(doc, dict):
        raise ParseError("bad_arguments", f"tool arguments are not an object: {str(raw)[:80]}")
    return doc


def _shell_text(args: dict[str, Any]) -> str:
    cmd = args.get("cmd", args.get("command"))
    if isinstance(cmd, list):
        words = [str(w) for w in cmd]
        return words[2] if len(words) == 3 and words[1] in ("-lc", "-c") else " ".join(words)
    return str(cmd or "")


def _call(name: str, args: dict[str, Any], call_id: str | None, cwd: str) -> ToolCall:
    """The call as the converters read it: Codex's names kept, an intercepted shell
    ``apply_patch`` heredoc made the ``apply_patch`` tool, a patch given its working directory."""
    if name in SHELL_CALLS:
        m = _PATCH_HEREDOC.match(_shell_text(args))
        if m:
            return ToolCall(
                "apply_patch", {"input": m.group(2) + "\n", "workdir": args.get("workdir") or cwd}, call_id
            )
    if name == "apply_patch":
        patch = args.get("input", args.get("patch"))
        return ToolCall("apply_patch", {"input": patch, "workdir": args.get("workdir") or cwd}, call_id)
    return ToolCall(name, args, call_id)


class _Reader:
    """The rollout's items in order → messages (see the module's rules)."""

    def __init__(self, source_uid: str) -> None:
        self.uid = source_uid
        self.msgs: list[Msg] = []
        self.humans: list[str] = []
        self.cwd = ""
        self.model = ""
        self.session_id = ""
        self.counters: Counter[str] = Counter()
        self.running: dict[str, int] = {}  # unified-exec session id -> index of its result in msgs
        self.poll_ids: set[str] = set()  # the call ids of write_stdin polls
        self.env_cwd = ""  # the cwd the harness's environment preamble names
        self.done = False  # the person spoke again: the run ended there

    def meta(self, kind: str, p: dict[str, Any]) -> None:
        if kind == "session_meta":
            self.session_id = self.session_id or opt_str(p.get("id")) or ""
            self.cwd = self.cwd or opt_str(p.get("cwd")) or ""
        elif kind == "turn_context":
            self.model = self.model or opt_str(p.get("model")) or ""
            self.cwd = self.cwd or opt_str(p.get("cwd")) or ""

    def _assistant(self) -> Msg:
        if not self.msgs or self.msgs[-1].role != "assistant":
            self.msgs.append(Msg("assistant", ""))
        return self.msgs[-1]

    def _new_call(self, call: ToolCall) -> None:
        if self.running:
            raise ParseError("background_process", f"{self.uid}: {call.name} while a process runs")
        self._assistant().tool_calls.append(call)

    def item(self, p: dict[str, Any]) -> None:
        kind = p.get("type")
        if kind == "message":
            role, text = p.get("role"), _text(p.get("content")).strip()
            if role == "assistant" and text:
                if self.msgs and self.msgs[-1].role == "assistant" and not self.msgs[-1].tool_calls:
                    self.msgs[-1].text = "\n\n".join(t for t in (self.msgs[-1].text, text) if t)
                else:
                    self.msgs.append(Msg("assistant", text))
            elif role == "user" and text.startswith("<environment_context>"):
                found = _ENV_CWD.search(text)
                self.env_cwd = self.env_cwd or (found.group(1) if found else "")
            elif role == "user" and text and not text.startswith(_PREAMBLE):
                self.humans.append(text)
                if len(self.humans) > 1:
                    cut_at_second_prompt(self.msgs, self.counters)
                    self.done = True
                    return
                self.msgs.append(Msg("user", text))
            return
        if kind in ("function_call", "custom_tool_call"):
            name = str(p.get("name"))
            call_id = opt_str(p.get("call_id"))
            raw_args = p.get("arguments") if kind == "function_call" else {"input": p.get("input")}
            args = _args(raw_args)
            if name == "write_stdin":
                self._poll(args, call_id)
                return
            self._new_call(_call(name, args, call_id, self.cwd))
            return
        if kind == "local_shell_call":
            found = p.get("action")
            action: dict[str, Any] = found if isinstance(found, dict) else {}
            args = {"command": action.get("command"), "workdir": action.get("working_directory")}
            self._new_call(_call("local_shell", args, opt_str(p.get("call_id")), self.cwd))
            return
        if kind in ("function_call_output", "custom_tool_call_output"):
            self._output(p)
            return
        if kind == "web_search_call":
            raise ParseError("unsupported_tool", f"{self.uid}: web_search (its results no command prints)")

    def _poll(self, args: dict[str, Any], call_id: str | None) -> None:
        sid = str(args.get("session_id"))
        if args.get("chars"):
            raise ParseError("interactive_input", f"{self.uid}: input written to process {sid}")
        if sid not in self.running:
            raise ParseError("background_process", f"{self.uid}: a poll of process {sid}, not running")
        if call_id:
            self.poll_ids.add(call_id)
        self.counters["parse/codex_poll_merged"] += 1

    def _output(self, p: dict[str, Any]) -> None:
        call_id = opt_str(p.get("call_id"))
        out, code, running = read_output(p.get("output"))
        if out.strip().startswith(_REJECTED):
            # the person declined the call at Codex's approval prompt: it never ran, and their
            # answer is their turn, which ends the run
            self.humans.append("[a call declined]")
            cut_at_second_prompt(self.msgs, self.counters)
            self.done = True
            return
        if call_id is not None and call_id in self.poll_ids:
            sid = next(iter(self.running))
            target = self.msgs[self.running[sid]]
            target.text += out
            if running is None:
                target.returncode = code
                del self.running[sid]
            return
        self.msgs.append(Msg("tool", out, tool_call_id=call_id, returncode=code))
        if running is not None:
            self.running[running] = len(self.msgs) - 1


def parse_codex(raw: RawRun) -> Episode:
    reader = _Reader(raw.source_uid)
    for e in session_events(raw):
        if reader.done:
            break
        kind = e.get("type")
        payload = e.get("payload")
        if kind in ("session_meta", "turn_context") and isinstance(payload, dict):
            reader.meta(kind, payload)
        elif kind == "response_item" and isinstance(payload, dict):
            reader.item(payload)
        elif payload is None and kind in _ITEM_TYPES:
            reader.item(e)  # a rollout before the wrapper: the item is the line
        elif payload is None and "instructions" in e and isinstance(e.get("id"), str):
            reader.session_id = reader.session_id or e["id"]
    if reader.running:
        raise ParseError("background_process", f"{raw.source_uid}: a process never reported its exit")
    require_task(reader.humans, raw.source_uid)
    reader.cwd = reader.cwd or reader.env_cwd
    return session_episode(
        raw,
        reader.msgs,
        session_id=reader.session_id,
        cwd=reader.cwd,
        harness="codex",
        model=reader.model,
        counters=reader.counters,
    )


def _is_codex_session(head: list[Any]) -> bool:
    """Lines of a Codex rollout: a ``session_meta`` line, or ``response_item`` lines."""
    for e in head:
        if not isinstance(e, dict):
            continue
        if e.get("type") == "session_meta" and isinstance(e.get("payload"), dict):
            return True
        if e.get("type") == "response_item" and isinstance(e.get("payload"), dict):
            return True
    return False


FORMAT = Format(
    kind="codex",
    parse=parse_codex,
    harness="codex",
    machines={"codex": ("codex", "Codex CLI (its shell tool `exec_command`/`shell` and `apply_patch`)")},
    name="Codex CLI rollout",
    detect=never_a_record,
    session=_is_codex_session,
)
