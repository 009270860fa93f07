"""kill -9 at random points of a compaction: readers see the old rows or the new, never a mix,
never an error; the next compaction finishes the job with every row exactly once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
import time

from evalcore.queries import query_df
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore

N_Q, N_PARTS, TRIALS = 400, 12, 8
METRICS = [f"m{i}" for i in range(10)]

COMPACT = textwrap.dedent("""
    import sys
    from evalcore.store import RunStore
    RunStore(sys.argv[1]).compact(sys.argv[2])
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


def test_kill_9_during_compaction_leaves_old_or_new_and_the_next_one_finishes(tmp_path):
    rng = random.Random(11)
    outcomes = []
    for trial in range(TRIALS):
        rescore = trial % 2 == 1
        root, run_id = tmp_path / f"s{trial}", f"r{trial}"
        store = _prepare(root, run_id, rescore)
        before = _state(store, run_id)
        proc = subprocess.Popen([sys.executable, "-c", COMPACT, str(root), run_id])
        time.sleep(rng.uniform(0.3, 1.6))  # interpreter start-up ~0.5 s, then the compaction itself
        proc.kill()
        proc.wait(timeout=30)
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
        outcomes.append("finished" if seen == new else "killed before publishing")
    print(f"\n[faults/compaction] {TRIALS} kills: {outcomes}")
    assert len(outcomes) == TRIALS
