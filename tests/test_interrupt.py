"""Ctrl-C during `trajpipe run`: one line says it is stopping, the run ends promptly with exit 130 and
no traceback, and running it again finishes the build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipeline.devkit.synth.corpus import synth


def test_ctrl_c_says_it_is_stopping_and_a_rerun_finishes(tmp_path: Path) -> None:
    synth(tmp_path / "c", runs=60, epochs=2, seed=2)
    cmd = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "run",
        "--affine",
        str(tmp_path / "c" / "affine"),
        "--swelego",
        str(tmp_path / "c" / "swelego"),
        "--no-benchmarks",
        "--workdir",
        str(tmp_path / "w"),
        "--workers",
        "2",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # a terminal's Ctrl-C reaches the whole process group: the driver and its workers
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # wait until the first unit is done, so the work is under way
        lines.append(line)
        if line.startswith("[ingest"):
            break
    os.killpg(proc.pid, signal.SIGINT)
    start = time.monotonic()
    rest = proc.stderr.read()
    code = proc.wait(timeout=60)
    stopped_after = time.monotonic() - start
    err = "".join(lines) + rest
    assert code == 130, err
    assert "Traceback" not in err
    assert "stopping: waiting for the workers to let go (finished units are kept) …" in rest
    assert rest.rstrip().endswith(
        "stopped: interrupted (finished units are kept; run the same command again to resume)"
    )
    # the remaining units are not worked through before exiting (a generous bound: no timing margin)
    assert stopped_after < 30
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ingested" in done.stderr and "quarantined" in done.stderr
