"""Connect to a Ray cluster, or start a private local one, for one evalcore command.

Why a context manager of our own: a command must leave nothing running behind it (a local
instance started here is shut down on exit, also on Ctrl-C), print nothing Ray-internal on a
terminal unless asked, and fail with one clear sentence when the optional extra is missing.
Workers inherit this process's environment on a local instance (store credentials, the judge
key, HF_HUB_OFFLINE); on a remote cluster they use the cluster's own environment: no secret
is ever put into a runtime_env, which Ray keeps in its control store and logs.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from typing import Any, Iterator

from evalcore.errors import EvalcoreError

LOCAL_CPUS_ENV = "EVALCORE_RAY_CPUS"  # CPUs of a local instance (default: all of this machine)
PROBE_TIMEOUT_S = 5.0
# The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS and its
# client server both are) answers with a SETTINGS frame of its own (frame type 4).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def require_ray() -> Any:
    """The ray module, or an EvalcoreError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401 - the pipeline needs Ray Data, not only Ray core
    except ImportError as exc:
        raise EvalcoreError("--engine ray needs Ray: pip install 'evalcore[scale]' "
                            f"(ray[data]); import failed: {exc}") from exc
    return ray


def check_address(address: str) -> None:
    """Fail in one line, within seconds, when `address` (HOST:PORT or ray://HOST:PORT) has no
    Ray cluster behind it. Why: ray.init given an address where nothing listens, or where
    something that is not Ray answers, retries for minutes before it gives up with a
    traceback. "auto" is left to Ray (it looks for a local cluster and fails at once)."""
    where = address.split("://", 1)[1] if address.startswith("ray://") else address
    host, sep, port = where.rpartition(":")
    if address in ("auto", "local") or not sep or not port.isdigit():
        return  # Ray's own checks (and its own message for a malformed address)
    host = host.strip("[]")
    try:
        conn = socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S)
    except OSError as exc:
        raise EvalcoreError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    head = b""
    try:
        with conn:
            conn.sendall(_H2_PREFACE)
            while len(head) < 9:
                chunk = conn.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except OSError:
        pass  # reset or silent: not a gRPC server, said below
    if len(head) < 9 or head[3] != 4:
        raise EvalcoreError(f"{address} is not a Ray cluster: something listens there but does not answer "
                            "as Ray does (check the host and port: `ray status` on the head prints the address)")


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None,
                progress: bool = False) -> Iterator[Any]:
    """Yield the ray module connected to `address` (None: a new local instance).

    A session this function did not start (ray already initialised by the caller, e.g. a
    test fixture or a notebook) is reused and left running."""
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": progress,
                                  "configure_logging": progress, "ignore_reinit_error": True}
        if address:
            check_address(address)
            kwargs["address"] = address
        else:
            # "local", not None: with no address ray.init joins the newest cluster named in
            # /tmp/ray/ray_current_cluster, a file a crashed or stopped cluster leaves behind
            kwargs["address"] = "local"
            cpus = num_cpus or (int(os.environ[LOCAL_CPUS_ENV]) if os.environ.get(LOCAL_CPUS_ENV) else None)
            if cpus:
                kwargs["num_cpus"] = cpus
        try:
            ray.init(**kwargs)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
            # no cluster at "auto", another Ray version, ray:// without ray[client]...: one line
            detail = " ".join(str(exc).split()) or type(exc).__name__
            where = f"the Ray cluster at {address}" if address else "a local Ray instance"
            raise EvalcoreError(f"cannot use {where}: {detail}") from None
        started = True
    data_context = ray.data.DataContext.get_current()
    data_context.enable_progress_bars = progress
    data_context.print_on_execution_start = progress
    if not progress:  # Ray Data logs each execution, and that its bars are off, on the terminal
        import logging

        logging.getLogger("ray.data").setLevel(logging.ERROR)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
