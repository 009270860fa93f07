"""Background jobs started from the dashboard (`evalcore run`, the demo server, resumes).

Why on disk: a Streamlit session dies with a page reload, a run must not. Each job is a
folder in the store, `<store>/_shared/app_jobs/<job_id>/` holding job.json (argv, pid,
start time, run name) and log.txt (the process's stdout+stderr). Any page render can then
find every job, tell whether its process is alive, tail its log and find its run by name.

The process is started in its own session (process group), so cancel signals exactly that
group: SIGINT first (`evalcore run` stops cleanly on Ctrl-C and marks the run cancelled),
SIGTERM only if asked again. Nothing else is ever signalled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evalcore.store import RunStore, check_run_id

JOBS_DIR = "app_jobs"
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
        return args


@dataclass
class Job:
    job_id: str
    kind: str  # "run", "resume", "demo-server"
    argv: list[str]
    pid: int
    started_at: float
    run_name: str | None = None
    run_id: str | None = None
    port: int | None = None
    cancel_requested: bool = False
    exit_code: int | None = None
    extra: dict = field(default_factory=dict)


def evalcore_cmd() -> list[str]:
    """The CLI as this interpreter runs it (works without the console script on PATH)."""
    return [sys.executable, "-m", "evalcore"]


def jobs_root(store: RunStore) -> Path:
    return store.local_shared_dir(JOBS_DIR)


def _job_dir(store: RunStore, job_id: str) -> Path:
    check_run_id(job_id)  # same safe alphabet: a job id never escapes the folder
    return jobs_root(store) / job_id


def log_path(store: RunStore, job: Job) -> Path:
    return _job_dir(store, job.job_id) / "log.txt"


def save(store: RunStore, job: Job) -> None:
    path = _job_dir(store, job.job_id) / "job.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(job), indent=2), encoding="utf-8")
    os.replace(tmp, path)


def start(store: RunStore, kind: str, argv: list[str], run_name: str | None = None,
          run_id: str | None = None, port: int | None = None) -> Job:
    """Start argv detached, output to the job's log file; returns the recorded job."""
    job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    directory = _job_dir(store, job_id)
    directory.mkdir(parents=True)
    with open(directory / "log.txt", "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    _CHILDREN[proc.pid] = proc
    job = Job(job_id=job_id, kind=kind, argv=argv, pid=proc.pid, started_at=time.time(),
              run_name=run_name, run_id=run_id, port=port)
    save(store, job)
    return job


def load(store: RunStore, job_id: str) -> Job | None:
    try:
        data = json.loads((_job_dir(store, job_id) / "job.json").read_text(encoding="utf-8"))
        return Job(**data)
    except (OSError, ValueError, TypeError):
        return None


def list_jobs(store: RunStore) -> list[Job]:
    root = jobs_root(store)
    if not root.is_dir():
        return []
    jobs = [load(store, p.name) for p in sorted(root.iterdir(), reverse=True) if p.is_dir()]
    return [j for j in jobs if j is not None]


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
        job.exit_code = code
        save(store, job)
        return False
    try:
        pid, status = os.waitpid(job.pid, os.WNOHANG)
        if pid == job.pid:
            job.exit_code = os.waitstatus_to_exitcode(status)
            save(store, job)
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
    job.cancel_requested = True
    save(store, job)
    return True


def tail(store: RunStore, job: Job, max_bytes: int = 6000) -> str:
    path = log_path(store, job)
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def find_run(store: RunStore, job: Job) -> str | None:
    """The run a job writes: its recorded id, else the newest run with the job's unique name."""
    if job.run_id:
        return job.run_id
    if not job.run_name:
        return None
    matches = [m for m in store.manifests() if m.name == job.run_name]
    if matches:
        job.run_id = matches[-1].run_id
        save(store, job)
    return job.run_id
