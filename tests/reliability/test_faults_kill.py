"""kill -9 at random moments: 10 seeded trials of `evalcore run` in a subprocess against a
local server, killed at a random instant, then `evalcore run --resume RUN` until complete.

After every trial: each (question, method) is stored exactly once in the raw part files
(no duplicate written by the resume, none lost), and scoring afterwards covers every
response (no lost metric). The kill is the only step that needs a real process; the
resumes go through the same CLI app in-process, which keeps 10 trials inside ~30 s.
The figures are printed (run with -s) and recorded in docs/reliability.md under "Faults".
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.store import RunStore, query_df

from .servers import Fault, ScriptedServer, rag_answer

SEED = 20261122
TRIALS = 10
N_QUESTIONS = 20
METHODS = ("alpha", "beta")
EXPECTED = N_QUESTIONS * len(METHODS)
MAX_RESUMES = 3


def _slow_answer(request: dict) -> Fault:
    """A valid answer after 15 ms, so a run lasts long enough to be killed mid-way."""
    ok = rag_answer(request["body"]["question"])
    return Fault("stall", ok.status, ok.body, seconds=0.015)


def _start(root: Path, url: str, qfile: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "evalcore", "--store", str(root), "run", "--target", url,
           "--dataset", str(qfile), "--methods", ",".join(METHODS), "--concurrency", "2",
           "--retries", "1", "--timeout", "5", "--no-score", "--no-progress"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _raw_rows(store: RunStore, run_id: str, table: str):
    """Every row on disk for a run's table, published or not, without any de-duplication:
    the canonical file its pointer names plus every pending part file."""
    import json as _json

    import pandas as pd
    import pyarrow.parquet as pq

    run_dir = store.run_dir(run_id)
    pointer = _json.loads((run_dir / "tables.json").read_text()) if (run_dir / "tables.json").exists() else {}
    files = [run_dir / pointer["files"][table]] if table in pointer.get("files", {}) else []
    files += sorted((run_dir / "parts" / table).glob("part-*.parquet"))
    frames = [pq.read_table(f).to_pandas() for f in files]
    return pd.concat(frames) if frames else pd.DataFrame(columns=["method", "question_id"])


def _replaced(store: RunStore, run_id: str, table: str) -> int:
    """Rows compaction ever superseded in this run's table (pointer's audit count)."""
    import json as _json

    pointer = _json.loads((store.run_dir(run_id) / "tables.json").read_text())
    return int(pointer.get("replaced", {}).get(table, 0))


def _raw_counts(store: RunStore, run_id: str):
    rows = _raw_rows(store, run_id, "responses")
    return rows.groupby(["method", "question_id"]).size().reset_index(name="n")


def _n_questions(store: RunStore, run_id: str) -> int:
    return len(_raw_rows(store, run_id, "questions"))


def _run_and_kill(root: Path, url: str, qfile: Path, kill_at: float) -> tuple[bool, str]:
    """Start `evalcore run` and SIGKILL it `kill_at` s after its run.json appears (counted
    from there so kills spread over the run's own life, not interpreter start-up).
    Returns (finished before the kill, stderr)."""
    proc = _start(root, url, qfile)
    deadline = time.monotonic() + 30
    while proc.poll() is None and not list(root.glob("*/run.json")) and time.monotonic() < deadline:
        time.sleep(0.005)
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < kill_at:
        time.sleep(0.005)
    finished_first = proc.poll() is not None
    if not finished_first:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return finished_first, proc.stderr.read().decode(errors="replace")


def _resume_and_check(root: Path, url: str, qfile: Path, kill_at: float, finished_first: bool,
                      stderr: str) -> dict:
    store = RunStore(root)
    ids = store.run_ids() if root.exists() else []
    window = ""
    if ids and not _n_questions(store, ids[0]):
        # Killed between creating the run and writing its questions: resume then "completes"
        # an empty run (known bug, test_kill_between_create_and_questions below). Counted,
        # then the broken run is set aside so the trial still checks a full run.
        window = "between run creation and its questions (known bug)"
        store.delete_run(ids[0])
        ids = []
    if not ids:  # killed before the run existed: nothing to resume, start it again
        proc = _start(root, url, qfile)
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode(errors="replace")
        ids = store.run_ids()
        where = window or "before the run existed"
        stored_at_kill = 0
    else:
        stored_at_kill = int(_raw_counts(store, ids[0])["n"].sum())
        where = "after completion" if finished_first else f"asking ({stored_at_kill}/{EXPECTED} stored)"
    assert finished_first is False or proc.returncode == 0, stderr
    (run_id,) = ids
    resumes = 0
    while store.manifest(run_id).status != "complete":
        assert resumes < MAX_RESUMES, f"run {run_id} not complete after {resumes} resumes"
        res = CliRunner().invoke(app, ["--store", str(root), "run", "--resume", run_id, "--no-score",
                                       "--no-progress"])
        assert res.exit_code == 0, res.output
        resumes += 1
    counts = _raw_counts(store, run_id)
    keys = set(zip(counts["method"], counts["question_id"]))
    assert len(keys) == EXPECTED, f"{EXPECTED - len(keys)} (question, method) lost"
    dupes = counts[counts["n"] > 1]
    assert dupes.empty, f"duplicate raw rows: {dupes.to_dict('records')}"
    # exactly once across every compaction too: no answer was ever superseded by a second one
    assert _replaced(store, run_id, "responses") == 0
    manifest = store.manifest(run_id)
    assert manifest.counts["responses"] == EXPECTED

    from evalcore.scoring.engine import score_run

    score_run(store, run_id, metrics=["token_f1"], progress=False)
    scored = _raw_rows(store, run_id, "metrics")
    scored = scored[scored.metric == "token_f1"].groupby(["method", "question_id"]).size().reset_index(name="n")
    assert set(zip(scored["method"], scored["question_id"])) == keys, "a response has no metric"
    assert set(scored["n"]) == {1}
    return {"kill_at_s": round(kill_at, 2), "where": where, "resumes": resumes, "rows": len(counts),
            "stored_at_kill": stored_at_kill}


def test_kill_9_at_random_points_then_resume(tmp_path):
    server = ScriptedServer(_slow_answer).start()
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"q{i:02d}", "question": f"question number {i}",
                                         "ground_truth": f"answer to question number {i}"}) + "\n"
                             for i in range(N_QUESTIONS)))
    rng = random.Random(SEED)
    kill_points = [round(rng.uniform(0.0, 0.8), 3) for _ in range(TRIALS)]
    roots = [tmp_path / f"t{i}" / "runs" for i in range(TRIALS)]
    started = time.monotonic()
    results = []
    try:
        # The killed runs go in parallel (5 at a time: each is its own process, store and
        # clock); the resumes and checks run one after the other through the CLI app.
        with ThreadPoolExecutor(max_workers=5) as pool:
            killed = list(pool.map(lambda i: _run_and_kill(roots[i], server.url, qfile, kill_points[i]),
                                   range(TRIALS)))
        for i, (finished_first, stderr) in enumerate(killed):
            results.append(_resume_and_check(roots[i], server.url, qfile, kill_points[i],
                                             finished_first, stderr))
    finally:
        server.stop()
    elapsed = time.monotonic() - started
    mid_run = sum(not r["where"].startswith(("after", "before")) for r in results)
    assert mid_run >= TRIALS // 2, f"too few kills landed mid-run: {results}"
    rows = sum(r["rows"] for r in results)
    asked = sum(server.calls.values())
    print(f"\n[faults/kill-9] trials {TRIALS} (seed {SEED}), kills before completion {mid_run}, "
          f"rows checked {rows} (+{rows} metric rows), re-asked in flight {asked - TRIALS * EXPECTED}, "
          f"time {elapsed:.1f}s")
    for r in results:
        print(f"  kill {r['kill_at_s']:.2f}s after the run appeared: {r['where']}; resumes {r['resumes']}")


def test_kill_between_create_and_questions_then_resume(tmp_path, monkeypatch):
    """Deterministic form of the window the random trials can hit."""
    from evalcore.runner.config import EvalConfig
    from evalcore.pipeline import live, resume_run, run_evaluation

    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        qfile = tmp_path / "q.jsonl"
        qfile.write_text("".join(json.dumps({"id": f"q{i}", "question": f"q {i}"}) + "\n" for i in range(3)))
        store = RunStore(tmp_path / "runs")

        def crash(writer, questions):
            raise SystemExit("killed")  # stands in for kill -9 at this instant: the run made, no question written

        # (a new run's questions are written beside the asking, by its opening publish)
        monkeypatch.setattr(live, "OpeningPublish", crash)
        config = EvalConfig(target=server.url, dataset=str(qfile), score=False, progress=False)
        with pytest.raises(SystemExit):
            run_evaluation(config, store)
        monkeypatch.undo()
        (run_id,) = store.run_ids()
        result = resume_run(run_id, store, progress=False)
        assert result.status == "complete"
        assert int(_raw_counts(store, run_id)["n"].sum()) == 3
    finally:
        server.stop()


def test_crash_during_scoring_then_resume_scores_every_response(tmp_path, monkeypatch):
    from evalcore.scoring import engine as scoring
    from evalcore.runner.config import EvalConfig
    from evalcore.pipeline import resume_run, run_evaluation

    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    try:
        qfile = tmp_path / "q.jsonl"
        qfile.write_text("".join(json.dumps({"id": f"q{i}", "question": f"q {i}", "ground_truth": f"a {i}"})
                                 + "\n" for i in range(3)))
        store = RunStore(tmp_path / "runs")

        def crash(*args, **kwargs):
            raise SystemExit("killed while scoring")  # stands in for kill -9 at this instant

        from evalcore.scoring import stream_chunks

        monkeypatch.setattr(scoring, "score_run", crash)
        monkeypatch.setattr(stream_chunks, "score_chunk", crash)  # scoring while asking dies the same way
        config = EvalConfig(target=server.url, dataset=str(qfile), metrics=["token_f1"], progress=False)
        with pytest.raises(SystemExit):
            run_evaluation(config, store)
        monkeypatch.undo()
        (run_id,) = store.run_ids()
        resume_run(run_id, store, progress=False)
        scored = query_df(store, "SELECT count(*) AS n FROM metrics WHERE run_id = ?", [run_id])
        assert int(scored["n"][0]) == 3
    finally:
        server.stop()
