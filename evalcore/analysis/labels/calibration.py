"""Judge calibration against randomly sampled human labels: which judge to trust for which metric.

Why separate from agreement (annotations.py): agreement counts every label, hand-picked ones
included, which over-represents the verdicts people chose to look at. Calibration uses only
answers drawn at random, so its confusion matrix, kappa and bias describe the judge on the
population a PM reads about. Per judge x metric of one run:

- items: the judge's verdict vs the person's on each labelled item of sampled answers (claims,
  contexts, classes, grades): a confusion matrix and Cohen's kappa with a percentile bootstrap
  95% CI (seeded, items resampled);
- answers: bias = mean(judge - human) over sampled, fully labelled answers with its 95% CI
  (the classical interval, evalcore.stats.ppi_mean), the correlation rho, and a reliability diagram for graded scores
  (judge value in five bins: mean judge vs mean human per bin).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels.corrected import ALPHA, sampled_systems
from evalcore.analysis.labels.ppi_estimate import bias_interval, corr
from evalcore.analysis.read.sql import run_methods
from evalcore.schemas.labels import RETRACTED
from evalcore.stats.agreement import cohen_kappa
from evalcore.store import RunStore, query_df

N_BOOT = 500
BINS = 5

COLUMNS = ["method", "judge", "metric", "n_answers", "n_items", "kappa", "kappa_low", "kappa_high", "bias", "bias_low",
           "bias_high", "rho", "advice"]


def kappa_ci(judge: list[str], human: list[str], n_boot: int = N_BOOT, seed: int = 0) -> tuple[Any, Any, Any]:
    """Cohen's kappa and a percentile bootstrap 95% CI over items (Nones when undefined)."""
    k = cohen_kappa(judge, human)
    if k is None or len(judge) < 5:
        return k, None, None
    rng = np.random.default_rng(seed)
    j, h = np.asarray(judge, dtype=object), np.asarray(human, dtype=object)
    boots = [cohen_kappa(list(j[i]), list(h[i])) for i in (rng.integers(0, len(j), len(j)) for _ in range(n_boot))]
    boots = [b for b in boots if b is not None]
    if not boots or min(boots) == max(boots):
        # a resampling that cannot move kappa (one rater used one label: kappa is 0 by
        # construction) says nothing about its uncertainty; a [0, 0] interval would claim certainty
        return k, None, None
    return k, float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def _judges(store: RunStore, run_id: str, metric: str) -> dict[tuple[str, str], str]:
    """(method, question_id) -> judge label of the metric's values."""
    out = query_df(store, "SELECT method, question_id, coalesce(judge_id, '(no judge recorded)') AS judge FROM metrics "
                    "WHERE run_id = $run AND metric = $metric", {"run": run_id, "metric": metric}, runs=[run_id])
    return {(m, q): j for m, q, j in zip(out.method, out.question_id, out.judge)}


