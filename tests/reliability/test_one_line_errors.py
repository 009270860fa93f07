"""One line, never a traceback, for every expected failure (issue 22, item 6).

Each case runs the real `evalcore` command in a subprocess and requires exactly one line
starting with `error:` on stderr, no "Traceback", and a non-zero exit:
- the target is down when a run starts (it was ~100 lines ending in TargetUnavailable);
- the target's /health refuses, or redirects to another origin;
- the store is read-only during `score` (a 52-line OSError);
- any unexpected exception (the safety net): one line that points at `--debug`, which (or
  EVALCORE_DEBUG=1) shows the traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from .servers import Fault, ScriptedServer, ok_json

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALCORE_DEBUG"}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _evalcore(*args: str, env: dict[str, str] | None = None, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "evalcore"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300,
                          env=env or _env(), cwd=str(ROOT))


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert proc.returncode != 0
    return lines[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def questions(tmp_path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "anyone there?"}) + "\n")
    return path


def test_target_down_at_start(tmp_path, questions):
    store = tmp_path / "runs"
    port = _free_port()
    proc = _evalcore("--store", str(store), "run", "--target", f"http://127.0.0.1:{port}",
                     "--dataset", str(questions), "--no-score", "--no-progress")
    line = _one_error_line(proc)
    assert f"127.0.0.1:{port}" in line and "not reachable" in line
    assert proc.returncode == 2
    assert not store.exists() or not [p for p in store.iterdir() if not p.name.startswith(("_", "."))]


def test_health_refused_with_a_secret_in_the_url(tmp_path, questions):
    server = ScriptedServer(lambda r: ok_json({"answer": "x"}),
                            on_get=lambda r: ok_json({"error": "no such route"}, 404)).start()
    try:
        proc = _evalcore("--store", str(tmp_path / "runs"), "run", "--target",
                         f"{server.url}/?api_key=sk-CANARY-url-5e2", "--dataset", str(questions), "--no-progress")
    finally:
        server.stop()
    line = _one_error_line(proc)
    assert "HTTP 404" in line and "api_key=***" in line and "CANARY" not in proc.stderr + proc.stdout


def test_health_redirected_to_another_origin(tmp_path, questions):
    other = ScriptedServer(lambda r: ok_json({"answer": "x"})).start()
    home = ScriptedServer(lambda r: ok_json({"answer": "x"}),
                          on_get=lambda r: Fault("ok", 302, b"", {"Location": f"{other.url}/health"})).start()
    try:
        proc = _evalcore("--store", str(tmp_path / "runs"), "run", "--target", home.url,
                         "--dataset", str(questions), "--no-progress")
    finally:
        home.stop()
        other.stop()
    line = _one_error_line(proc)
    assert other.url in line and "--follow-redirects" in line


READ_ONLY_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'


@pytest.fixture
def readonly_store(tmp_path):
    """An imported run in a store that this test's `evalcore` cannot write, and a function
    that runs `evalcore` against it. Without root, the store's mode bits make it read-only;
    root ignores those, so as root the command runs in its own mount namespace where the
    store is bind-mounted read-only (EROFS, as on a read-only volume)."""
    store = tmp_path / "runs"
    proc = _evalcore("--store", str(store), "import", "--example")
    assert proc.returncode == 0, proc.stderr
    run_id = next(p.name for p in store.iterdir() if p.name.startswith("example-"))
    as_root = os.geteuid() == 0
    if as_root:
        if not shutil.which("unshare") or subprocess.run(["unshare", "-m", "true"]).returncode != 0:
            pytest.skip("running as root without `unshare -m`: cannot make a read-only store")
    else:
        for path in [store, *store.rglob("*")]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))

    def run(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "evalcore", "--store", str(store), *args]
        if as_root:
            command = ["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, str(store), *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=_env(), cwd=str(ROOT))

    yield store, run_id, run
    for path in [store, *store.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_read_only_store_during_score(readonly_store):
    store, run_id, evalcore = readonly_store
    before = sorted((str(p), p.stat().st_size) for p in store.rglob("*"))
    proc = evalcore("score", run_id, "--metrics", "token_f1")
    line = _one_error_line(proc)
    assert str(store) in line and ("read-only file system" in line or "permission denied" in line), line
    assert "nothing already stored was changed" in line
    assert sorted((str(p), p.stat().st_size) for p in store.rglob("*")) == before


BOOM = """
import sys
from evalcore.cli import context
from evalcore.cli.main import main

def broken(self):
    raise KeyError("a bug nobody expected\\nwith a second line")

context.CliState.store = broken
sys.argv = ["evalcore", *sys.argv[1:]]
main()
"""


def test_an_unexpected_exception_is_one_line_pointing_at_debug(tmp_path):
    proc = _evalcore("--store", str(tmp_path / "runs"), "runs", code=BOOM)
    line = _one_error_line(proc)
    assert "KeyError" in line and "a bug nobody expected" in line and "--debug" in line
    assert proc.returncode == 1


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_shows_the_traceback(tmp_path, how):
    args = ["--debug"] if how == "flag" else []
    env = _env(EVALCORE_DEBUG="1") if how == "env" else None
    proc = _evalcore(*args, "--store", str(tmp_path / "runs"), "runs", code=BOOM, env=env)
    assert "Traceback" in proc.stderr and "KeyError" in proc.stderr
    assert proc.returncode == 1
