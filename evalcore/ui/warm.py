"""Warm the dashboard process once, in the background: from server start under `evalcore app`
(ui/served.py: `preload`), else when it serves its first page (`start`).

Why: a cold page spent most of its first visit importing code it had not needed yet — the
metric registry (every metric module, the judges, their prompt files; ~0.4 s), Plotly's
figure classes (~0.3 s), the other pages' analysis modules — not querying or drawing. A
server is started long before most of its pages are opened, so the first script run starts
one daemon thread that imports what every page needs; by the time a visitor opens a second
page (or a first visitor's page reaches its charts), it is loaded. Python's import lock is
per module, so a page importing the same module meanwhile simply waits for it to finish
instead of importing it twice.

What else every first visit of a page paid, done here once instead:
- Streamlit compiles a page's file (with its "magic" AST rewrite) the first time any session
  opens that page, 0.05-0.1 s per page; the thread compiles every page into the server's own
  script cache (the pages manager's, shared by all sessions) so no visitor waits for it.
- After every script run Streamlit calls gc.collect(2) (runner.postScriptGC), which walked
  every object the imports created — pandas, Plotly, DuckDB, Streamlit — ~0.1 s per page
  run, holding the GIL while the page's last messages wait to be sent. Once the imports are
  loaded, gc.freeze() moves those long-lived objects out of the collector's sight: later
  collections (Streamlit's and Python's own) walk only what pages create. Objects alive at
  that moment are never collected; they are modules, classes and caches that live as long
  as the process anyway.
- Plotly builds each trace's and axis' classes the first time one is drawn; the thread draws
  one small figure of every kind the pages draw (~0.15-0.2 s of the first Compare).
- Every page's first query over all runs (the Runs table, each page's system picker) built
  the store's DuckDB views first: a database with every run's files' footers read (~0.1-0.2 s
  at 20 runs); a page's first query of one run built that run's (~0.07 s). The thread builds
  both, for the newest run: the one every page opens on. Nothing built here can go stale:
  store/views.py keys its databases on the store's state token, so a store changed since is
  simply built again on its next read.
"""

from __future__ import annotations

import gc
import importlib
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

# What the pages import on first use, heaviest first (the leaderboard's key metrics load the
# metric registry; analysis modules pull in the store, DuckDB and pandas).
MODULES = (
    "evalcore.analysis.runs.leaderboard",
    "plotly.graph_objects",
    "plotly.subplots",
    "evalcore.analysis.comparison.compare",
    "evalcore.analysis.comparison.verdict",
    "evalcore.analysis.questions.failure_modes",
    "evalcore.analysis.charts.distributions",
    "evalcore.analysis.questions.question_drilldown",
    "evalcore.analysis.questions.question_story",
    "evalcore.analysis.labels.annotations",
    "evalcore.analysis.labels.corrected",
    # Streamlit's emoji catalog: an alert or title with any non-ASCII character (Compare's "Δ")
    # loads it and compiles one regex of every emoji (~0.3 s, once per process)
    "streamlit.emojis",
    # pandas' Styler (the Runs table, Compare's diagnosis table): its import compiles Jinja
    # templates (~0.1-0.2 s)
    "pandas.io.formats.style",
)

_started = threading.Event()
_preloading: threading.Thread | None = None  # the server-start half, when `evalcore app` began it


def _under_apptest() -> bool:
    import streamlit as st

    try:
        return bool(st.config.get_option("global.appTest"))
    except Exception:  # noqa: BLE001 - an option this Streamlit does not know: a real server
        return False


def _load(pages: Sequence[Path] = (), compile_page: Callable[[str], Any] | None = None) -> None:
    # then each page's own module, named by the pages entry.PAGES navigates to (pages/x.py or
    # evalcore/ui/x.py: module evalcore.ui.x), so a new page is warmed without being listed here
    for name in (*MODULES, *(f"evalcore.ui.{Path(page).stem}" for page in pages)):
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional extra missing: the page says so itself
            continue
        if name == "evalcore.analysis.runs.leaderboard":
            try:
                module.key_metric_names()  # imports the metric registry (metrics, judges, prompts)
            except Exception:  # noqa: BLE001
                pass
    try:
        _draw_figures()
    except Exception:  # noqa: BLE001 - a Plotly that cannot: the pages say so themselves
        pass
    try:  # the all-runs views, then the newest run's (every page opens on it by default)
        from evalcore.analysis.runs.leaderboard import metric_names, run_list
        from evalcore.store import RunStore

        store = RunStore()
        runs = run_list(store)
        if len(runs):
            metric_names(store, (str(runs.run_id.iloc[0]),))
    except Exception:  # noqa: BLE001 - a missing or damaged store: the page says so itself
        pass
    if compile_page is not None:
        for path in pages:
            try:
                compile_page(str(path))
            except Exception:  # noqa: BLE001 - the page shows its own error when opened
                continue
    gc.freeze()


def _check_direct_execution() -> None:
    """Streamlit's once-per-process check, made by the first element any page sends, that it is
    not run as a plain script or in a REPL (delta_generator._maybe_print_use_warning): it calls
    inspect.stack(), which resolves the source file of every loaded module (~0.4 s once the
    pages' imports are in), inside the first visitor's script run. Done here, in the server,
    it reaches the same verdict (a running server: no warning) and the flag it sets spares
    every page. A Streamlit without it: nothing to do."""
    try:
        from streamlit import delta_generator
    except ImportError:  # pragma: no cover - Streamlit is a dependency of the dashboard
        return
    check = getattr(delta_generator, "_maybe_print_use_warning", None)
    if callable(check):
        check()


