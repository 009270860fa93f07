"""One real-browser check: `streamlit run app.py` on 127.0.0.1 and every page loaded in
headless Chromium. Fails on any Streamlit exception box or traceback in the rendered DOM.

Skips with a reason when chromium is missing (apt-get install -y chromium), but fails
under CI=true: CI must exercise the browser.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"": "Runs", "launch": "Launch", "questions": "Questions", "compare": "Compare",
         "charts": "Charts", "annotate": "Annotate"}
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]
BAD_MARKERS = ["stException", "Traceback (most recent call last)", "StreamlitAPIException"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if path:
        return path
    message = "chromium not found (apt-get install -y chromium)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browse(browser: str, url: str, profile: Path, *, screenshot: Path | None = None) -> str:
    """The DOM after the page's scripts ran (or a screenshot of it). Virtual time lets the
    websocket round trips finish without a fixed sleep."""
    args = [browser, *CHROME_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=60000",
            "--window-size=1280,1000"]
    args += [f"--screenshot={screenshot}", url] if screenshot else ["--dump-dom", url]
    out = subprocess.run(args, capture_output=True, timeout=90)
    return out.stdout.decode("utf-8", errors="replace")


@pytest.fixture
def served_app(app_store, tmp_path):
    port = free_port()
    log = open(tmp_path / "streamlit.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        env={**os.environ, "EVALCORE_STORE": str(app_store.root)}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("streamlit did not become healthy: " + (tmp_path / "streamlit.log").read_text()[-2000:])
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _headings(dom: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h1[^>]*>(.*?)</h1>", dom, re.S)]


def test_every_page_loads_in_chromium_without_exceptions(served_app, tmp_path):
    """Each page must show its title and no exception. Headless virtual time does not wait
    for a cold server (imports, the store snapshot), so a page still showing the loading
    skeleton is loaded again for up to 45 s; an exception fails at once."""
    browser = chromium()
    for path, title in PAGES.items():
        headings: list[str] = []
        deadline = time.time() + 45
        for attempt in range(30):
            if attempt and time.time() > deadline:
                break
            dom = browse(browser, f"{served_app}/{path}", tmp_path / f"profile-{path or 'root'}-{attempt}")
            (tmp_path / f"dom-{path or 'root'}.html").write_text(dom)
            for marker in BAD_MARKERS:
                assert marker not in dom, f"page {path or '/'} shows {marker}"
            headings = _headings(dom)
            if any(h.startswith(title) for h in headings):
                break
        assert any(h.startswith(title) for h in headings), f"page {path or '/'} did not render; h1: {headings}"
        assert 'data-testid="stSidebarNav"' in dom, f"page {path or '/'}: no navigation rendered"
