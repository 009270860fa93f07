"""A real Phoenix server on 127.0.0.1 for the session: SQLite in a temporary folder, telemetry off.

arize-phoenix (the server) requires anthropic<2, which the judge extra has outgrown, so it is
not in `[dev]`: it lives in a venv of its own, named by EVALCORE_PHOENIX_PYTHON (.ci/heavy makes
one). Without it the tests skip with the one-line recipe (and fail under CI=true).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.optional import skip_or_fail

ENV = "EVALCORE_PHOENIX_PYTHON"
HINT = (f"the Phoenix server tests need arize-phoenix in a venv of its own: python3 -m venv .phoenix-venv && "
        f".phoenix-venv/bin/pip install arize-phoenix && export {ENV}=$PWD/.phoenix-venv/bin/python")
START_TIMEOUT = 90.0  # seconds; it starts in ~5 s on an idle machine, ~20 s on a loaded one


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def phoenix_python() -> str:
    """The interpreter that has arize-phoenix: EVALCORE_PHOENIX_PYTHON, or this one."""
    configured = os.environ.get(ENV, "").strip()
    candidate = configured or sys.executable
    try:
        ok = subprocess.run([candidate, "-c", "import phoenix.server.main"], capture_output=True).returncode == 0
    except OSError:  # no such interpreter
        ok = False
    if not ok:
        why = f"{ENV}={configured} cannot import phoenix.server" if configured else "arize-phoenix is not installed"
        skip_or_fail(f"{why}; {HINT}")
    return candidate


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="session")
def phoenix_url(tmp_path_factory):
    """http://127.0.0.1:PORT of a Phoenix server started for this session (and stopped after)."""
    python = phoenix_python()
    workdir: Path = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {**os.environ,
           "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port),
           # nothing leaves the machine: no telemetry pixels, fonts, downloads, assistant or MCP
           "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
           "PHOENIX_DISABLE_AGENT_ASSISTANT": "true", "PHOENIX_ENABLE_MCP_SERVER": "false",
           "PHOENIX_ENABLE_PROMETHEUS": "false"}
    for name in ("PHOENIX_SQL_DATABASE_URL", "PHOENIX_COLLECTOR_ENDPOINT", "PHOENIX_API_KEY"):
        env.pop(name, None)
    log = open(workdir / "server.log", "w")
    proc = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=workdir)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / "server.log").read_text(errors="replace")[-1500:]
                pytest.fail(f"Phoenix did not start (exit {proc.poll()}):\n{tail}", pytrace=False)
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
