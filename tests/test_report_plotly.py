"""The report's Plotly bundle (evalcore/outputs/report_plotly.py): the vendored basic bundle,
unmodified and of the plotly.js version the installed plotly writes figures for; shipped in the
wheel; the full bundle when another plotly is installed; a figure it cannot draw refused.
The report drawn from it in Chromium: tests/app/test_report_browser.py; its size and its figures'
trace types: test_report_cli.py.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from pathlib import Path

import pytest

from evalcore.outputs import report_plotly as R
from tests.optional import requires

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "evalcore" / "assets"


def test_the_vendored_bundle_is_the_published_file_named_in_the_notice():
    notice = (ASSETS / "NOTICE").read_text(encoding="utf-8")
    digest = hashlib.sha256((ASSETS / "plotly-basic.min.js").read_bytes()).hexdigest()
    assert digest in notice, "plotly-basic.min.js differs from the file the NOTICE names"
    assert f"plotly.js-basic-dist-min@{R.BASIC_VERSION}" in notice
    head = (ASSETS / "plotly-basic.min.js").read_text(encoding="utf-8")[:200]
    assert re.search(rf"plotly\.js \(basic - minified\) v{re.escape(R.BASIC_VERSION)}\b", head), head
    assert "MIT License" in (ASSETS / "plotly.js-LICENSE.txt").read_text(encoding="utf-8")


def test_the_bundle_matches_the_installed_plotly():
    """Fails when the plotly package moves to another plotly.js: fetch that version's basic
    bundle (npm package plotly.js-basic-dist-min), update NOTICE and BASIC_VERSION."""
    offline = requires("plotly.offline", "the app extra")
    assert offline.get_plotlyjs_version() == R.BASIC_VERSION
    assert R.plotly_js() == R.basic_bundle()


def test_another_plotly_gets_its_own_full_bundle():
    offline = requires("plotly.offline", "the app extra")
    assert R.plotly_js(installed_version="0.0.1") == offline.get_plotlyjs()


def test_the_wheel_ships_the_bundle_its_license_and_notice():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["evalcore"]
    for name in ("plotly-basic.min.js", "plotly.js-LICENSE.txt", "NOTICE"):
        rel = f"assets/{name}"
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), f"{rel} is not package data"


def test_a_figure_the_bundle_cannot_draw_is_refused():
    go = requires("plotly.graph_objects", "the app extra")
    R.check_drawable(go.Figure([go.Bar(x=[1], y=["a"]), go.Scatter(x=[1], y=[2]), go.Pie(values=[1])]))
    with pytest.raises(ValueError, match="heatmap"):
        R.check_drawable(go.Figure([go.Scatter(x=[1], y=[2]), go.Heatmap(z=[[1]])]))

