"""Human-corrected means and deltas: the judge's numbers, de-biased by randomly sampled labels.

Why: every judged mean a person reads is the judge's, and judges are biased (the heuristic one by
design). Prediction-powered inference (Angelopoulos et al. 2023; PPI++, Angelopoulos, Duchi &
Zrnic 2023) combines the judge's value on every answer with human values on a uniform random
sample into an estimate of the *human* mean with a valid confidence interval; PPI++ tunes how much
it leans on the judge (lambda), so it is never much wider than the labels alone and narrower when
the judge tracks people. The estimate from arrays, and the rules that keep its numbers honest at
any size, are evalcore.analysis.labels.ppi_estimate's; this module assembles its inputs from the store
(evalcore.analysis.labels.label_units) and reports them. One function feeds the CLI and every page.

Inputs per system x metric: Y = human values of the n sampled, fully labelled answers, Yhat = the
judge's values of the same answers, Yhat_unlabeled = the judge's values of the other N - n answers.
Below MIN_LABELS sampled answers no estimate is shown ("n of 50 labels": every estimator
under-covers there), unless the labels are the whole population (n = N): its human mean is exact.

Paired delta (Compare): on questions both systems answered, D = human_b - human_a where the same
question is labelled on both sides, Dhat = judge_b - judge_a; PPI++ on D estimates the human mean
difference. Assumes the doubly labelled questions are a uniform random sample of the paired ones,
which the shared seeded order (label_sampling) gives when both sides are labelled from the top.
The judge Δ shown beside it is the comparison's main table's (evalcore.analysis.comparison.compare), never a
second computation that could disagree with it.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels.label_counts import MIN_LABELS, TARGET_HALF_WIDTH, count_text, interval, num  # noqa: F401
from evalcore.analysis.labels.ppi_estimate import (  # noqa: F401  (the names pages and the CLI read here)
    ALL_LABELLED,
    ALPHA,
    COLUMNS,
    OK,
    SHOWN,
    TOO_FEW,
    corr as _corr,
    estimate,
    labels_to_target,
    withheld,
)
from evalcore.schemas.ids import canonical_id
from evalcore.store import RunStore


def sampled_systems(store: RunStore, runs: Sequence[str] | None = None) -> set[tuple[str, str]]:
    """(run, method) pairs with any randomly sampled label: the only ones worth estimating.
    `runs`: of those runs only, on their database (annotations.of_runs)."""
    from evalcore.analysis.labels.annotations import of_runs

    have = of_runs(store, "SELECT DISTINCT run_id, method FROM annotations WHERE sample_id IS NOT NULL", {}, runs)
    return set(zip(have.run_id, have.method))


def system_estimate(store: RunStore, run_id: str, method: str, metric: str, withhold: bool = True) -> dict[str, Any]:
    """The corrected mean of one system x metric from the store's sampled labels (`withhold=False`:
    a "too_few" row keeps its rough numbers, for Annotate's progress)."""
    ans = U.answers(store, run_id, method, metric)
    lab = ans.sampled & ans.human.notna()
    out = estimate(ans.loc[lab, "human"], ans.loc[lab, "judge"], ans.loc[~lab, "judge"], withhold=withhold)
    return {"method": method, "metric": metric, **out}


def corrected_means(store: RunStore, run_id: str, methods: Sequence[str] | None = None,
                    metrics: Sequence[str] | None = None, labelled_only: bool = True) -> pd.DataFrame:
    """Per method x labellable metric of a run (COLUMNS). `labelled_only`: rows with any sampled
    label (a run nobody labelled has no rows)."""
    from evalcore.analysis.read.sql import run_methods

    methods = list(methods) if methods else run_methods(store, run_id)
    sampled = sampled_metrics(store, run_id) if labelled_only else {}
    if labelled_only:
        methods = [m for m in methods if m in sampled]
        if not methods:
            return pd.DataFrame(columns=COLUMNS)
    metrics = list(metrics) if metrics else U.estimable_metrics(store, run_id)
    rows = []
    for method in methods:
        for metric in metrics:
            if labelled_only and metric not in sampled[method]:
                continue  # no sampled label: its row would show no label and be dropped (n_labelled 0)
            row = system_estimate(store, run_id, method, metric)
            if row["n_labelled"] or not labelled_only:
                rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def corrected_texts(store: RunStore, systems: Sequence[tuple[str, str]]) -> dict[str, str]:
    """'run:method' -> one line of its corrected means ('faithfulness 0.61 [0.55, 0.67]; answer_class
    12 of 50 labels'), for the systems among `systems` with any randomly sampled label."""
    wanted = set(map(tuple, systems))
    out = {}
    for run_id, method in sorted(sampled_systems(store)):  # the pages' kept whole-store database
        if (run_id, method) not in wanted:
            continue
        rows = corrected_means(store, run_id, methods=[method])
        if len(rows):
            out[f"{run_id}:{method}"] = "; ".join(f"{r['metric']} {shown(r, 2)}" for r in rows.to_dict("records"))
    return out


