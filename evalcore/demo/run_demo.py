"""`evalcore demo`: one offline command from nothing to a scored, comparable run.

Starts the demo server in-process on 127.0.0.1 (a free port unless one is given), asks its
three methods every demo question, scores with every metric that can run offline (the
heuristic judge when the judge layer is installed, which labels its values as heuristic;
the semantic group when the packaged embedding model loads), and prints a leaderboard.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Any, Callable

import pandas as pd

from evalcore.runner.config import EvalConfig
from evalcore.demo import METHODS, questions_path
from evalcore.demo.server import start_in_thread
from evalcore.pipeline import RunResult, run_evaluation
from evalcore.store import RunStore

@dataclass
class DemoResult:
    run: RunResult
    leaderboard: pd.DataFrame
    notes: list[str]


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def leaderboard(store: RunStore, run_id: str) -> pd.DataFrame:
    """Method x the Runs page's key metrics and figures (evalcore.analysis.runs.leaderboard.run_board:
    the same numbers as the dashboard and `evalcore runs`)."""
    from evalcore.analysis.runs.leaderboard import run_board

    return run_board(store, run_id)


def format_leaderboard(table: pd.DataFrame) -> str:
    def cell(value: Any, column: str) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        if column in {"latency_p50_ms", "n", "n_errors"}:
            return f"{value:,.0f}"
        if column == "cost_per_query_usd":
            return f"{value:.5f}"
        return f"{value:.3f}"

    headers = ["method", *table.columns]
    rows = [[str(idx), *[cell(v, c) for c, v in row.items()]] for idx, row in table.iterrows()]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def run_demo(store: RunStore, port: int = 0, progress: bool = True, semantic: bool = True,
             judge: bool = True, echo: Callable[[str], None] = print) -> DemoResult:
    notes: list[str] = []
    use_judge = judge and _has("evalcore.judges")
    server = start_in_thread(port)
    try:
        echo(f"demo RAG server listening on {server.url} (127.0.0.1 only)")
        config = EvalConfig(name="demo", target=server.url, dataset=str(questions_path()),
                            methods=list(METHODS), top_k=5, concurrency=8, timeout=30,
                            judge="heuristic" if use_judge else None, progress=progress)
        result = run_evaluation(config, store)
    finally:
        server.shutdown()
        server.server_close()
    if result.score_message and not result.scored:
        notes.append(result.score_message)
    if use_judge and result.scored:
        notes.append("judged metrics use the offline heuristic judge (labelled 'heuristic'); "
                     "use --judge anthropic:... for real LLM verdicts")
    elif not use_judge:
        notes.append("judged metrics skipped: the judge layer (evalcore.judges) is not installed")
    if semantic and result.scored:
        notes.append(_semantic_pass(store, result.run_id, progress))
    return DemoResult(result, leaderboard(store, result.run_id), [n for n in notes if n])


def _semantic_pass(store: RunStore, run_id: str, progress: bool) -> str:
    """Score the semantic group too when sentence-transformers and the packaged model load."""
    if not _has("sentence_transformers"):
        return "semantic metrics skipped: sentence-transformers is not installed"
    from evalcore.scoring import engine as scoring
    from evalcore.errors import EvalcoreError

    try:
        scoring.score_run(store, run_id, groups=["semantic"], options={"judge": None}, progress=progress)
    except EvalcoreError as exc:
        return f"semantic metrics skipped: {exc}"
    return ""
