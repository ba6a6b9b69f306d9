"""Our rendering and parsing agree with the real mini-swe-agent 1.17.5 on every turn."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_GLOBAL_CONFIG_DIR", tempfile.mkdtemp(prefix="mswea-"))

jinja2 = pytest.importorskip("jinja2")
yaml = pytest.importorskip("yaml")
mini_config = pytest.importorskip("minisweagent.config")
mini_agent = pytest.importorskip("minisweagent.agents.default")

from pipeline.convert import convert_episode  # noqa: E402
from pipeline.convert.render import (  # noqa: E402
    ACTION_REGEX,
    render_instance,
    render_observation,
    render_system,
)
from pipeline.core.episode import Bash, Episode, Meta, Step, Task, ToolCall  # noqa: E402

CFG: dict[str, Any] = yaml.safe_load(mini_config.get_config_path("swebench").read_text())["agent"]


def jinja(template: str, **kwargs: Any) -> str:
    return jinja2.Template(template, undefined=jinja2.StrictUndefined).render(**kwargs)


def real_agent() -> Any:
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel

    return mini_agent.DefaultAgent(DeterministicModel(outputs=[]), LocalEnvironment(), **CFG)


def test_templates_match_the_package() -> None:
    task = "Fix {{ this }} and {% that %}\nin `x`"
    assert render_system() == jinja(CFG["system_template"])
    assert render_instance(task) == jinja(CFG["instance_template"], task=task)
    assert mini_agent.AgentConfig(**CFG).action_regex == ACTION_REGEX


@pytest.mark.parametrize(
    "output",
    [
        "",
        "hello",
        "hello\n",
        "x" * 9999,
        "x" * 10000,
        "A" * 4999 + "B" + "MMC" + "Z" * 4999 + "\n",
        "é\n" * 6000,
    ],
)
@pytest.mark.parametrize("rc", [0, 1, -9])
def test_observations_match_the_package(output: str, rc: int) -> None:
    real = jinja(CFG["action_observation_template"], output={"output": output, "returncode": rc})
    assert render_observation(output, rc) == real


def every_tool_episode() -> Episode:
    """One run using each tool family, with awkward content."""
    task = Task("o__r.1234abcd.pr_7", "o__r", "Make `f` return 2.\n```py\nf()\n```", "swesmith", "python")
    meta = Meta("Affine corpus", "bash", "m", "uid", "xml", repo_root="/workspace/r")
    steps = [
        Step("Look around", ToolCall("bash", {"command": "ls /workspace/r", "timeout": 30}), "a.py\n", 0),
        Step("", ToolCall("think", {"thought": "The bug is in f"}), "", None),
        Step(
            "Read it",
            ToolCall("Read", {"file_path": "/workspace/r/a.py"}),
            "     1\u2192def f():\n     2\u2192    return 1\n",
            None,
        ),
        Step(
            "Edit",
            ToolCall(
                "Edit",
                {
                    "file_path": "/workspace/r/a.py",
                    "old_string": "return 1",
                    "new_string": "return 2  # `x` $HOME \\n",
                },
            ),
            "Updated a.py",
            None,
        ),
        Step(
            "Docs",
            ToolCall(
                "str_replace_editor",
                {
                    "command": "create",
                    "path": "/workspace/r/README.md",
                    "file_text": "# T\n```bash\nrun\n```\n",
                },
            ),
            "File created successfully at: /testbed/README.md",
            None,
        ),
        Step(
            "View",
            ToolCall("str_replace_editor", {"command": "view", "path": "/workspace/r/a.py"}),
            "Here's the result of running `cat -n` on /workspace/r/a.py:\n     1\tdef f():\n     2\t"
            "    return 2\n     3\t\n",
            None,
        ),
        Step("Run", Bash("python -c 'import a; print(a.f())'"), "x" * 12000, 0),
        Step("Done", ToolCall("submit", {}), "diff --git a/a.py b/a.py\n+    return 2\n", None),
    ]
    return Episode(task, meta, steps)


def test_every_turn_agrees_with_the_real_agent() -> None:
    ep = every_tool_episode()
    conv = convert_episode(ep)
    agent = real_agent()
    msgs = conv.messages
    assert msgs[0]["content"] == jinja(CFG["system_template"])
    assert msgs[1]["content"] == jinja(CFG["instance_template"], task=ep.task.problem_statement)
    for t, cmd in enumerate(conv.commands):
        assistant, reply = msgs[2 + 2 * t], msgs[3 + 2 * t]
        assert agent.parse_action({"content": assistant["content"]})["action"] == cmd
        if t < len(conv.commands) - 1:
            real = jinja(
                CFG["action_observation_template"],
                output={"output": conv.outputs[t], "returncode": conv.returncodes[t]},
            )
            assert reply["content"] == real
    # the submit turn: the real agent's has_finished yields exactly our final message
    with pytest.raises(mini_agent.Submitted) as done:
        agent.has_finished({"output": conv.outputs[-1], "returncode": conv.returncodes[-1]})
    assert str(done.value) == msgs[-1]["content"] == "diff --git a/a.py b/a.py\n+    return 2\n"
    assert conv.submitted


def test_no_observation_would_stop_the_real_agent_early() -> None:
    conv = convert_episode(every_tool_episode())
    agent = real_agent()
    for out, rc in zip(conv.outputs[:-1], conv.returncodes[:-1], strict=True):
        agent.has_finished({"output": out, "returncode": rc})  # raises Submitted if wrong


def test_an_observation_mini_already_truncated_is_not_truncated_again() -> None:
    from pipeline.convert.render import is_truncated_render, render_observation

    once = render_observation("A" * 6000 + "B" * 6000, 0)
    body = once.split("\n", 1)[1]  # what a mini-swe run recorded after its return code
    assert is_truncated_render(body)
    assert render_observation(body, 0) == once
    assert render_observation(body, 0).count("<warning>") == 1
    # plain text that merely mentions the tag is rendered normally
    assert (
        render_observation("<warning> not mini's\n", 1)
        == "<returncode>1</returncode>\n<output>\n<warning> not mini's\n</output>"
    )


@pytest.mark.parametrize(
    "output", ["", "partial\n", "x" * 9999, "A" * 5000 + "MID" + "Z" * 5000, "é\n" * 6000]
)
def test_timeout_message_matches_the_package(output: str) -> None:
    from pipeline.convert.render import render_timeout

    template = mini_agent.AgentConfig(**CFG).timeout_template
    cmd = "sleep 100 && echo '{{x}}'"
    assert render_timeout(cmd, output) == jinja(template, action={"action": cmd}, output=output)


def test_timeout_message_is_what_the_real_agent_says() -> None:
    from minisweagent.agents.default import ExecutionTimeoutError
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel

    from pipeline.convert.render import render_timeout

    agent = mini_agent.DefaultAgent(DeterministicModel(outputs=[]), LocalEnvironment(timeout=1), **CFG)
    cmd = "echo partial; sleep 5"
    with pytest.raises(ExecutionTimeoutError) as err:
        agent.execute_action({"action": cmd})
    assert str(err.value) == render_timeout(cmd, "partial\n")
