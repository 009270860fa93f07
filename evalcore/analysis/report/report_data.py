"""Every number of the standalone HTML report, gathered from the functions Compare and Charts call.

Why a module of its own: `evalcore report` must print the numbers `evalcore compare --json`
prints and the pages show, so it computes nothing: the comparison is `compare` with the same
selections, metric choice, seed and alpha as the CLI (and `comparison_verdicts`, which the CLI's
--json calls too); the forest rows, distributions, Pareto points and failure modes come from
evalcore.analysis.comparison.forest / distributions / failure_modes, the judges from means.metric_judges.
What it returns is plain JSON data (NaN as None), embedded in the report as it is, so a reader
or a test can check the page against the CLI.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Sequence

import pandas as pd

from evalcore import __version__
from evalcore.analysis.comparison import compare as C
from evalcore.analysis.charts import distributions as G
from evalcore.analysis.questions import failure_modes as FM
from evalcore.analysis.read.correctness import class_metrics
from evalcore.analysis.comparison.forest import forest_rows
from evalcore.analysis.comparison.judge_noise import comparison_noise
from evalcore.analysis.comparison.trial_noise import comparison_trials
from evalcore.analysis.labels.judge_labels import judges_text
from evalcore.analysis.runs.leaderboard import key_metric_names, metric_names
from evalcore.analysis.runs.means import metric_judges
from evalcore.analysis.comparison.verdict import default_tested_metrics, pair_verdict
from evalcore.store import RunStore

N_REGRESSED = 10  # the questions that regressed most, per candidate, shown with both answers
ANSWER_CHARS = 1500  # a text longer than this is cut, and the cut is said (keeps the file under 5 MB)
PARETO_AXES = (("cost_per_query_usd", "cost per query (USD)"), ("latency_p50_ms", "latency p50 (ms)"))


def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """A frame as JSON-ready rows: NaN becomes None, numpy scalars become Python numbers."""
    if df is None or df.empty:
        return []
    out = []
    for row in df.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v.item() if hasattr(v, "item") else v)
                    for k, v in row.items()})
    return out


def short_names(sels: Sequence[C.Selection]) -> dict[str, str]:
    """How a comparison names its systems (the CLI's rule): the method alone when every selection
    is a method of one run, else `run_id:method`."""
    one_run = len({s.run_id for s in sels}) == 1
    return {s.label: (s.method if one_run else s.label) for s in sels}


def comparison_verdicts(store: RunStore, result: C.Comparison, short: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per candidate: the headline, the comparability warnings and the verdict lines, as
    `evalcore compare --json` prints them under "verdicts" (it calls this too)."""
    base = result.baseline.label
    out = {}
    for cand in result.candidates:
        rows = result.table[result.table.candidate == cand.label]
        said = pair_verdict(store, rows, base, cand.label, short[base], short[cand.label], result.alpha)
        out[cand.label] = {"summary": said.summary, "warnings": list(said.warnings),
                           "lines": said.lines.to_dict("records")}
    return out


def comparison_record(store: RunStore, result: C.Comparison, short: dict[str, str]) -> dict[str, Any]:
    """The comparison as `evalcore compare --json` prints it and the report embeds it:
    Comparison.to_dict(), the verdicts, and each metric row's verdict outcome (so a reader of
    the rows alone sees "not compared" on a metric with 0 pairs, not a bare significant: false)."""
    out = result.to_dict()
    out["verdicts"] = comparison_verdicts(store, result, short)
    said = {(cand, line["metric"]): line["outcome"] for cand, v in out["verdicts"].items() for line in v["lines"]}
    for row in out["metrics"]:
        row["outcome"] = said.get((row["candidate"], row["metric"]))
    noise = comparison_noise(store, result)
    if noise:  # a side scored with --repeats K: the judge's noise (runs with K = 1: the record as before)
        out["judge_noise"] = noise
    trials = comparison_trials(store, result)
    if trials:  # a side asked with --trials T: its spread over trials (runs without: the record as before)
        out["trials"] = trials
    return out


def _judges_by_metric(store: RunStore, keys: Sequence[str], metrics: Sequence[str] | None = None) -> dict[str, str]:
    """metric -> the judges of its values on any of the systems, in words ('' when computed)."""
    rows = metric_judges(store, keys, metrics)
    return {m: judges_text(g.judge_id) for m, g in rows.groupby("metric")}


def _judged(store: RunStore, keys: Sequence[str], metrics: Sequence[str]) -> str:
    """Who judged the values behind a chart, in words ('' when none was judged)."""
    rows = metric_judges(store, keys, list(metrics))
    return judges_text(rows.judge_id) if len(rows) else ""


def _cut(text: Any) -> dict[str, Any]:
    """An answer for the report: its text up to ANSWER_CHARS and how many characters were cut."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return {"text": None, "cut": 0}
    text = str(text)
    return {"text": text[:ANSWER_CHARS], "cut": max(0, len(text) - ANSWER_CHARS)}


def _regressed(store: RunStore, base: str, cand: str, metric: str, n: int) -> list[dict[str, Any]]:
    """The n questions whose `metric` regressed most (Compare's `changed_questions`), each with
    the question, the ground truth and both systems' answers (Compare's `answers`)."""
    rows = C.changed_questions(store, base, cand, metric, "regressed").head(n)
    out = []
    for r in rows.itertuples(index=False):
        said = C.answers(store, (base, cand), r.question_id)
        by_system = dict(zip(said["system"], said["answer"]))
        first = said.iloc[0] if len(said) else None
        out.append({"question_id": r.question_id, "base": r.base, "cand": r.cand, "delta": r.delta,
                    "question": _cut(first["question"] if first is not None else r.question),
                    "ground_truth": _cut(first["ground_truth"] if first is not None else None),
                    "base_answer": _cut(by_system.get(base)), "cand_answer": _cut(by_system.get(cand))})
    return records(pd.DataFrame(out)) if out else []


def _pareto(store: RunStore, keys: Sequence[str], metrics: Sequence[str]) -> dict[str, Any]:
    """Charts' Pareto fronts: the default quality metric (the first key metric scored) against
    cost per query and p50 latency, each front by distributions.front_2d."""
    quality = next((m for m in key_metric_names() if m in metrics), metrics[0] if metrics else None)
    if quality is None:
        return {"quality": None, "points": [], "fronts": {}}
    points = G.frontier_points(store, keys, quality)
    fronts = {}
    for x, _ in PARETO_AXES:
        known = len(points) and x in points and not points[x].isna().all()
        pts = G.front_2d(points, x) if known else points.iloc[0:0]
        fronts[x] = [] if len(pts) and (pts[x] == 0).all() else records(pts)  # all zero: nothing reported it
    return {"quality": quality, "quality_judged_by": _judged(store, keys, [quality]),
            "points": records(points), "fronts": fronts}


def report_data(store: RunStore, refs: Sequence[str], metrics: Sequence[str] | None = None, seed: int = 0,
                alpha: float = C.ALPHA, n_regressed: int = N_REGRESSED) -> dict[str, Any]:
    """Everything the report shows, for RUN[:METHOD] selections (the first is the baseline), with
    `evalcore compare`'s metric choice: the metrics given, else the default tested set."""
    sels = C.parse_selections(store, refs)
    keys = [s.label for s in sels]
    wanted = list(dict.fromkeys(metrics)) if metrics else default_tested_metrics(store, keys)
    result = C.compare(store, sels, metrics=wanted, seed=seed, alpha=alpha)
    short = short_names(sels)
    comparison = comparison_record(store, result, short)
    scored = metric_names(store, sorted({s.run_id for s in sels}))  # the Charts page's metric list
    forests = {}
    for cand in result.candidates:
        rows = result.table[result.table.candidate == cand.label]
        lines = pd.DataFrame(comparison["verdicts"][cand.label]["lines"])  # the verdict's own lines
        forests[cand.label] = records(forest_rows(rows, lines))
    regressed_on = wanted[0] if wanted else None
    return {
        "evalcore_version": __version__,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": seed, "tested_metrics": wanted, "names": short,
        "compare": comparison,
        "judged_by": _judges_by_metric(store, keys, wanted),
        "forest": forests,
        "grades": {"counts": records(G.label_counts(store, keys, "grade")),
                   "judged_by": _judged(store, keys, G.grade_metrics())},
        "answer_classes": {"counts": records(G.label_counts(store, keys, "answer_class")),
                           "judged_by": _judged(store, keys, class_metrics())},
        "failure_modes": {"counts": records(FM.failure_modes(store, tuple(keys))),
                          "judged_by": _judged(store, keys, FM.input_metrics())},
        "pareto": _pareto(store, keys, scored),
        "regressed": {"metric": regressed_on, "judged_by": _judged(store, keys, [regressed_on]) if regressed_on else "",
                      "by_candidate": {c.label: _regressed(store, result.baseline.label, c.label, regressed_on, n_regressed)
                                       for c in result.candidates} if regressed_on else {}},
    }
