"""A reader of an s3:// store exits cleanly (issue 34, item 10b).

On object storage the store reads through s3fs, a filesystem written in Python, from the native
threads of pyarrow's I/O pool (and DuckDB's). pyarrow keeps reading ahead, and releases the
Python file objects it read, on those threads after a read returned (apache/arrow#33975,
#39162); if the interpreter tears itself down meanwhile, the process aborts ("terminate called
without an active exception", or "Fatal Python error: PyGILState_Release") or hangs, after the
command printed its output. The command's process now ends without that teardown once a store
on object storage was used (evalcore/store/process_exit.py).

The CLI runs in a subprocess against the moto server of tests/s3server.py, as a user runs it
(`python -m evalcore`). The race is rare on its own, so one case makes it certain: the child
starts a read of the store's files that pyarrow is still carrying out on its threads when the
command ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT_S = 120  # a deadline for a hung child, never a timing assertion

# The command, with a read of the store still in flight on pyarrow's threads when it ends: a
# dataset scan (in a daemon thread) whose reads, made on pyarrow's I/O threads, wait until the
# interpreter starts to exit (atexit), the moment at which pyarrow's late work lands in a race.
READ_IN_FLIGHT = """
import atexit, runpy, sys, threading
import pyarrow as pa
import pyarrow.dataset as ds
from pyarrow.fs import FSSpecHandler, PyFileSystem
from evalcore.store import RunStore, s3
from evalcore.store.fs import arrow

store = RunStore(sys.argv[1])
paths = [arrow(p)[0] for p in store.root.rglob("*.parquet")]
release, waiting, armed = threading.Event(), threading.Event(), threading.Event()
atexit.register(release.set)


class Held(FSSpecHandler):  # the store's own s3fs filesystem; its reads wait for the exit
    def open_input_file(self, path):
        handle = self.fs.open(path, "rb")
        read = handle.read

        def held_read(*args, **kwargs):
            if armed.is_set() and threading.current_thread().name.startswith("Dummy"):  # a native thread
                waiting.set()
                release.wait()
            return read(*args, **kwargs)

        handle.read = held_read
        return pa.PythonFile(handle, mode="r")


scan = ds.dataset(paths, filesystem=PyFileSystem(Held(s3.filesystem())), format="parquet").to_batches()
armed.set()
threading.Thread(target=lambda: next(scan, None), daemon=True).start()
waiting.wait()  # a read is under way on one of pyarrow's threads
sys.argv = ["evalcore", "--store", sys.argv[1], *sys.argv[2:]]
runpy.run_module("evalcore", run_name="__main__")
"""


def _evalcore(env: dict, *args: str, code: str | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "evalcore", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=ROOT)


def _clean(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "terminate called" not in proc.stderr and "Fatal Python error" not in proc.stderr, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def s3_run(s3_endpoint, tmp_path_factory):
    """A bucket store holding the example run, imported once for this file's tests (they only
    read it); the environment its CLI children get: the one tests/s3server.py's `s3_env` sets."""
    from tests.s3server import FAKE_KEY_ID, FAKE_SECRET, new_bucket

    aws = {"AWS_ACCESS_KEY_ID": FAKE_KEY_ID, "AWS_SECRET_ACCESS_KEY": FAKE_SECRET, "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": s3_endpoint}
    unset = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")
    env = {**{k: v for k, v in os.environ.items() if k not in unset}, **aws,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "EVALCORE_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    from evalcore.store import s3

    with pytest.MonkeyPatch.context() as mp:  # boto3 here reads the same variables
        for name, value in aws.items():
            mp.setenv(name, value)
        store = f"s3://{new_bucket(s3_endpoint)}/runs"
    s3.reset()  # as s3_env does: no filesystem of this process's kept for another endpoint
    imported = _evalcore(env, "--store", store, "import", "--example")
    _clean(imported)
    return env, store, imported.stdout.strip().splitlines()[-1]


def test_cli_readers_of_an_s3_store_exit_cleanly(s3_run):
    env, store, run_id = s3_run
    listed = _evalcore(env, "--store", store, "runs", "--json")
    _clean(listed)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_id]
    _clean(_evalcore(env, "--store", store, "show", run_id))


def test_a_read_still_in_flight_at_exit_does_not_abort_the_command(s3_run):
    env, store, run_id = s3_run
    shown = _evalcore(env, store, "show", run_id, code=READ_IN_FLIGHT)
    _clean(shown)
    assert run_id in shown.stdout  # the command's own output, whole
