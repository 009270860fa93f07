"""A dashboard job record edited by hand (or by another tool) is read as run.json is: text UTF-8
cannot hold is repaired (its next save would fail on it), JSON nested too deeply for the reader
is an unreadable record (None, as a torn one is), never an exception on the Jobs page."""

from __future__ import annotations

from evalcore.store import RunStore
from evalcore.store import jobs


def _record(store: RunStore, body: str) -> str:
    """A new job whose record holds `body` (`{job_id}` replaced by its id)."""
    job_id = jobs.new_job(store)
    (jobs.jobs_root(store) / job_id / jobs.RECORD_NAME).write_text(body.replace("{job_id}", job_id))
    return job_id


def test_a_lone_surrogate_in_a_job_record_is_repaired_and_saves(tmp_path):
    store = RunStore(tmp_path / "runs")
    # JSON escapes, as a hand-edited file spells them: \ud800 and \udfff are lone surrogates
    job_id = _record(store, '{"job_id": "{job_id}", "kind": "run", "argv": ["x\\ud800"], "pid": 1, '
                            '"started_at": 0, "run_name": "bad\\udfffname"}')
    job = jobs.load(store, job_id)
    assert job.run_name == "bad\ufffdname" and job.argv == ["x\ufffd"]
    jobs.update(store, job, exit_code=0)  # its next save writes it (it failed on the surrogate)
    assert jobs.load(store, job_id).exit_code == 0


def test_a_job_record_nested_too_deeply_is_unreadable(tmp_path):
    store = RunStore(tmp_path / "runs")
    job_id = _record(store, '{"extra": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert jobs.load(store, job_id) is None
