"""Dashboard benchmark: page render times and the heaviest query of each page.

    python bench/bench_app.py            # 20 runs x 2,000 questions x 30 metrics (2 methods each)
    python bench/bench_app.py --small    # 3 runs x 200 questions, a quick check

Builds a seeded synthetic store through RunWriter (evalcore.ui.synthetic), then:
1. the cold snapshot build (once per process and store state; see evalcore/ui/snapshot.py),
2. each page's first render through AppTest (entry app.py, switch_page), snapshot warm,
3. each page's heaviest data query, timed alone (best of 3).
Goals: every page < 2 s, every query < 200 ms. Prints one line per measurement and a
verdict; exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.ui import data as D  # noqa: E402
from evalcore.ui import data_annotate as A  # noqa: E402
from evalcore.ui import data_charts as G  # noqa: E402
from evalcore.ui import data_compare as C  # noqa: E402
from evalcore.ui.snapshot import get_snapshot  # noqa: E402
from evalcore.ui.synthetic import build_store  # noqa: E402

PAGE_GOAL_S, QUERY_GOAL_S = 2.0, 0.2


def heaviest_queries(snap):
    """Per page, the query that moves the most rows (what a first render waits on)."""
    runs = D.run_list(snap)["run_id"].tolist()
    r0, r1 = runs[0], runs[1]
    a, b = D.System(r0, "local_search"), D.System(r1, "local_search")
    keys = [a.key, b.key, f"{r0}:basic_search", f"{r1}:basic_search"]
    return {
        "runs": lambda: D.leaderboard(snap, D.KEY_METRICS),
        "launch": lambda: snap.df("SELECT count(*) FROM responses WHERE run_id = $r", {"r": r0}),
        "questions": lambda: D.question_table(snap, D.QuestionFilter(r0), D.KEY_METRICS[:4]),
        "compare": lambda: C.delta_table(snap, a, b),
        "charts": lambda: G.metric_by_facet(snap, keys, "faithfulness", "category"),
        "annotate": lambda: A.remaining(snap, r0, "claim", None),
    }


def best_of(fn, n=3) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="3 runs x 200 questions (quick)")
    ap.add_argument("--store", help="reuse/build the store here instead of a temp folder")
    args = ap.parse_args()
    n_runs, n_q = (3, 200) if args.small else (20, 2000)
    root = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="bench_app_")) / "runs"

    from evalcore.store import RunStore

    t0 = time.perf_counter()
    if not RunStore(root).run_ids():
        build_store(root, n_runs=n_runs, n_questions=n_q, n_metrics=30)
    store = RunStore(root)
    print(f"store: {len(store.run_ids())} runs x {n_q} questions x 30 metrics x 2 methods at {root} "
          f"({time.perf_counter() - t0:.1f}s to build or find)")

    t0 = time.perf_counter()
    snap = get_snapshot(store)
    rows = int(snap.df("SELECT count(*) AS n FROM metrics")["n"].iloc[0])
    print(f"snapshot cold build: {time.perf_counter() - t0:.2f}s ({rows:,} metric rows; once per process "
          f"and store change)")

    from streamlit.testing.v1 import AppTest

    os.environ["EVALCORE_STORE"] = str(root)
    ok = True
    queries = heaviest_queries(snap)
    for page, query in queries.items():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        t0 = time.perf_counter()
        at.run()
        if page != "runs":
            at.switch_page(f"pages/{page}.py")
            t0 = time.perf_counter()
            at.run()
        render = time.perf_counter() - t0
        q = best_of(query)
        failed = bool(at.exception)
        page_ok = render < PAGE_GOAL_S and not failed
        query_ok = q < QUERY_GOAL_S
        ok &= page_ok and query_ok
        print(f"{page:<10} first render {render:6.2f}s {'ok ' if page_ok else 'SLOW' if not failed else 'EXC '}  "
              f"heaviest query {1000 * q:7.1f} ms {'ok' if query_ok else 'SLOW'}")
    print("verdict:", "all goals met" if ok else "some goals missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
