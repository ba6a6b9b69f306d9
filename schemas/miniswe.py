"""mini-swe-agent's v1 text format: every constant the output is rendered with and checked against.

The values are mini-swe-agent 1.17.5's (``extra/swebench.yaml`` and ``DefaultAgent``);
tests/test_render.py checks them against the real package. Renderer (``pipeline.convert.render``),
parsers, leak rules, validator and dedup keys all read them from here.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

# AgentConfig.action_regex (mini-swe-agent >= 1.12): the command is the body of the one ```bash fence
ACTION_REGEX = r"```bash\s*\n(.*?)\n```"
ACTION_RE = re.compile(ACTION_REGEX, re.DOTALL)
# the same pattern for polars' (Rust) regex engine, with the DOTALL flag inline
ACTION_REGEX_POLARS = ACTION_REGEX.replace("(.*?)", "(?s:(.*?))")
# a whole ```bash block (the action with its fences), for removing blocks from a message
BLOCK_RE = re.compile(ACTION_REGEX.replace("(.*?)", ".*?"), re.DOTALL)

# the first output line that ends a run (has_finished); the first is the one the submit prints
SENTINELS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
SUBMIT_SENTINEL = SENTINELS[0]
# what input runs may end with: also pre-1.0 mini-swe-agent's sentinels (micro- and nano-swe-agent)
INPUT_SENTINELS = (*SENTINELS, "MICRO_SWE_AGENT_FINAL_OUTPUT", "NANO_SWE_AGENT_FINAL_OUTPUT")
SUBMIT_COMMAND = f"echo {SUBMIT_SENTINEL} && git add -A && git diff --cached"

TRUNCATE_AT = 10_000  # output rendered whole when len(output) < 10000 characters
TRUNCATION_WARNING = (
    "<warning>\n"
    "The output of your last command was too long.\n"
    "Please try a different command that produces less output.\n"
    "If you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.\n"
    "If you're using grep or find and it produced too much output, you can use a more selective search pattern.\n"
    "If you really need to see something from the full command's output, you can redirect output to a file and then search in that file.\n"
    "</warning>"
)

# the project's mini-coder system prompt and task template (jinja2 text, `{{task}}` substituted)
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SYSTEM_TEMPLATE = "system.txt"
INSTANCE_TEMPLATE = "instance.txt"


@cache
def template(name: str) -> str:
    """A template's text as jinja2 renders it (keep_trailing_newline=False drops one newline)."""
    text = (PROMPTS_DIR / name).read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text
