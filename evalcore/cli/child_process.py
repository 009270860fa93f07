"""Run a long-lived child (the Streamlit server) so that it never outlives the command.

Why: `evalcore app` starts `streamlit run` as a child process. Stopped with SIGTERM (a service
manager, `kill`, a closing terminal's SIGHUP), the parent used to die alone and the child
kept serving the dashboard on its port, owned by nobody. Now
  * SIGTERM, SIGHUP and SIGINT sent to the parent are passed on to the child as SIGTERM
    (Streamlit's own clean shutdown), and the parent waits for it to end;
  * on Linux the child also asks the kernel for SIGTERM when its parent dies
    (prctl PR_SET_PDEATHSIG), which covers a parent killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Callable, Mapping, Sequence

FORWARDED = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None), signal.SIGINT) if s is not None)
GRACE_S = 10.0  # how long the child has to stop after SIGTERM before it is killed
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGTERM the child when this process dies (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork: nothing to load after it
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def run_tied(argv: Sequence[str], env: Mapping[str, str] | None = None,
             on_started: Callable[[], object] | None = None) -> int:
    """Run argv to completion and return its exit code; signals that would stop this process
    stop the child first (exit code 128 + signal when the child was stopped by one).
    `on_started` runs once the child exists (after the fork: it may start threads)."""
    proc = subprocess.Popen(list(argv), env=dict(env) if env is not None else None,
                            preexec_fn=_die_with_parent())  # noqa: PLW1509 - no threads yet
    if on_started is not None:
        on_started()
    received: list[int] = []

    def forward(signum: int, frame: object) -> None:
        received.append(signum)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        try:
            code = proc.wait()
        finally:
            if proc.poll() is None:  # an exception in the parent: never leave the child behind
                proc.terminate()
                try:
                    proc.wait(GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:
        return 0 if received[0] == signal.SIGINT else 128 + received[0]
    return 128 - code if code < 0 else code