def shown(row: dict[str, Any] | pd.Series, digits: int = 3) -> str:
    """The one-cell text of a corrected mean: '0.612 [0.550, 0.670]', '0.667 [0.300, 0.900] (all 6
    labelled)' for a small population labelled in full, or 'n of 50 labels'."""
    if row["status"] not in SHOWN or num(row["corrected"]) == "–":
        return count_text(row["n_labelled"], row["N"])
    text = f"{num(row['corrected'], digits)} {interval(row['ci_low'], row['ci_high'], digits)}"
    return text + _census(row)


# ---- paired Δ (Compare, `compare --corrected`) ----------------------------------------------
DELTA_COLUMNS = ["candidate", "metric", "status", "n_labelled", "N", "judge_delta", "judge_low", "judge_high",
                 "judge_verdict", "judge_tested", "corrected_delta", "ci_low", "ci_high", "corrected_verdict",
                 "verdict_changes", "classical_low", "classical_high", "rho", "width_ratio", "implied_width_ratio",
                 "lam"]
MAIN_TABLE, APART = "with the main table", "apart"  # how a judge Δ's verdict was tested (judge_tested)
_NO_DIFFERENCE = "no clear difference"


def _verdict(lo: float | None, hi: float | None, higher_is_better: bool = True) -> str:
    """A corrected Δ's verdict from its CI's sign (unadjusted), in the metric's better direction."""
    if num(lo) == "–" or num(hi) == "–":
        return "–"
    if lo > 0 or hi < 0:
        return "better" if (lo > 0) == higher_is_better else "worse"
    return _NO_DIFFERENCE


def _changes(judge_verdict: str, corrected_verdict: str) -> bool:
    """Whether people's labels change the judge's finding: better / worse / neither differ."""
    if corrected_verdict == "–":
        return False
    way = lambda v: v if v in ("better", "worse") else "neither"  # noqa: E731
    return way(judge_verdict) != way(corrected_verdict)


class JudgeSide(NamedTuple):
    """One main-table row's judge Δ, CI and verdict (hashable: a page passes it to a cached call)."""

    candidate: str
    metric: str
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    outcome: str
    tested: str = MAIN_TABLE


def main_table_judge(table: pd.DataFrame, outcomes: dict[tuple[str, str], str],
                     tested: str = MAIN_TABLE) -> tuple[JudgeSide, ...]:
    """A comparison's main table (evalcore.analysis.comparison.compare's rows, with `candidate`; `outcomes`:
    (candidate, metric) -> verdict outcome) as the judge side corrected_compare takes: the
    corrected rows then show the main table's own numbers."""
    return tuple(JudgeSide(r["candidate"], r["metric"], _value(r["delta"]), _value(r.get("ci_low")),
                           _value(r.get("ci_high")), outcomes.get((r["candidate"], r["metric"])) or "–", tested)
                 for r in table.to_dict("records"))


def judge_apart(store: RunStore, base: tuple[str, str], cand: tuple[str, str], metrics: Sequence[str],
                alpha: float = ALPHA, seed: int = 0) -> dict[str, JudgeSide]:
    """metric -> judge Δ, CI and verdict for labelled metrics the main table did not test, by the
    main table's own functions (analysis.compare.compare, verdict.verdict_lines): the numbers
    `evalcore compare BASE CAND -m <these metrics>` prints (one Holm family of them)."""
    from evalcore.analysis.comparison.compare import Selection, compare
    from evalcore.analysis.comparison.verdict import verdict_lines

    if not metrics:
        return {}
    result = compare(store, [Selection(*base), Selection(*cand)], metrics=list(metrics), seed=seed, alpha=alpha,
                     with_run_level=False)
    lines = verdict_lines(result.table, "baseline", "candidate", alpha)
    outcome = dict(zip(lines.metric, lines.outcome))
    rows = main_table_judge(result.table, {(c, m): outcome.get(m, "–")
                                           for c, m in zip(result.table.candidate, result.table.metric)}, APART)
    return {r.metric: r for r in rows}


