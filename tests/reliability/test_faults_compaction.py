"""kill -9 at random points of a compaction: readers see the old rows or the new, never a mix,
never an error; the next compaction finishes the job with every row exactly once."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time

from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df

N_Q, N_PARTS, TRIALS = 400, 12, 8
# where each trial's kill lands: after this fraction of the compaction's durable steps (1.0:
# after the last, when the new pointer is published but the sweep has not run), or None: at a
# random moment (inside a merge or a file write, too)
KILL_AT = [0.1, None, 1.0, None, 0.5, None, 0.8, None]
METRICS = [f"m{i}" for i in range(10)]

# The child reports where it is, so the test knows where each kill landed: "compacting" once
# the interpreter is up (start-up alone takes seconds on a loaded machine, and a kill before this
# line tests nothing), "compacted" when compact() returned. With a step number it also stops
# right after that many durable steps (each fsync or rename the compaction does) and waits there
# for the kill: kill points at exact places, before and after the pointer is replaced.
COMPACT = textwrap.dedent("""
    import os, sys
    from evalcore.store import RunStore
    stop_after, done = int(sys.argv[3]), [0]
    def counted(real):
        def step(*args):
            result = real(*args)
            done[0] += 1
            if done[0] == stop_after:
                print(f"stopped after step {done[0]} ({real.__name__})", flush=True)
                sys.stdin.readline()  # held here until the kill
            return result
        return step
    os.fsync, os.replace = counted(os.fsync), counted(os.replace)
    print("compacting", flush=True)
    RunStore(sys.argv[1]).compact(sys.argv[2])
    print(f"compacted after {done[0]} steps", flush=True)
""")


def _prepare(root, run_id: str, rescore: bool) -> RunStore:
    """A published run of N_Q answers x 10 metrics, plus pending parts: new metric rows for
    every key (a re-score) or, without `rescore`, nothing but the first write's parts."""
    store = RunStore(root)
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(N_Q)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x" * 200) for i in range(N_Q)])
    value = 0.0
    if rescore:
        writer.write_metrics([MetricValue(run_id=run_id, method="a", question_id=f"q{i}", metric=m, value=0.0,
                                          group="g") for i in range(N_Q) for m in METRICS])
        writer.publish()
        value = 1.0
    step = N_Q // N_PARTS + 1
    for start in range(0, N_Q, step):
        writer.write_metrics([MetricValue(run_id=run_id, method="a", question_id=f"q{i}", metric=m, value=value,
                                          group="g") for i in range(start, min(N_Q, start + step)) for m in METRICS])
    return store


def _state(store: RunStore, run_id: str) -> tuple[int, float | None, int]:
    df = query_df(store, "SELECT count(*) AS n, avg(value) AS v, count(DISTINCT (question_id, metric)) AS k "
                         "FROM metrics WHERE run_id = ?", [run_id])
    return int(df.n[0]), (None if df.v[0] != df.v[0] else float(df.v[0])), int(df.k[0])


def _calibrate(root, rescore: bool, monkeypatch) -> tuple[int, float]:
    """The durable steps and the time of one whole compaction of such a store, in this process."""
    store, steps = _prepare(root, "calibration", rescore), [0]

    def counted(real):
        def step(*args):
            steps[0] += 1
            return real(*args)
        return step

    with monkeypatch.context() as patch:
        patch.setattr("os.fsync", counted(os.fsync))
        patch.setattr("os.replace", counted(os.replace))
        start = time.perf_counter()
        store.compact("calibration")
        return steps[0], time.perf_counter() - start


def test_kill_9_during_compaction_leaves_old_or_new_and_the_next_one_finishes(tmp_path, monkeypatch):
    """Half the kills land after an exact step of the compaction, half at a random moment of it
    (KILL_AT); each trial records where its kill landed, and the test requires most of them
    mid-compaction, some before the new pointer and some after."""
    rng = random.Random(11)
    shape = {rescore: _calibrate(tmp_path / f"calibration-{rescore}", rescore, monkeypatch)
             for rescore in (False, True)}
    outcomes = []
    for trial in range(TRIALS):
        rescore, at = trial % 2 == 1, KILL_AT[trial % len(KILL_AT)]
        steps, seconds = shape[rescore]
        at_step = at is not None
        stop_after = max(1, round(steps * at)) if at_step else 0
        root, run_id = tmp_path / f"s{trial}", f"r{trial}"
        store = _prepare(root, run_id, rescore)
        before = _state(store, run_id)
        proc = subprocess.Popen([sys.executable, "-c", COMPACT, str(root), run_id, str(stop_after)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "compacting", f"trial {trial}: the child died at start"
            if at_step:
                report = proc.stdout.readline()
                assert report.startswith("stopped after step"), (trial, stop_after, steps, report)
            else:
                time.sleep(rng.uniform(0.0, seconds))  # a random moment of a compaction this long
        finally:
            proc.kill()
            proc.wait(timeout=30)
        finished = "compacted" in proc.stdout.read()
        proc.stdout.close()
        proc.stdin.close()
        seen = _state(store, run_id)  # readable, and exactly the old or the new state
        new = (N_Q * len(METRICS), 1.0 if rescore else 0.0, N_Q * len(METRICS))
        assert seen in (before, new), (trial, before, seen)
        assert seen[0] == seen[2]  # never a duplicated key
        store.compact(run_id)  # the next writer's compaction absorbs what is left
        assert _state(store, run_id) == new
        pointer = json.loads((root / run_id / "tables.json").read_text())
        assert not list((root / run_id / "parts").rglob("*.parquet"))
        assert {p.name for p in (root / run_id / "data").iterdir()} <= {
            f.split("/", 1)[1] for f in [*pointer["files"].values(), *pointer["previous"]]}
        outcomes.append("finished" if finished else "mid-compaction, " + (
            "new rows published" if seen == new else "old rows still published"))
    print(f"\n[faults/compaction] {TRIALS} kills: {outcomes}")
    mid = [o for o in outcomes if o.startswith("mid")]
    # every kill at a step lands mid-compaction; most random ones should too (they are drawn
    # within the time a whole compaction took here)
    assert len(mid) >= TRIALS * 3 // 4, outcomes
    assert {"mid-compaction, new rows published", "mid-compaction, old rows still published"} <= set(outcomes)
