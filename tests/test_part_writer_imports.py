"""A live run's scoring child (scoring/stream_worker_child.py), which chooses the metrics, scores
chunks and writes their part files, loads neither DuckDB nor the merge: they load when a writer
first publishes (store/writer.py) or the store is first read (scoring/queries.py, engine.py).
Why a guard: the child's imports take CPU from the asking on a 2-core machine in the run's first
second (bench/bench_runner.py), and one module-level import brings them back unseen."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from pathlib import Path
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue
from evalcore.scoring.stream_chunks import ChunkStream
from evalcore.store import RunStore, RunWriter
root = Path(sys.argv[1])
writer = RunWriter("r1", root / "r1")
writer.write_metrics([MetricValue(run_id="r1", method="m", question_id="q1", metric="exact_match",
                                  value=1.0, group="lexical")])
# what the child does with each request: choose the metrics from the first chunk, score chunks
stream = ChunkStream(RunStore(root), writer, "r1", [], [], {})
items = [(EvalQuestion(id=f"q{i}", question=f"question {i}", ground_truth=f"answer {i}"),
          EvalResponse(question_id=f"q{i}", method="m", answer=f"answer {i}", latency_ms=1.0)) for i in range(8)]
assert stream.decide(items) is None
stream.score(items)
print(json.dumps({m: m in sys.modules for m in ("duckdb", "evalcore.store.compaction", "evalcore.store.merge")}))
"""


def test_the_scoring_child_loads_no_duckdb_and_no_merge(tmp_path):
    (tmp_path / "r1").mkdir()
    out = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == {"duckdb": False, "evalcore.store.compaction": False,
                                                       "evalcore.store.merge": False}
    assert list((tmp_path / "r1" / "parts" / "metrics").glob("part-*.parquet"))  # the part was written


def test_the_child_runs_at_a_lower_cpu_priority_than_the_run():
    """Its imports and chunks give way to the asking and to a server on this machine (the
    child's NICENESS: scoring/stream_worker_child.py); it still serves the run meanwhile."""
    import os
    import time

    import pytest

    from evalcore.common.child_pipe import start_child
    from evalcore.scoring import stream_worker_child

    if not hasattr(os, "getpriority"):
        pytest.skip("no CPU priorities on this platform")
    parent = os.getpriority(os.PRIO_PROCESS, 0)
    child = start_child("evalcore.scoring.stream_worker_child")
    try:
        deadline = time.monotonic() + 20
        while os.getpriority(os.PRIO_PROCESS, child.pid) == parent and time.monotonic() < deadline:
            time.sleep(0.02)  # (it sets its priority first thing, then waits for its first message)
        assert os.getpriority(os.PRIO_PROCESS, child.pid) == min(parent + stream_worker_child.NICENESS, 19)
    finally:
        child.stdin.close()
        child.wait(timeout=20)
