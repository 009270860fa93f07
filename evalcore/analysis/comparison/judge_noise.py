"""The judge's own noise, from the K verdicts per answer of `evalcore score --repeats K`.

Why: a judged value is one draw of a sampling judge (docs/judges.md, "Repeated verdicts"), and
until repeats were stored nobody could say how much of a Δ the judge's coin flips make. Per
metric this module gives the within-answer SD and the flip rate of each system (`show`, and
each side of `compare`), and for a comparison the share of the Δ's variance that is judge noise
and the SD of the Δ judge noise alone produces (evalcore.stats.repeats has the formulas).

How it enters compare's CIs and tests: it already has. The stored value of an answer is the
mean of its K repeats, and compare resamples questions over those means, whose spread holds the
judge's variance divided by K (the law of total variance; docs/comparison.md, "Three sources of
uncertainty"). This module only measures the part, it changes no interval. Runs scored with
K = 1 have no repeats: every function here returns nothing for them, and `compare`, `show` and
the report print exactly what they printed before repeats existed.

Repeats are read through the value they belong to (`metric_repeats.value_at` = the value's
`computed_at`): a later pass that replaced the value with K = 1 leaves old repeats behind, which
are then nobody's.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.comparison.side_by_side import side_by_side, split_key
from evalcore.schemas.ids import id_sql
from evalcore.stats.normal import interval_z
from evalcore.stats.repeats import Answer, delta_noise, judge_variance, within
from evalcore.store import query_df

Answers = dict[str, Answer]  # question_id -> its repeats


def repeat_frame(store, keys: Sequence[str], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """(system, question_id, metric, repeat, value, label) of the current repeats of the systems
    `keys` (`run_id:method`), question ids under the id rule, in order. Empty when none has any."""
    runs = sorted({split_key(k)[0] for k in keys})
    only = "AND list_contains($metrics, r.metric)" if metrics is not None else ""
    params: dict[str, Any] = {"keys": list(keys)}
    if metrics is not None:
        params["metrics"] = list(metrics)
    return query_df(store, f"""
        SELECT r.run_id || ':' || r.method AS system, {id_sql("r.question_id")} AS question_id, r.metric,
               r.repeat, r.value, r.label
        FROM metric_repeats r JOIN metrics m
          ON m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
         AND m.metric = r.metric AND m.computed_at = r.value_at
        WHERE list_contains($keys, r.run_id || ':' || r.method) {only}
        ORDER BY system, metric, question_id, repeat""", params, runs=runs)


def answers_of(frame: pd.DataFrame) -> dict[tuple[str, str], Answers]:
    """{(system, metric): {question_id: Answer}} from a repeat_frame."""
    out: dict[tuple[str, str], Answers] = {}
    for (system, metric, qid), group in frame.groupby(["system", "metric", "question_id"], sort=False):
        k = int(group["repeat"].max()) + 1
        values = [math.nan] * k
        labels: list[str | None] = [None] * k
        for r, v, label in zip(group["repeat"], group["value"], group["label"]):
            values[int(r)] = float(v) if v is not None else math.nan
            labels[int(r)] = label if isinstance(label, str) else None
        out.setdefault((system, metric), {})[qid] = Answer(tuple(values), tuple(labels))
    return out


def _none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def noise_table(store, run_id: str) -> pd.DataFrame:
    """Per method x metric of a run with repeats: K, the answers measured, the judge's
    within-answer SD and flip rate (`evalcore show`). Empty for a run scored with K = 1."""
    methods = query_df(store, "SELECT DISTINCT method FROM metric_repeats WHERE run_id = ?", [run_id], runs=[run_id])
    keys = [f"{run_id}:{m}" for m in sorted(methods["method"])]
    columns = ["method", "metric", "k", "n_answers", "within_sd", "flip_rate"]
    if not keys:  # scored with K = 1 (most runs): nothing to read, and no database over no run to build
        return pd.DataFrame(columns=columns)
    rows = []
    for (system, metric), answers in sorted(answers_of(repeat_frame(store, keys)).items()):
        w = within(list(answers.values()))
        rows.append({"method": split_key(system)[1], "metric": metric, "k": w.k, "n_answers": w.n_answers,
                     "within_sd": _none(w.within_sd), "flip_rate": _none(w.flip_rate)})
    return pd.DataFrame(rows, columns=columns)


def _side(answers: Answers | None) -> dict[str, Any]:
    w = within(list(answers.values())) if answers else None
    return {"k": w.k if w else 1, "within_sd": _none(w.within_sd) if w else None,
            "flip_rate": _none(w.flip_rate) if w else None}


def pair_noise(store, base: str, cand: str, metrics: Sequence[str],
               confidence: float = 0.95) -> list[dict[str, Any]]:
    """Per metric of a paired comparison where either side has repeats: each side's K, SD and
    flip rate, the judge's share of the Δ's variance, and `noise_delta`: the half-width of the
    interval (at `confidence`) of the Δ judge noise alone would produce on these questions."""
    by_key = answers_of(repeat_frame(store, [base, cand], metrics))
    wanted = [m for m in metrics if (base, m) in by_key or (cand, m) in by_key]
    if not wanted:
        return []
    both = side_by_side(store, base, cand, wanted)
    out = []
    for metric in wanted:
        a_side, b_side = by_key.get((base, metric)), by_key.get((cand, metric))
        keep = both.both(metric)
        qids = both.question_id[keep]
        diffs = both.b[metric][keep] - both.a[metric][keep]
        jv = [judge_variance((a_side or {}).get(q), (b_side or {}).get(q)) for q in qids]
        dn = delta_noise(diffs, jv)
        a, b = _side(a_side), _side(b_side)
        out.append({"baseline": base, "candidate": cand, "metric": metric, "n_pairs": dn.n,
                    "k_baseline": a["k"], "k_candidate": b["k"],
                    "within_sd_baseline": a["within_sd"], "within_sd_candidate": b["within_sd"],
                    "flip_rate_baseline": a["flip_rate"], "flip_rate_candidate": b["flip_rate"],
                    "judge_share": _none(dn.judge_share),
                    "noise_delta": _none(interval_z(confidence) * dn.noise_sd),
                    "measured_on": [side for side, got in (("baseline", a_side), ("candidate", b_side)) if got]})
    return out


def comparison_noise(store, result: Any) -> list[dict[str, Any]]:
    """pair_noise for every candidate of a Comparison, over its tested metrics (`compare --json`
    and the report put it under "judge_noise"; [] when no side has repeats)."""
    return each_candidate(store, result, pair_noise)


def each_candidate(store, result: Any, pair: Any) -> list[dict[str, Any]]:
    """pair(store, baseline, candidate, metrics)'s rows for every candidate of a Comparison, over
    the metrics the comparison tested for it: the judge-noise and the trials rows of `compare`."""
    out: list[dict[str, Any]] = []
    base = result.baseline.label
    for cand in result.candidates:
        metrics = list(result.table.loc[result.table.candidate == cand.label, "metric"])
        out.extend(pair(store, base, cand.label, metrics))
    return out


def halves(answers: Answers) -> tuple[np.ndarray, np.ndarray, int]:
    """(mean of repeats 0..h-1, mean of repeats h..K-1) per question with a value in both
    halves (h = K // 2), in question_id order, and K: the A/A split of one system's repeats."""
    k = max((len(a.values) for a in answers.values()), default=0)
    h = k // 2
    first, second = [], []
    for qid in sorted(answers):
        v = np.asarray(answers[qid].values, dtype=float)
        lo, hi = v[:h], v[h:]
        if h and np.isfinite(lo).any() and np.isfinite(hi).any():
            first.append(float(np.nanmean(lo)))
            second.append(float(np.nanmean(hi)))
    return np.asarray(first), np.asarray(second), k


def aa_noise_band(answers: Answers, confidence: float = 0.95) -> float | None:
    """The half-width of the interval of the Δ judge noise alone produces between two
    judgings of these answers with K repeats each: z · sqrt(2 · mean s² / (K · n))."""
    variances = [a.variance() for a in answers.values()]
    used = [v for v in variances if not math.isnan(v)]
    k = max((len(a.values) for a in answers.values()), default=0)
    if not used or k < 2:
        return None
    return interval_z(confidence) * math.sqrt(2 * float(np.mean(used)) / (k * len(used)))