def corrected_delta(store: RunStore, base: tuple[str, str], cand: tuple[str, str], metric: str,
                    alpha: float = ALPHA, judge: JudgeSide | None = None, seed: int = 0) -> dict[str, Any]:
    """Judge Δ and corrected Δ (candidate - baseline) of one metric, paired on question id.

    The judge side is the main comparison table's (`judge`: its row, from main_table_judge; else
    computed as `compare -m METRIC` computes it), so the two can never disagree. The corrected side
    is PPI++ on per-question human differences, its verdict the CI's sign (unadjusted), with rho,
    the labels-alone CI and the measured width ratio beside it."""
    from evalcore.analysis.read.catalog import direction

    a = U.answers(store, *base, metric)
    b = U.answers(store, *cand, metric)
    # paired under the id rule (evalcore.schemas.ids), as `compare` pairs
    m = a.assign(question_id=a.question_id.map(canonical_id)).merge(
        b.assign(question_id=b.question_id.map(canonical_id)), on="question_id", suffixes=("_a", "_b"))
    dhat = (m.judge_b - m.judge_a).to_numpy(float)
    both = (m.sampled_a & m.sampled_b & m.human_a.notna() & m.human_b.notna()).to_numpy()
    d = (m.human_b - m.human_a).to_numpy(float)[both]
    est = estimate(d, dhat[both], dhat[~both], alpha=alpha, signed=True)
    if judge is None:
        judge = judge_apart(store, base, cand, [metric], alpha, seed).get(metric)
    judge_verdict = judge.outcome if judge else "–"
    corrected_verdict = _verdict(est["ci_low"], est["ci_high"], direction(metric)[0])
    return {"metric": metric, "status": est["status"], "n_labelled": est["n_labelled"], "N": est["N"],
            "judge_delta": judge.delta if judge else None, "judge_low": judge.ci_low if judge else None,
            "judge_high": judge.ci_high if judge else None, "judge_verdict": judge_verdict,
            "judge_tested": judge.tested if judge else None, "corrected_delta": est["corrected"],
            "ci_low": est["ci_low"], "ci_high": est["ci_high"], "corrected_verdict": corrected_verdict,
            "verdict_changes": _changes(judge_verdict, corrected_verdict),
            **{k: est[k] for k in ("classical_low", "classical_high", "rho", "width_ratio", "implied_width_ratio",
                                   "lam")}}


def _value(x: Any) -> float | None:
    """A table cell as JSON should carry it: None for a missing value (NaN), else a float."""
    return None if num(x, 12) == "–" else float(x)


def sampled_metrics(store: RunStore, run_id: str) -> dict[str, set[str]]:
    """method -> the metrics with any randomly sampled label on that system of the run (a rating's
    target is its metric, whole; any other label's target names its metric first:
    `faithfulness:answer:0`, `context_precision:3`, `answer_class`, `factual_accuracy`).

    One query per run, on the run's own database (the one its other reads use): a metric with
    no sampled label has no estimate to compute (label_units.sample_rows would be empty)."""
    from evalcore.store import query_df

    rows = query_df(store, "SELECT DISTINCT method, CASE WHEN target_kind = 'metric' THEN target_ref "
                           "ELSE split_part(target_ref, ':', 1) END AS metric FROM annotations "
                           "WHERE run_id = $run AND sample_id IS NOT NULL",
                    {"run": run_id}, runs=[run_id])
    out: dict[str, set[str]] = {}
    for method, metric in zip(rows.method, rows.metric):
        out.setdefault(method, set()).add(metric)
    return out


def labelled_metrics(store: RunStore, system: tuple[str, str]) -> set[str]:
    """The metrics with any randomly sampled label on this system (sampled_metrics)."""
    return sampled_metrics(store, system[0]).get(system[1], set())


def corrected_compare(store: RunStore, base: tuple[str, str], cands: Sequence[tuple[str, str]],
                      metrics: Sequence[str] | None = None, judged: Sequence[JudgeSide] | None = None,
                      alpha: float = ALPHA, seed: int = 0) -> pd.DataFrame:
    """Corrected Δ per candidate x metric with randomly sampled labels on both sides (DELTA_COLUMNS):
    every such metric unless `metrics` names some. `judged`: the main table's judge side
    (main_table_judge); a labelled metric it lacks is tested apart (judge_apart)."""
    base = tuple(base)
    have = sampled_systems(store, runs=[base[0], *(c[0] for c in cands)])
    rows = []
    for cand in map(tuple, cands):
        if base not in have or cand not in have:
            continue
        shared = set(U.estimable_metrics(store, cand[0]))
        labelled = labelled_metrics(store, base) & labelled_metrics(store, cand)
        names = [m for m in U.estimable_metrics(store, base[0]) if m in shared and m in labelled
                 and (metrics is None or m in set(metrics))]
        label = f"{cand[0]}:{cand[1]}"
        given = {j.metric: j for j in judged or () if j.candidate == label}
        given |= judge_apart(store, base, cand, [m for m in names if m not in given], alpha, seed)
        for metric in names:
            row = corrected_delta(store, base, cand, metric, alpha, given.get(metric), seed)
            rows.append({"candidate": label, **row})
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def delta_shown(row: dict[str, Any] | pd.Series, digits: int = 3) -> str:
    """The one-cell text of a corrected Δ: '+0.050 [-0.010, +0.110]' (with '(all N labelled)' for
    a small paired population labelled in full) or 'n of 50 labels'."""
    if row["status"] not in SHOWN or num(row["corrected_delta"]) == "–":
        return count_text(row["n_labelled"], row["N"])
    text = f"{num(row['corrected_delta'], digits, sign=True)} {interval(row['ci_low'], row['ci_high'], digits)}"
    return text + _census(row)


def _census(row: dict[str, Any] | pd.Series) -> str:
    """' (all 6 labelled)' when the labels are the whole population (its human value is exact)."""
    return f" (all {int(row['N'])} labelled)" if row["N"] and row["n_labelled"] == row["N"] else ""
