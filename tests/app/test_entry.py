"""The packaged entry (evalcore/ui/entry.py): every page renders from it, and `evalcore app`
serves it from a copy of the package with no checkout (no app.py, no pages/) anywhere near."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from evalcore.ui.entry import PAGES as ENTRY_PAGES
from tests.app.conftest import ROOT

PAGES = {module: title for module, title, _ in ENTRY_PAGES}  # the one page list: evalcore.ui.entry.PAGES


@pytest.mark.parametrize("page", list(PAGES))
def test_packaged_entry_renders_every_page(make_app, page):
    at = make_app(page, packaged=True)
    assert not at.exception, at.exception
    assert at.title[0].value == PAGES[page]


def test_packaged_entry_links_between_pages(make_app, app_store):
    """Compare links to Questions with st.page_link: the link must resolve from the packaged entry."""
    a, b = [r for r in app_store.run_ids() if r.startswith("synthetic-")]
    at = make_app("compare", packaged=True, sys=[f"{a}:local_search", f"{b}:local_search"], cm="token_f1")
    assert not at.exception, at.exception
    assert at.dataframe[0].value is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_evalcore_app_serves_from_an_install_without_the_checkout(app_store, tmp_path):
    """Copy only the package (as a wheel would install it) and start `evalcore app --open` from
    an unrelated folder; the server must come up healthy and serve the app page, and one browser
    tab must be opened on it once it answers: Streamlit opens none for an st.App (ui/served.py),
    so the command does (Python's webbrowser, here $BROWSER: a script that writes down its URL)."""
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "fake-browser"
    fake.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    fake.chmod(0o755)
    site = tmp_path / "site"
    shutil.copytree(ROOT / "evalcore", site / "evalcore", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(site), "BROWSER": str(fake)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    log = open(tmp_path / "app.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "evalcore", "--store", str(app_store.root), "app",
                             "--port", str(port), "--open"], cwd=elsewhere, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, healthy = time.time() + 60, False
        while time.time() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status_code == 200:
                    healthy = True
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        output = (tmp_path / "app.log").read_text(errors="replace")
        assert healthy, output
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200
        page = httpx.get(f"http://127.0.0.1:{port}/compare", timeout=5)
        assert page.status_code == 200 and "window.__streamlit" in page.text  # ui/served.py's hint
        # What that interpreter serves is the copied package's st.App, not the checkout's app.py.
        served = subprocess.run([sys.executable, "-c", "from evalcore.cli.app_commands import app_script; "
                                 "print(app_script())"], cwd=elsewhere, env=env, capture_output=True, text=True)
        assert served.stdout.strip() == str(site / "evalcore" / "ui" / "served.py"), served.stderr
        deadline = time.time() + 10
        while not opened.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert opened.exists() and opened.read_text().split() == [f"http://127.0.0.1:{port}"], output
    finally:
        _stop_group(proc)
        log.close()


def _stop_group(proc: subprocess.Popen) -> None:
    """Stop the process group we started (evalcore app and its streamlit child), only that."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