def sampled_pairs(store: RunStore, run_id: str, metric: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, answers) of sampled answers over the run's methods, each row with its method and
    judge: items: method, judge, judge_label, label; answers: method, judge, judge_value, human."""
    kind = U.unit(metric).kind
    judge_of = _judges(store, run_id, metric)
    items, answers = [], []
    for method in run_methods(store, run_id):
        ans = U.answers(store, run_id, method, metric)
        ans = ans[ans.sampled]
        if ans.empty:
            continue
        labels = U.newest_labels(store, run_id, method, kind)
        its = U.label_items(store, run_id, method, metric, with_text=False).merge(
            labels[["question_id", "target_ref", "label"]], on=["question_id", "target_ref"])
        its = its[its.question_id.isin(set(ans.question_id)) & (its.label != RETRACTED)]
        its = its.assign(method=method,
                         judge=[judge_of.get((method, q), "(no judge recorded)") for q in its.question_id])
        items.append(its[["method", "judge", "judge_label", "label"]])
        done = ans[ans.human.notna()]
        answers.append(pd.DataFrame({"method": method,
                                     "judge": [judge_of.get((method, q), "(no judge recorded)") for q in done.question_id],
                                     "judge_value": done.judge.to_numpy(), "human": done.human.to_numpy()}))
    cat = lambda frames, cols: pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)  # noqa: E731
    return (cat(items, ["method", "judge", "judge_label", "label"]),
            cat(answers, ["method", "judge", "judge_value", "human"]))


def _norm(x: Any) -> str:
    return str(x).strip().casefold()


def _advice(kappa: Any, bias_low: Any, bias_high: Any, rho: Any, n: int) -> str:
    """One plain reading of the row (thresholds: Landis & Koch's 'substantial' kappa 0.6; a bias
    CI that holds 0; rho 0.5, where PPI++ needs ~13% fewer labels)."""
    if n < 30:
        return "too few to say"
    unbiased = bias_low is not None and bias_low <= 0 <= bias_high
    if unbiased and (kappa is None or kappa >= 0.6):
        return "trust its mean"
    if rho is not None and rho >= 0.5:
        return "biased: use corrected"
    return "weak: rely on labels"


def _row(it: pd.DataFrame, an: pd.DataFrame, verdicts: bool = True) -> dict[str, Any]:
    """kappa [CI] of the items, bias [CI] and rho of the answers, and the reading, of one group.
    `verdicts=False` (0-1 ratings): no kappa, agreement between categories does not apply to a
    number (the judge's 0.5634 against a person's 0.6 is not a disagreement)."""
    k = klo = khi = None
    if verdicts:
        k, klo, khi = kappa_ci([_norm(x) for x in it.judge_label], [_norm(x) for x in it.label])
    bias = blo = bhi = rho = None
    if len(an) >= 1:
        diff = an.judge_value.to_numpy(float) - an.human.to_numpy(float)
        bias = float(diff.mean())
        blo, bhi = bias_interval(diff, ALPHA)  # never zero width: a judge agreeing 50 times is not exact
        blo, bhi = (None if x != x else x for x in (blo, bhi))
        rho = corr(an.human.to_numpy(float), an.judge_value.to_numpy(float))
    return {"n_answers": len(an), "n_items": len(it), "kappa": k, "kappa_low": klo, "kappa_high": khi,
            "bias": bias, "bias_low": blo, "bias_high": bhi, "rho": rho, "advice": _advice(k, blo, bhi, rho, len(an))}


def summary(store: RunStore, run_id: str, per_method: bool = False) -> pd.DataFrame:
    """Per judge x labellable metric with sampled labels (`per_method`: per method x judge x
    metric, as `evalcore labels summary` and the Runs page show it): kappa [CI], bias [CI], rho,
    advice. `method` is None in the per-judge rows (several methods pooled)."""
    rows = []
    if not any(r == run_id for r, _ in sampled_systems(store, runs=[run_id])):
        return pd.DataFrame(rows, columns=COLUMNS)
    keys = ["method", "judge"] if per_method else ["judge"]
    for metric in U.estimable_metrics(store, run_id):
        items, answers = sampled_pairs(store, run_id, metric)
        groups = sorted(set(map(tuple, items[keys].to_numpy())) | set(map(tuple, answers[keys].to_numpy())))
        for group in groups:
            pick = lambda df: df[(df[keys] == pd.Series(group, index=keys)).all(axis=1)]  # noqa: E731
            rows.append({"method": group[0] if per_method else None, "judge": group[-1], "metric": metric,
                         **_row(pick(items), pick(answers), U.unit(metric).kind != "metric")})
    return pd.DataFrame(rows, columns=COLUMNS)


def runs_summary(store: RunStore, run_ids: Sequence[str]) -> pd.DataFrame:
    """summary(per_method=True) of every run among `run_ids` with randomly sampled labels, with a
    run_id column first (the Runs page's judge calibration table)."""
    have = {r for r, _ in sampled_systems(store)}
    parts = [summary(store, run_id, per_method=True).assign(run_id=run_id)
             for run_id in dict.fromkeys(run_ids) if run_id in have]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["run_id", *COLUMNS])
    out = pd.concat(parts, ignore_index=True)
    return out[["run_id", *COLUMNS]]


def confusion(store: RunStore, run_id: str, metric: str, judge: str | None = None) -> pd.DataFrame:
    """Judge label (rows) x human label (columns) counts over sampled items."""
    items, _ = sampled_pairs(store, run_id, metric)
    if judge is not None:
        items = items[items.judge == judge]
    if items.empty:
        return pd.DataFrame()
    return pd.crosstab(items.judge_label.rename("judge"), items.label.rename("human"))


def reliability(store: RunStore, run_id: str, metric: str, judge: str | None = None, bins: int = BINS) -> pd.DataFrame:
    """Reliability diagram data: judge value in `bins` equal bins of [0, 1]; per bin n, mean judge
    value, mean human value (a calibrated judge sits on the diagonal)."""
    _, answers = sampled_pairs(store, run_id, metric)
    if judge is not None:
        answers = answers[answers.judge == judge]
    if answers.empty:
        return pd.DataFrame(columns=["bin", "n", "judge_mean", "human_mean"])
    v = answers.judge_value.to_numpy(float)
    idx = np.minimum((np.clip(v, 0, 1) * bins).astype(int), bins - 1)
    out = answers.assign(bin=idx).groupby("bin").agg(n=("human", "size"), judge_mean=("judge_value", "mean"),
                                                    human_mean=("human", "mean")).reset_index()
    out["bin"] = [f"{b / bins:.1f}–{(b + 1) / bins:.1f}" for b in out["bin"]]
    return out


def is_binary(metric: str) -> bool:
    """Metrics whose items are two-way verdicts (a 2x2 confusion matrix)."""
    return U.unit(metric).kind in ("claim", "context")


def is_graded(metric: str) -> bool:
    """Metrics with a graded answer-level score (a reliability diagram says more than a matrix)."""
    return U.unit(metric).kind not in ("answer_class",)
