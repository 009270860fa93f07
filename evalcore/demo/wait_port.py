"""`python -m evalcore.demo.wait_port PORT -- COMMAND ...`: wait until the demo server listens on
127.0.0.1:PORT, then become COMMAND (same process, same pid).

Why: the Launch page starts the demo server and the run that asks it as two background jobs.
The run must not ask before the server listens, and the page must not wait for the server
either (a page render never waits on a process: it used to block up to 15 s here). So the run's
job waits by itself, then replaces itself with `evalcore run` (os.execv): the job's pid, process
group, log and cancel button stay the same. A server that never listens ends the job with exit
code 1 and one line in its log.
"""

from __future__ import annotations

import os
import socket
import sys
import time

HOST = "127.0.0.1"
WAIT_S = 15.0
POLL_S = 0.2


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex((HOST, port)) == 0


def wait_port(port: int, seconds: float = WAIT_S) -> bool:
    """Whether something listens on 127.0.0.1:`port` within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        if listening(port):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: python -m evalcore.demo.wait_port PORT -- COMMAND ...", file=sys.stderr)
        return 2
    port, command = int(argv[0]), argv[2:]
    if not wait_port(port):
        print(f"the demo server did not start listening on {HOST}:{port} within {WAIT_S:g} s; "
              "see the demo-server job's log", file=sys.stderr, flush=True)
        return 1
    sys.stdout.flush()
    os.execv(command[0], command)
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
