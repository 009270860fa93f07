"""Compaction benchmark: what publishing one run costs (RunWriter.publish(), store/compaction.py).

    python bench/bench_compaction.py                  # a 2,000-question run, 2 methods x 30 metrics
    python bench/bench_compaction.py --questions 200

Writes one synthetic run's part files exactly as a run does (evalcore.demo.synthetic.write_run)
but without publishing, then times publish() on fresh copies of those parts: merge per table
(newest row per key), the canonical files, the summary tables and the pointer. Median of the
trials is the figure; goal < 1 s for 2,000 questions (bench/bench_app.py prints it too).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GOAL_S = 1.0


def compaction(n_q: int, work: Path, trials: int = 3) -> tuple[list[float], object]:
    """Seconds of publish() per trial, and the last trial's Compaction (parts absorbed, rows)."""
    from evalcore.demo import synthetic as S
    from evalcore.store import RunStore, RunWriter

    rng = random.Random(7)
    questions = [S._question(rng, i) for i in range(n_q)]
    src = RunStore(work / "src")
    with mock.patch.object(RunWriter, "publish", lambda self: None):  # parts only, nothing published
        run_id = S.write_run(src, "compaction", questions, ["local_search", "basic_search"],
                             S.METRIC_NAMES[:30], seed=4242)
    times, result = [], None
    for i in range(trials):
        store = RunStore(work / f"trial{i}")
        shutil.copytree(src.run_dir(run_id), store.root / run_id)
        writer = RunWriter(run_id, store.run_dir(run_id))
        t0 = time.perf_counter()
        result = writer.publish()
        times.append(time.perf_counter() - t0)
    return times, result


def summary(times: list[float], result) -> str:
    med = statistics.median(times)
    return (f"publish(): median {med:.2f}s (trials: {', '.join(f'{t:.2f}' for t in times)}) "
            f"{'ok' if med < GOAL_S else 'SLOW'}  [{result.parts_absorbed} parts -> rows "
            + ", ".join(f"{k} {v}" for k, v in result.rows.items()) + "]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_compaction_"))
    try:
        times, result = compaction(args.questions, work, args.trials)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(summary(times, result))
    return 0 if statistics.median(times) < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
