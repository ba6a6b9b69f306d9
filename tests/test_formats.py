"""One ``Format`` record per input format: the registry is the only list of formats."""

from __future__ import annotations

import importlib
import pkgutil

import pipeline.parsers as parsers
from pipeline.core.episode import RawRun
from pipeline.parsers import FORMATS, MACHINES, PARSERS, harness_of, machine_of
from pipeline.parsers.files import detect_format
from pipeline.stages.rows import dataset_of


def test_every_parser_module_with_a_format_is_registered_once() -> None:
    declared = []
    for mod in pkgutil.iter_modules(parsers.__path__):
        m = importlib.import_module(f"pipeline.parsers.{mod.name}")
        if hasattr(m, "FORMAT"):
            declared.append(m.FORMAT)
    assert sorted(f.kind for f in declared) == sorted(f.kind for f in FORMATS)
    assert len({f.kind for f in FORMATS}) == len(FORMATS)
    assert set(PARSERS) == {f.kind for f in FORMATS}


def test_machines_agree_and_every_fixed_harness_has_one() -> None:
    for f in FORMATS:
        for harness, machine in f.machines.items():
            assert MACHINES[harness] == machine, f"{f.kind} redefines the machine of {harness}"
        if isinstance(f.harness, str):
            assert f.harness in f.machines, f.kind


def test_a_run_of_each_file_format_is_detected_and_named_by_its_record() -> None:
    runs = {
        "SWE-agent": {"history": [{"role": "system", "content": "x"}], "info": {}},
        "OpenHands": [{"action": "run", "args": {"command": "ls"}}],
        "SWE-smith": {"instance_id": "a__b.1234abcd.pr_1", "messages": [{"role": "user", "content": "x"}]},
        "mini-swe-agent": {
            "trajectory_format": "mini-swe-agent-1",
            "instance_id": "a__b-1",
            "messages": [{"role": "user", "content": "x"}],
        },
        "Affine corpus": {"view": "duel_turns@v4", "nodes": [], "policy": {"harness": "pi"}},
        "Affine trace": {"trace": {}, "task": {}, "policy": {"harness": "claude_code"}},
    }
    datasets = {}
    for name, obj in runs.items():
        assert detect_format(obj) == name
        fmt = next(f for f in FORMATS if f.name == name)
        payload = obj if isinstance(obj, dict) else {fmt.list_key: obj}
        raw = RawRun("u", fmt.origin or name, fmt.kind, None, payload, 0)
        datasets[name] = dataset_of(raw)
        assert machine_of(harness_of(raw)) in datasets[name]
    assert datasets == {
        "SWE-agent": "mini-coder-swe-agent-swe-agent",
        "OpenHands": "mini-coder-openhands-openhands",
        "SWE-smith": "mini-coder-swe-smith-swe-smith",
        "mini-swe-agent": "mini-coder-mini-swe-agent-mini-swe-agent",
        "Affine corpus": "mini-coder-affine-pi",
        "Affine trace": "mini-coder-affine-claude-code",
    }