def _draw_figures() -> None:
    """One small figure with every trace type and layout part the pages use, serialised the way
    st.plotly_chart does. Plotly imports each trace's, axis' and legend's classes and validators
    the first time one is built: ~0.15-0.2 s that the first Compare (subplots, bars, markers,
    axes) and the first Charts otherwise paid inside their script run."""
    import plotly.graph_objects as go
    import plotly.io as pio
    import plotly.tools  # noqa: F401 - st.plotly_chart's own import
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, row_heights=[1, 1], vertical_spacing=0.1)
    fig.add_trace(go.Bar(x=[0.1], y=["a"], base=[0.0], orientation="h", width=0.5, opacity=0.5,
                         marker={"color": "#9e9e9e"}, legendgroup="g", customdata=[[1]], hovertemplate="%{x}"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0.1], y=["a"], mode="markers", marker={"size": 5, "symbol": "diamond",
                             "line": {"color": "#212121", "width": 1}}), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines+markers+text", text=["a", "b"],
                             line={"dash": "dot"}), row=2, col=1)
    fig.add_trace(go.Box(y=[1.0, 2.0], name="b", boxpoints="outliers"), row=2, col=1)
    fig.add_trace(go.Scattergl(x=[0.0], y=[0.0], mode="markers"), row=2, col=1)
    fig.update_xaxes(range=[-1, 1], zeroline=True, zerolinewidth=2, title_text="x", row=1, col=1)
    fig.update_yaxes(automargin=True, type="log", row=2, col=1)
    fig.update_layout(height=200, barmode="overlay", margin={"l": 1, "r": 1, "t": 1, "b": 1}, title=None,
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0},
                      annotations=[{"text": "a", "showarrow": False}], hoverlabel={"namelength": -1})
    pio.to_json(fig, validate=False)


def _serving_runtime() -> Any:
    """The server's Streamlit runtime, else None (no server in this process: a test calling
    preload). Streamlit creates it ~10 ms after loading the app file that starts the preload;
    the preload asks after its imports, seconds later, so it never waits for it."""
    from streamlit import runtime

    return runtime.get_instance() if runtime.exists() else None


def _first_visit(scripts: Sequence[Path], pages: Sequence[Path]) -> None:
    """What the first visitor's script run would do itself, done while the server waits for one:
    compile the entry script and every page into the runtime's script cache (Streamlit's own,
    shared by all sessions: 0.05-0.1 s per file otherwise paid in the first run of each), and
    make the first page's reads (a page module's `prefetch()`, e.g. ui/runs.py) into the pages'
    cache (global scope, keyed on the store's state: nothing made here can be stale)."""
    server = _serving_runtime()
    if server is None:
        return
    _check_direct_execution()  # only now: made before the runtime exists, it would warn "use streamlit run"
    compile_script = getattr(getattr(server, "_script_cache", None), "get_bytecode", None)  # private: may go
    for path in (*scripts, *pages) if callable(compile_script) else ():
        try:
            compile_script(str(path))
        except Exception:  # noqa: BLE001 - the page shows its own error when opened
            continue
    for page in pages:
        prefetch = getattr(sys.modules.get(f"evalcore.ui.{Path(page).stem}"), "prefetch", None)
        try:
            if callable(prefetch):
                prefetch()
        except Exception:  # noqa: BLE001 - a missing or damaged store: the page says so itself
            continue


def _preload(pages: Sequence[Path], scripts: Sequence[Path]) -> None:
    _load(pages, None)
    _first_visit(scripts, pages)
    gc.freeze()


def preload(pages: Sequence[Path] = (), scripts: Sequence[Path] = ()) -> None:
    """The imports, figures and views of _load, begun when the server starts (ui/served.py, what
    `evalcore app` serves) rather than when the first visitor's page runs: a fresh browser's
    first page then finds them loaded, or waits only for what is left, instead of sharing the
    GIL with a warm-up that starts beside it. Once the server's runtime exists it also does the
    first visit's own work (`_first_visit`: scripts compiled, the first page's reads). The first
    script run's `start` then only waits for it, compiles what it could not (cache hits
    otherwise) and freezes the heap again."""
    global _preloading
    if _preloading is None:
        _preloading = threading.Thread(target=_preload, args=(tuple(pages), tuple(scripts)), name="evalcore-preload",
                                       daemon=True)
        _preloading.start()


def _after_preload(pages: Sequence[Path], compile_page: Callable[[str], Any] | None) -> None:
    if _preloading is not None:
        _preloading.join()
    for path in pages if compile_page is not None else ():
        try:
            compile_page(str(path))
        except Exception:  # noqa: BLE001 - the page shows its own error when opened
            continue
    gc.freeze()


def start(pages: Sequence[Path] = (), compile_page: Callable[[str], Any] | None = None) -> bool:
    """Start the warm-up thread once per process; True the time it starts. `compile_page`
    (the pages manager's get_page_script_byte_code) is called on every path in `pages`.
    Not under AppTest (tests and bench_app's script-only renders): there it would only compete
    with the one page being run, and a test process has no second visitor to warm up for."""
    if _started.is_set() or _under_apptest():
        return False
    _started.set()
    target = _after_preload if _preloading is not None else _load
    threading.Thread(target=target, args=(tuple(pages), compile_page), name="evalcore-warm", daemon=True).start()
    return True
