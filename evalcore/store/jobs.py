"""Records of the dashboard's background jobs, and its uploads, inside the store.

Why on disk: a Streamlit session dies with a page reload, a run must not. Each job is a folder
`<store>/_shared/app_jobs/<job_id>/` holding job.json (argv, pid, start time, run name, exit
code...) and log.txt (the process's stdout+stderr), so any page render can find every job, tail
its log and find its run by name. Uploaded files are kept under `_shared/app_uploads/`. On a
store on object storage both are per machine (`RunStore.local_shared_dir`): they belong to the
processes of this machine. Why in the store: the store alone knows the layout; the dashboard
(evalcore/ui/jobs.py) starts and signals the processes and keeps their records through here.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from evalcore.common.regular_files import METADATA_MAX_BYTES, open_file, read_regular, write_new
from evalcore.schemas.storable import make_storable
from evalcore.store.layout import check_run_id
from evalcore.store.runstore import RunStore

JOBS_DIR = "app_jobs"
UPLOADS_DIR = "app_uploads"
LOG_NAME = "log.txt"
RECORD_NAME = "job.json"


@dataclass
class Job:
    job_id: str
    kind: str  # "run", "resume", "demo-server", "import"
    argv: list[str]
    pid: int
    started_at: float
    run_name: str | None = None
    run_id: str | None = None
    port: int | None = None
    cancel_requested: bool = False
    exit_code: int | None = None
    extra: dict = field(default_factory=dict)


def jobs_root(store: RunStore) -> Path:
    return store.local_shared_dir(JOBS_DIR)


def _job_dir(store: RunStore, job_id: str) -> Path:
    check_run_id(job_id)  # same safe alphabet: a job id never escapes the folder
    return jobs_root(store) / job_id


def new_job(store: RunStore) -> str:
    """A new job's id, its folder created (time-ordered, so listing shows the newest first)."""
    job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    folder = store.confine(_job_dir(store, job_id))
    folder.mkdir(parents=True)
    store.confine(folder)
    return job_id


def open_log(store: RunStore, job_id: str) -> IO[bytes]:
    """The job's log, opened for the process's output (the caller closes it once started): a
    new file in the job's new folder (a FIFO put there would block the dashboard)."""
    return open_file(store.confine(_job_dir(store, job_id) / LOG_NAME), "xb", follow=False)


def log_path(store: RunStore, job: Job) -> Path:
    return _job_dir(store, job.job_id) / LOG_NAME


def save(store: RunStore, job: Job) -> None:
    """Write the job's record atomically (a reader never sees half a record)."""
    path = store.confine(_job_dir(store, job.job_id) / RECORD_NAME)  # every write: no link on the way
    # a new, unique temporary file: nothing planted under a fixed name (a link, a FIFO) is opened
    tmp = store.confine(path.with_name(f".{RECORD_NAME}.{uuid.uuid4().hex[:8]}.tmp"))
    write_new(tmp, json.dumps(asdict(job), indent=2).encode("utf-8"))
    os.replace(tmp, path)


def load(store: RunStore, job_id: str) -> Job | None:
    """The job's record; None when it is missing or unreadable (a job still being created)."""
    try:  # never blocks on, nor reads whole, what is no small regular file (evalcore/common/regular_files.py)
        raw = read_regular(_job_dir(store, job_id) / RECORD_NAME, METADATA_MAX_BYTES)
        data = json.loads(raw.decode("utf-8"))
        if b"\\u" in raw:  # a record edited by hand: a lone surrogate would fail its next save, and the page
            data = make_storable(data)[0]
        return Job(**data)
    except (OSError, ValueError, TypeError, RecursionError):  # RecursionError: JSON nested too deeply
        return None


def update(store: RunStore, job: Job, **fields: object) -> None:
    """Set `fields` in the job's stored record and on `job`, keeping what was stored since `job`
    was read. Why: a page reads every job at its start and then acts on those copies; saving a
    copy whole let one panel (the demo server's, recording its exit code) overwrite what another
    had just stored (its run's panel: cancel_requested), so a stopped server read as crashed."""
    stored = load(store, job.job_id) or job
    for name, value in fields.items():
        setattr(stored, name, value)
    save(store, stored)
    vars(job).update(vars(stored))


def list_jobs(store: RunStore) -> list[Job]:
    """Every readable job record, newest first."""
    root = jobs_root(store)
    if not root.is_dir():
        return []
    jobs = [load(store, p.name) for p in sorted(root.iterdir(), reverse=True) if p.is_dir()]
    return [j for j in jobs if j is not None]


def tail(store: RunStore, job: Job, max_bytes: int = 6000) -> str:
    """The last `max_bytes` of the job's log ("" when there is none yet)."""
    try:
        with open_file(log_path(store, job), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def save_upload(store: RunStore, name: str, data: bytes) -> Path:
    """Keep an uploaded file inside the store under a safe, unique name; its path."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[-80:] or "upload"
    path = store.confine(store.local_shared_dir(UPLOADS_DIR) / f"{uuid.uuid4().hex[:8]}-{safe}")
    path.parent.mkdir(parents=True, exist_ok=True)
    store.confine(path)
    write_new(path, data)
    return path
