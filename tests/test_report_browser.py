"""The HTML report as a person sees it: rendered by headless Chromium, screenshot kept."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from ragjudge.report.build import build_report, write_report
from tests.test_report_render import _runs

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_html_report_renders_verdict_table_and_every_plot(tmp_path):
    base, cur = _runs()
    html = write_report(build_report(cur, base), tmp_path / "out", ["html"])["html"]
    url = html.resolve().as_uri()

    dom = _chromium(tmp_path, "--dump-dom", url).stdout
    assert 'id="verdict-table"' in dom and "faithfulness" in dom
    assert "REGRESSED" in dom
    assert dom.count('class="plot"') == 2  # effects and history

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report_html.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2200", url)
    img = Image.open(io.BytesIO(shot.read_bytes())).convert("RGB")
    assert img.size == (1200, 2200)
    colors = img.getcolors(maxcolors=1 << 20) or []

    # The regressed banner (#c0392b) and the plots' interval colours are drawn on screen.
    def near(rgb, target, tol=40):
        return all(abs(a - b) <= tol for a, b in zip(rgb, target, strict=True))

    red = sum(n for n, c in colors if near(c, (0xC0, 0x39, 0x2B)))
    assert red > 2000, "the regressed banner and red intervals should be visible"
    assert len(colors) > 200, "a page with plots has many colours, not a blank page"
