"""Dashboard benchmark: cold and warm page renders, and the heaviest query of each page.

    python bench/bench_app.py            # 20 runs x 2,000 questions x 30 metrics (2 methods each)
    python bench/bench_app.py --small    # 3 runs x 200 questions, a quick check
    python bench/bench_app.py --store DIR  # reuse (or build once) the store in DIR

Builds a seeded synthetic store through RunWriter (evalcore.demo.synthetic), then measures:
1. cold first render of each page, each in a fresh Python process (nothing in memory),
   started on that page through the packaged entry (evalcore/ui/entry.py), twice:
   "no cache, background build" (the persisted snapshot, <store>/_shared/app_cache, deleted
   first: the page renders from the Interim; the snapshot then builds in a background
   thread once the page has rendered; the child waits for that build and checks it) and "cache present";
2. warm first render of each page in one process whose snapshot is already open;
3. each page's heaviest data query, timed alone (best of 3).
Goals: a page < 2 s (with or without the cache), a query < 200 ms. Exits 1 when a goal is
missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENTRY = ROOT / "evalcore" / "ui" / "entry.py"
PAGES = ["runs", "launch", "questions", "compare", "charts", "annotate"]
TITLES = {p: p.capitalize() for p in PAGES}
PAGE_GOAL_S, QUERY_GOAL_S = 2.0, 0.2


def first_render(root: str, page: str, no_cache: bool) -> dict:
    """In this (fresh) process: open `page` directly as a new visitor would; time the run."""
    from streamlit.testing.v1 import AppTest

    from evalcore.store import RunStore
    from evalcore.ui.snapshot import clear_cache

    if no_cache:
        clear_cache(RunStore(root))
    # A server is up before its first visitor: start Streamlit's runtime on a blank script
    # first (AppTest's one-off package scan, ~0.5 s, is not a page's cost). Nothing of the
    # dashboard is imported or opened by this.
    AppTest.from_string("import streamlit as st\nst.text('')").run()
    os.environ["EVALCORE_STORE"] = root
    at = AppTest.from_file(str(ENTRY), default_timeout=300)
    if page != "runs":  # url paths equal the file names, so a deep link works before any run
        at.switch_page(f"{page}.py")
    t0 = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - t0
    title = at.title[0].value if len(at.title) else None
    ok = not at.exception and title == TITLES[page]
    if no_cache:  # the render was served while the snapshot builds in the background: it must finish
        from evalcore.ui.snapshot import cache_path, get_snapshot, wait_built

        store = RunStore(root)
        t1 = time.perf_counter()
        wait_built(store)
        snap = get_snapshot(store)
        ok &= snap.persisted and cache_path(store).is_file() and snap.refresh() == []
        return {"seconds": seconds, "ok": ok, "title": title, "build_left_s": time.perf_counter() - t1}
    return {"seconds": seconds, "ok": ok, "title": title}


def cold(root: Path, page: str, no_cache: bool) -> dict:
    argv = [sys.executable, __file__, "--store", str(root), "--first-render", page] + (["--no-cache"] if no_cache else [])
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return {"seconds": float("nan"), "ok": False, "title": out.stderr[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def heaviest_queries(snap):
    """Per page, the query that moves the most rows (what a first render waits on)."""
    from evalcore.ui import data as D
    from evalcore.ui import data_annotate as A
    from evalcore.ui import data_charts as G
    from evalcore.ui import data_compare as C

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


def warm(root: Path) -> dict[str, tuple[float, bool, float]]:
    """Per page: (first render with the snapshot open in this process, ok, heaviest query s)."""
    from streamlit.testing.v1 import AppTest

    from evalcore.store import RunStore
    from evalcore.ui.snapshot import get_snapshot

    os.environ["EVALCORE_STORE"] = str(root)
    snap = get_snapshot(RunStore(root))
    out = {}
    for page, query in heaviest_queries(snap).items():
        at = AppTest.from_file(str(ENTRY), default_timeout=300)
        if page != "runs":
            at.switch_page(f"{page}.py")
        t0 = time.perf_counter()
        at.run()
        render = time.perf_counter() - t0
        out[page] = (render, not at.exception, best_of(query))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="3 runs x 200 questions (quick)")
    ap.add_argument("--store", help="reuse/build the store here instead of a temp folder")
    ap.add_argument("--first-render", choices=PAGES, help=argparse.SUPPRESS)  # the child process
    ap.add_argument("--no-cache", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.first_render:
        print(json.dumps(first_render(args.store, args.first_render, args.no_cache)))
        return 0

    from evalcore.store import RunStore
    from evalcore.demo.synthetic import build_store

    n_runs, n_q = (3, 200) if args.small else (20, 2000)
    root = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="bench_app_")) / "runs"
    t0 = time.perf_counter()
    if not RunStore(root).run_ids():
        build_store(root, n_runs=n_runs, n_questions=n_q, n_metrics=30)
    store = RunStore(root)
    print(f"store: {len(store.run_ids())} runs x 2 methods x 30 metrics at {root} "
          f"({time.perf_counter() - t0:.1f}s to build or find)")

    ok = True
    print("\ncold first render (fresh process per page, opened directly on the page):")
    print(f"{'page':<10} {'no cache, background build':>27} {'(build left after)':>19} {'cache present':>14}")
    for page in PAGES:
        rebuild = cold(root, page, no_cache=True)
        cached = cold(root, page, no_cache=False)
        page_ok = (cached["ok"] and rebuild["ok"] and cached["seconds"] < PAGE_GOAL_S
                   and rebuild["seconds"] < PAGE_GOAL_S)
        ok &= page_ok
        print(f"{page:<10} {rebuild['seconds']:>26.2f}s {rebuild.get('build_left_s', float('nan')):>18.2f}s "
              f"{cached['seconds']:>13.2f}s "
              f"{'ok' if page_ok else 'SLOW' if cached['ok'] and rebuild['ok'] else 'FAILED'}"
              + ("" if rebuild["ok"] and cached["ok"] else f"  ({rebuild['title'] or cached['title']})"))
    size = sum(p.stat().st_size for p in (root / "_shared" / "app_cache").glob("*")) / 1e6
    print(f"(cache file: {size:.0f} MB)")

    print("\nwarm (snapshot already open in this process):")
    for page, (render, rendered, q) in warm(root).items():
        page_ok, query_ok = render < PAGE_GOAL_S and rendered, q < QUERY_GOAL_S
        ok &= page_ok and query_ok
        print(f"{page:<10} first render {render:6.2f}s {'ok ' if page_ok else 'SLOW' if rendered else 'EXC '}  "
              f"heaviest query {1000 * q:7.1f} ms {'ok' if query_ok else 'SLOW'}")
    print("\nverdict:", "all goals met" if ok else "some goals missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
