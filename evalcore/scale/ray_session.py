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
from contextlib import contextmanager
from typing import Any, Iterator

from evalcore.errors import EvalcoreError

LOCAL_CPUS_ENV = "EVALCORE_RAY_CPUS"  # CPUs of a local instance (default: all of this machine)


def require_ray() -> Any:
    """The ray module, or an EvalcoreError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401 - the pipeline needs Ray Data, not only Ray core
    except ImportError as exc:
        raise EvalcoreError("--engine ray needs Ray: pip install 'evalcore[scale]' "
                            f"(ray[data]); import failed: {exc}") from exc
    return ray


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
            kwargs["address"] = address
        else:
            cpus = num_cpus or (int(os.environ[LOCAL_CPUS_ENV]) if os.environ.get(LOCAL_CPUS_ENV) else None)
            if cpus:
                kwargs["num_cpus"] = cpus
        try:
            ray.init(**kwargs)
        except ConnectionError as exc:
            raise EvalcoreError(f"cannot reach the Ray cluster at {address}: {exc}") from exc
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
