"""The system's own sampling, from its T trials per question (`evalcore run --trials T`).

Why: one answer per question is one draw of a system that samples (its LLM at a temperature,
ties in its retriever). With T trials per question, this module says how much a question's
answers vary, per metric and system:
- within-question SD: the pooled SD of a question's trial values (evalcore.stats.repeats.within,
  the judge repeats' figure, read over trials);
- flip rate: the share of questions whose trials disagree (their labels where the metric states
  one, else their values);
- for pass/fail metrics (catalog.pass_fail: declared binary, or an answer class counted right;
  an unregistered metric whose values are all 0 or 1): pass@T, the share of questions that
  pass at least once in T trials, and pass^T, the share that pass every time (the unbiased
  estimators of evalcore.stats.pass_at_k; at k = T they are these plain shares).

How trials enter compare's CIs and tests: already, by the pairing. Each question's value is
the mean of its trials (side_by_side), so the bootstrap and the randomization test resample
questions, each carrying its trials whole: the CI is clustered by question, and n is the
questions. This module only describes the spread. Systems without trials have nothing here:
every function returns nothing for them, and `compare`, `show`, the pages and the report print
exactly what they printed before trials existed.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.comparison.judge_noise import each_candidate
from evalcore.analysis.comparison.side_by_side import split_key
from evalcore.analysis.read.catalog import direction, pass_fail
from evalcore.analysis.read.trial_values import trial_counts, trial_frame
from evalcore.stats.pass_at_k import pass_rates
from evalcore.stats.repeats import Answer, within

COLUMNS = ["system", "metric", "trials", "n_questions", "within_sd", "flip_rate", "pass_fail", "pass_at_t",
           "pass_all_t", "n_pass_questions"]


def _none(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def is_pass_fail(metric: str, values: np.ndarray) -> bool:
    """Whether `metric` counts as pass/fail here: so declared (catalog.pass_fail), or, for an
    unregistered metric, every value 0 or 1; either way only when its values are 0 or 1."""
    declared = pass_fail(metric)
    zero_one = bool(np.all((values == 0) | (values == 1))) if values.size else False
    return zero_one and declared is not False


def _passed(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Which 0/1 values are passes: 1 where higher is better, 0 where lower is (is_error 0)."""
    return values >= 0.5 if higher_is_better else values < 0.5


def metric_spread(group: pd.DataFrame, metric: str, trials: int) -> dict[str, Any]:
    """One system's figures for one metric from its trial rows (trial_frame's columns)."""
    answers, tries = [], []
    valued = group["value"].to_numpy(dtype=float)
    binary = is_pass_fail(metric, valued[~np.isnan(valued)])
    hib = direction(metric)[0]
    for _, rows in group.groupby("question_id", sort=True):
        values = rows["value"].to_numpy(dtype=float)
        labels = tuple(x if isinstance(x, str) else None for x in rows["label"])
        answers.append(Answer(tuple(values), labels))
        kept = values[~np.isnan(values)]
        if binary and kept.size:
            tries.append((int(kept.size), int(_passed(kept, hib).sum())))
    w = within(answers)
    rates = pass_rates(tries, trials) if binary else None
    return {"metric": metric, "trials": trials, "n_questions": len(answers), "within_sd": _none(w.within_sd),
            "flip_rate": _none(w.flip_rate), "pass_fail": binary,
            "pass_at_t": _none(rates.pass_at_k) if rates else None,
            "pass_all_t": _none(rates.pass_all_k) if rates else None,
            "n_pass_questions": rates.n_questions if rates else None}


def systems_spread(store, keys: Sequence[str], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per system with trials (of `keys`, `run_id:method`) x metric: T, the questions measured,
    the within-question SD, the flip rate, and pass@T / pass^T for pass/fail metrics. Empty
    when no system has trials."""
    counts = trial_counts(store, keys)
    tried = [k for k in keys if counts[k] > 1]
    if not tried:
        return pd.DataFrame(columns=COLUMNS)
    frame = trial_frame(store, tried, metrics)
    rows = [{"system": system, **metric_spread(group, metric, counts[system])}
            for (system, metric), group in frame.groupby(["system", "metric"], sort=True)]
    return pd.DataFrame(rows, columns=COLUMNS)


def run_spread(store, run_id: str) -> pd.DataFrame:
    """systems_spread for every method of one run (`evalcore show`, the Questions page), with a
    `method` column; empty for a run without trials."""
    methods = store.manifest(run_id).methods
    table = systems_spread(store, [f"{run_id}:{m}" for m in methods])
    return table.assign(method=[split_key(s)[1] for s in table["system"]])


def pair_trials(store, base: str, cand: str, metrics: Sequence[str]) -> list[dict[str, Any]]:
    """Per tested metric of a paired comparison where either side has trials: each side's T,
    within-question SD, flip rate, and pass@T / pass^T (pass/fail metrics); [] when neither has."""
    table = systems_spread(store, [base, cand], metrics)
    if table.empty:
        return []
    by = {(r["system"], r["metric"]): r for r in table.to_dict("records")}
    counts = trial_counts(store, [base, cand])
    out = []
    for metric in metrics:
        a, b = by.get((base, metric), {}), by.get((cand, metric), {})
        if not (a or b):
            continue
        row = {"baseline": base, "candidate": cand, "metric": metric, "pass_fail": bool(a.get("pass_fail") or
                                                                                         b.get("pass_fail"))}
        for side, got, key in (("baseline", a, base), ("candidate", b, cand)):
            row[f"trials_{side}"] = counts[key]
            for name in ("n_questions", "within_sd", "flip_rate", "pass_at_t", "pass_all_t"):
                row[f"{name}_{side}"] = got.get(name)
        out.append(row)
    return out


def comparison_trials(store, result: Any) -> list[dict[str, Any]]:
    """pair_trials for every candidate of a Comparison over its tested metrics (`compare --json`
    and the report put it under "trials"; [] when no side has trials)."""
    return each_candidate(store, result, pair_trials)
