"""`evalcore app` never leaves its Streamlit server running (evalcore/cli/child_process.py).

Before: SIGTERM to `evalcore app` ended the parent only, and `streamlit run` went on serving
the port. Each test starts the real command on 127.0.0.1 with an empty store, waits for the
server to answer, stops the parent alone (never its group), and requires the Streamlit child
to be gone within a generous bound. Processes are found through /proc (Linux).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture
def app(tmp_path):
    """A running `evalcore app` and its Streamlit child, as (parent, child pid)."""
    port = _free_port()
    log = open(tmp_path / "app.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "app",
                             "--port", str(port)], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        deadline, healthy = time.time() + 90, False
        while time.time() < deadline and proc.poll() is None and not healthy:
            try:
                healthy = httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.3)
        assert healthy, (tmp_path / "app.log").read_text(errors="replace")
        children = [c for c in _children(proc.pid) if "streamlit" in _cmdline(c)]
        assert len(children) == 1, children
        yield proc, children[0]
    finally:
        try:  # clean up our own process group only, whatever the test did
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        log.close()


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGHUP, 128 + signal.SIGHUP),
                                       (signal.SIGINT, 0)], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_to_evalcore_app_stops_streamlit(app, sig, code):
    parent, child = app
    os.kill(parent.pid, sig)  # the parent alone, as a service manager would
    assert parent.wait(timeout=30) == code
    assert _gone_within(child, 30), _cmdline(child)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_sigkill_to_evalcore_app_stops_streamlit(app):
    parent, child = app
    os.kill(parent.pid, signal.SIGKILL)  # no handler runs: the kernel's death signal must do it
    parent.wait(timeout=30)
    assert _gone_within(child, 30), _cmdline(child)
