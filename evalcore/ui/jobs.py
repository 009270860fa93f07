"""Background jobs started from the dashboard (`evalcore run`, the demo server, resumes, imports).

Why on disk: a Streamlit session dies with a page reload, a run must not. Each job has a
record and a log in the store (evalcore/store/jobs.py, which alone knows where), so any page
render can find every job, tell whether its process is alive, tail its log and find its run by
name. This module starts the processes and looks at them; it never waits for one.

The process is started in its own session (process group), so cancel signals exactly that
group: SIGINT first (`evalcore run` stops cleanly on Ctrl-C and marks the run cancelled),
SIGTERM only if asked again. Nothing else is ever signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from evalcore.store import RunStore
from evalcore.store.jobs import Job, list_jobs, load, log_path, new_job, open_log, save, tail, update

__all__ = ["Job", "RunRequest", "cancel", "evalcore_cmd", "find_run", "is_alive", "list_jobs", "load", "log_path",
           "save", "start", "tail", "when_listening"]

# Popen objects of the jobs this process started. Kept so they are never garbage-collected:
# subprocess reaps collected children behind our back, and their exit codes would be lost.
_CHILDREN: dict[int, subprocess.Popen] = {}


@dataclass
class RunRequest:
    """What the Launch form collects; becomes `evalcore --store S run ...` flags."""

    target: str
    dataset: str
    methods: list[str]
    name: str
    samples: int | None = None
    concurrency: int | None = None
    judge: str | None = None
    metrics: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    keep_first_duplicate: bool = False  # `--on-duplicate keep-first` (e.g. GraphRAG-Bench's novel file)
    repeats: int = 1  # `--repeats K`: each judged metric's verdict asked K times per answer (1: the flag left out)

    def argv(self, store: RunStore) -> list[str]:
        args = [*evalcore_cmd(), "--store", str(store.root), "run", "--target", self.target,
                "--dataset", self.dataset, "--name", self.name, "--no-progress"]
        if self.methods:
            args += ["--methods", ",".join(self.methods)]
        if self.samples:
            args += ["--samples", str(int(self.samples))]
        if self.concurrency:
            args += ["--concurrency", str(int(self.concurrency))]
        if self.judge:
            args += ["--judge", self.judge]
        if self.metrics:
            args += ["--metrics", ",".join(self.metrics)]
        if self.groups:
            args += ["--groups", ",".join(self.groups)]
        if self.keep_first_duplicate:
            args += ["--on-duplicate", "keep-first"]
        if self.repeats != 1:
            args += ["--repeats", str(int(self.repeats))]
        return args


def evalcore_cmd() -> list[str]:
    """The CLI as this interpreter runs it (works without the console script on PATH)."""
    return [sys.executable, "-m", "evalcore"]


def when_listening(port: int, argv: list[str]) -> list[str]:
    """argv run once the demo server listens on 127.0.0.1:`port` (evalcore/demo/wait_port.py):
    the job waits for it, never the page."""
    return [sys.executable, "-m", "evalcore.demo.wait_port", str(int(port)), "--", *argv]


# A dashboard started where SIGINT is ignored (`evalcore app &` in a script, a service manager
# that ignores it) would hand that to every job: cancel's SIGINT would then do nothing. Such a
# job starts through a one-line interpreter that puts SIGINT back to its default and execs it.
_SIGINT_DEFAULT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execvp(sys.argv[1], sys.argv[1:])")


def _cancellable(argv: list[str]) -> list[str]:
    """argv, started so that SIGINT reaches it (see _SIGINT_DEFAULT)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return argv  # a handler or the default: a child starts with the default either way
    return [sys.executable, "-S", "-c", _SIGINT_DEFAULT, *argv]


def start(store: RunStore, kind: str, argv: list[str], run_name: str | None = None,
          run_id: str | None = None, port: int | None = None) -> Job:
    """Start argv detached, output to the job's log file; returns the recorded job."""
    job_id = new_job(store)
    with open_log(store, job_id) as log:
        proc = subprocess.Popen(_cancellable(argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _CHILDREN[proc.pid] = proc
    job = Job(job_id=job_id, kind=kind, argv=argv, pid=proc.pid, started_at=time.time(),
              run_name=run_name, run_id=run_id, port=port)
    save(store, job)
    return job


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_alive(store: RunStore, job: Job) -> bool:
    """Alive = the pid exists, is not a zombie, and still runs our command (pid reuse check).

    When the process is our child (same server process), reap it and keep its exit code.
    """
    if job.exit_code is not None:
        return False
    proc = _CHILDREN.get(job.pid)
    if proc is not None:
        code = proc.poll()
        if code is None:
            return True
        update(store, job, exit_code=code)
        return False
    try:
        pid, status = os.waitpid(job.pid, os.WNOHANG)
        if pid == job.pid:
            update(store, job, exit_code=os.waitstatus_to_exitcode(status))
            return False
    except ChildProcessError:
        pass  # not our child (the server restarted): fall back to /proc
    cmd = _cmdline(job.pid)
    if not cmd or "evalcore" not in cmd and job.argv[0] not in cmd:
        return False
    try:
        with open(f"/proc/{job.pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cancel(store: RunStore, job: Job, force: bool = False) -> bool:
    """Signal the job's own process group: SIGINT (clean stop) or SIGTERM when forced."""
    if not is_alive(store, job):
        return False
    try:
        os.killpg(job.pid, signal.SIGTERM if force else signal.SIGINT)
    except ProcessLookupError:
        return False
    update(store, job, cancel_requested=True)
    return True


def find_run(store: RunStore, job: Job) -> str | None:
    """The run a job writes: its recorded id, else the newest run with the job's unique name."""
    if job.run_id:
        return job.run_id
    if not job.run_name:
        return None
    matches = [m for m in store.manifests() if m.name == job.run_name]
    if matches:
        update(store, job, run_id=matches[-1].run_id)
    return job.run_id
