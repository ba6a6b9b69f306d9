"""mini-swe-agent records what a run submitted: ``info.exit_status == "Submitted"`` and
``info.submission``. The parser passes it on as ``Meta.submission`` (the verify step holds the
final message to it); a record that does not say it submitted gives None."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipeline.core.episode import RawRun
from pipeline.parsers import parse_raw

REAL = Path(__file__).parent / "fixtures" / "real"


def _parse(payload: dict[str, Any]) -> Any:
    return parse_raw(RawRun("u#row=0", "mini-swe-agent", "miniswe", None, payload, 0))


def test_a_real_submitted_run_carries_its_recorded_patch_which_its_last_output_is() -> None:
    payload = orjson.loads((REAL / "mini-v1-gemini3-psf__requests-2317.traj.json").read_bytes())
    ep = _parse(payload)
    assert payload["info"]["exit_status"] == "Submitted"
    assert ep.meta.submission == payload["info"]["submission"] == ep.steps[-1].observation
    assert ep.meta.submission.startswith("diff --git")


def test_a_run_the_record_does_not_call_submitted_has_no_submission() -> None:
    payload = orjson.loads((REAL / "mini-v1-gemini3-psf__requests-2317.traj.json").read_bytes())
    payload["info"] = {**payload["info"], "exit_status": "LimitsExceeded"}
    assert _parse(payload).meta.submission is None
    del payload["info"]["exit_status"]
    assert _parse(payload).meta.submission is None
