"""``trajpipe audit --html`` is a page people open in a browser, so it is checked in one.

Headless Chromium (Debian's ``chromium``) loads the report in a 1280-pixel window: the page logs no
console error and nothing in it is wider than the window. Where Chromium is missing, the test
installs it with apt-get when it runs as root; otherwise it is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.report.audit import build_report, write_html
from tests.test_audit import workdir  # noqa: F401 - the fixture: a finished build with two datasets

WIDTH = 1280
# appended to a copy of the page: records errors and measures the layout once the page has loaded
PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
window.addEventListener('load', () => {
  const root = document.documentElement;
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.id !== 'probe' && e.getBoundingClientRect().right > root.clientWidth + 0.5)
    .map(e => e.tagName.toLowerCase() + ':' + Math.round(e.getBoundingClientRect().right));
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, wide,
                                    errors: window.__errors});
  document.body.appendChild(out);
});
</script>"""


def _chromium() -> str:
    """The Chromium binary, installed with apt-get if missing and possible; else the test is skipped."""
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    found = next((shutil.which(n) for n in names if shutil.which(n)), None)
    if found:
        return found
    if shutil.which("apt-get") is None:
        pytest.skip(
            "Chromium is not installed and this system has no apt-get to install it "
            "(install Debian's `chromium` package to run this test)"
        )
    if os.geteuid() != 0:
        pytest.skip(
            "Chromium is not installed and installing it needs root "
            "(run `sudo apt-get install chromium` to run this test)"
        )
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-q", "chromium"],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
    found = shutil.which("chromium")
    if not found:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        pytest.skip(f"Chromium is not installed and `apt-get install chromium` failed: {last[0]}")
    return found


def load_in_chromium(page: Path, tmp: Path) -> tuple[dict, list[str]]:
    """Open ``page`` (with the probe) in a 1280-pixel headless window: the probe's findings and the
    console messages Chromium logged."""
    probed = tmp / f"probed-{page.name}"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    proc = subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--window-size={WIDTH},900",
            "--virtual-time-budget=5000",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={tmp / 'profile'}",
            "--dump-dom",
            probed.as_uri(),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"Chromium did not render the page: {proc.stderr[-2000:]}"
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(
        m[1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    ), console


def test_report_has_no_console_errors_and_fits_a_1280_pixel_window(workdir: Path, tmp_path: Path) -> None:  # noqa: F811
    page = tmp_path / "audit.html"
    write_html(build_report(workdir), page)
    probe, console = load_in_chromium(page, tmp_path)
    assert probe["errors"] == [] and console == []
    assert probe["clientWidth"] == WIDTH
    assert probe["wide"] == [] and probe["scrollWidth"] <= WIDTH


def test_the_browser_check_sees_errors_and_overflow(tmp_path: Path) -> None:
    """The same check on a page that logs an error and is too wide fails: the test above can fail."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><table><tr><td style='white-space:nowrap'>"
        + "x" * 400
        + "</td></tr></table><script>console.error('boom'); undefinedCall();</script>"
        "</body></html>"
    )
    probe, console = load_in_chromium(page, tmp_path)
    assert probe["scrollWidth"] > WIDTH and probe["wide"]
    assert any("boom" in line for line in console) and any("undefinedCall" in line for line in console)
