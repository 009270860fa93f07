"""An S3-compatible server on 127.0.0.1 for the object-storage tests (moto's, in a process of its own).

`s3_env` points the standard AWS variables at it (fake credentials, never real ones) and
`s3_store` hands each test a fresh bucket, so the store suite runs unchanged on object storage.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from urllib.error import URLError
from urllib.request import urlopen

import pytest

from tests.optional import skip_or_fail

FAKE_KEY_ID = "AKIAEVALCORETESTKEY1"
FAKE_SECRET = "evalcore-test-secret-not-real-0000"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """Start moto's S3 server for the session; skip (fail under CI) without the dev extra.

    In a process of its own: in the test's process every request the store's subprocesses make
    waited for the GIL of the test that started them, which made the S3 cases 2-3x slower."""
    try:
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError as exc:
        skip_or_fail(f"the object-storage tests need the dev extra (moto[server], s3fs): {exc}")
    port = _free_port()
    log = (tmp_path_factory.mktemp("moto") / "server.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urlopen(url + "/moto-api/", timeout=2).close()
            break
        except (URLError, OSError):
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"moto's S3 server did not start on {url}: see {log.name}", pytrace=False)
            time.sleep(0.1)
    yield url
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


@pytest.fixture
def s3_env(s3_endpoint, monkeypatch):
    """The environment a user would set: endpoint and credentials, nothing else."""
    from evalcore.store import s3

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE",
                 "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    s3.reset()
    yield s3_endpoint
    s3.reset()


def new_bucket(endpoint: str) -> str:
    import boto3

    name = f"evalcore-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_store(s3_env, tmp_path, monkeypatch):
    """An empty run store at s3://<fresh bucket>/runs."""
    from evalcore.store import RunStore

    monkeypatch.setenv("EVALCORE_CACHE_DIR", str(tmp_path / "cache"))
    return RunStore(f"s3://{new_bucket(s3_env)}/runs")
