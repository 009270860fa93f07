"""The human-corrected win rate of a candidate over a baseline, from pairwise preference labels.

Why: "which answer is better?" is answered by people's preferences on a random sample of
questions; the judge's pairwise preference on every question makes that sample go further, as a
judge's values do for a mean (evalcore.analysis.labels.corrected). The win rate is the mean of
the human preference, 1 when the candidate's answer is preferred, 0 when the baseline's is, 0.5
for a tie; PPI++ (evalcore.analysis.labels.ppi_estimate.estimate, with every rule that keeps its
numbers honest: withheld below 50 labels, never a zero-width interval, inside [0, 1]) corrects
it with the judge's preference as the prediction.

The judge's preference is the judge-side Δ of a metric, per question: the candidate wins when its
value of the metric is better than the baseline's (in the metric's direction), ties when they are
equal, loses otherwise (1 / 0.5 / 0). evalcore has no judge that compares two answers directly, so
every metric of the comparison gives one row: the same human labels, corrected with that metric's
preference. Values come from the comparison's own reader (analysis.comparison.side_by_side), so
the judge side is the main table's. A row's population is the pair's questions with the metric's
value on both sides; its labelled questions are the pair's verified random sample among them (a
random sample of a population restricted by something other than the labels stays one).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels.label_counts import MIN_LABELS, count_text, interval, num  # noqa: F401  (the CLI reads them here)
from evalcore.analysis.labels.ppi_estimate import ALPHA, SHOWN, estimate
from evalcore.schemas.labels import Preference
from evalcore.stats import ppi_mean as P
from evalcore.stats.bounded_mean import honest_interval
from evalcore.store import RunStore

COLUMNS = ["candidate", "metric", "status", "n_labelled", "N", "judge_win_rate", "judge_low", "judge_high",
           "judge_verdict", "corrected", "ci_low", "ci_high", "corrected_verdict", "verdict_changes",
           "classical_low", "classical_high", "rho", "width_ratio", "implied_width_ratio", "lam"]
_NO_DIFFERENCE = "no clear difference"


def judge_preference(base: np.ndarray, cand: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Per question, the candidate's win by the metric's values: 1 better, 0.5 equal, 0 worse."""
    diff = np.asarray(cand, dtype=float) - np.asarray(base, dtype=float)
    diff = diff if higher_is_better else -diff
    return np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5))


def human_preference(labels: Sequence[Any], cand_is_a: bool) -> np.ndarray:
    """Per label (A, B or tie of the pair), the candidate's win: 1 preferred, 0.5 tie, 0 not."""
    won = Preference.A.value if cand_is_a else Preference.B.value
    return np.array([0.5 if x == Preference.TIE.value else 1.0 if x == won else 0.0 for x in labels], dtype=float)


def _verdict(lo: Any, hi: Any) -> str | None:
    """Better when the whole 95% CI is above one half, worse when below (unadjusted); None when
    there is no interval (withheld: JSON says null where the text says nothing)."""
    if num(lo) == "–" or num(hi) == "–":
        return None
    return "better" if lo > 0.5 else "worse" if hi < 0.5 else _NO_DIFFERENCE


def _judge_side(yhat: np.ndarray, alpha: float) -> tuple[float | None, float | None, float | None]:
    """The judge's win rate over every question of the row, with its (honest) 95% CI."""
    if not len(yhat):
        return None, None, None
    normal = P.classical_mean_ci(yhat, alpha) if len(yhat) >= 2 else (float("nan"),) * 2
    lo, hi = honest_interval(normal, yhat, alpha)
    return float(yhat.mean()), lo, hi


def win_rate(store: RunStore, base: Sequence[str], cand: Sequence[str], metric: str, alpha: float = ALPHA,
             values: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The judge's and the corrected win rate of `cand` over `base` (run_id, method) by `metric`.
    `values`: (question keys, baseline values, candidate values), as side_by_side gives them."""
    from evalcore.analysis.comparison.side_by_side import side_by_side
    from evalcore.analysis.read.catalog import higher_is_better

    pair, flipped = PF.pair_of(base, cand)
    if values is None:
        both = side_by_side(store, ":".join(base), ":".join(cand), [metric])
        values = (both.question_id, both.a[metric], both.b[metric])
    keys, a, b = values
    judged = pd.DataFrame({"key": keys, "yhat": judge_preference(a, b, higher_is_better(metric)),
                           "valued": ~(np.isnan(np.asarray(a, float)) | np.isnan(np.asarray(b, float)))})
    rows = PF.answers(store, pair).merge(judged[judged.valued], on="key", how="inner")
    lab = (rows.sampled & rows.label.notna()).to_numpy()
    yhat = rows.yhat.to_numpy(float)
    # the candidate is the pair's A exactly when the two were named the other way round (pair_of)
    y = human_preference(rows.label[lab], cand_is_a=flipped)
    est = estimate(y, yhat[lab], yhat[~lab], alpha=alpha)
    judge, j_lo, j_hi = _judge_side(yhat, alpha)
    judge_verdict, corrected_verdict = _verdict(j_lo, j_hi), _verdict(est["ci_low"], est["ci_high"])
    way = lambda v: v if v in ("better", "worse") else "neither"  # noqa: E731
    return {"candidate": f"{cand[0]}:{cand[1]}", "metric": metric, "status": est["status"],
            "n_labelled": est["n_labelled"], "N": est["N"], "judge_win_rate": judge, "judge_low": j_lo,
            "judge_high": j_hi, "judge_verdict": judge_verdict, "corrected": est["corrected"],
            "ci_low": est["ci_low"], "ci_high": est["ci_high"], "corrected_verdict": corrected_verdict,
            "verdict_changes": corrected_verdict is not None and way(judge_verdict) != way(corrected_verdict),
            **{k: est[k] for k in ("classical_low", "classical_high", "rho", "width_ratio", "implied_width_ratio",
                                   "lam")}}


def win_rates(store: RunStore, base: Sequence[str], cands: Sequence[Sequence[str]],
              metrics: dict[str, Sequence[str]] | Sequence[str], alpha: float = ALPHA) -> pd.DataFrame:
    """One row per candidate x metric whose pair with `base` holds randomly sampled preference
    labels (COLUMNS). `metrics`: the metrics to read the judge's preference from, one list for
    every candidate or per candidate ('run:method' -> list), as the comparison's table has them."""
    from evalcore.analysis.comparison.side_by_side import side_by_side

    have = PF.labelled_pairs(store, runs=[base[0], *(c[0] for c in cands)])
    rows = []
    for cand in cands:
        if tuple(cand) == tuple(base) or PF.pair_of(base, cand)[0] not in have:
            continue
        label = f"{cand[0]}:{cand[1]}"
        names = list(dict.fromkeys(metrics.get(label, ()) if isinstance(metrics, dict) else metrics))
        if not names:
            continue
        both = side_by_side(store, ":".join(base), label, names)
        for metric in names:
            rows.append(win_rate(store, base, cand, metric, alpha, (both.question_id, both.a[metric], both.b[metric])))
    return pd.DataFrame(rows, columns=COLUMNS)


def shown(row: dict[str, Any] | pd.Series, digits: int = 3) -> str:
    """The one-cell text of a corrected win rate: '0.620 [0.540, 0.700]' or 'n of 50 labels'."""
    if row["status"] not in SHOWN or num(row["corrected"]) == "–":
        return count_text(row["n_labelled"], row["N"])
    census = f" (all {int(row['N'])} labelled)" if row["N"] and row["n_labelled"] == row["N"] else ""
    return f"{num(row['corrected'], digits)} {interval(row['ci_low'], row['ci_high'], digits)}{census}"


def judge_shown(row: dict[str, Any] | pd.Series, digits: int = 3) -> str:
    """The judge's win rate with its CI: '0.580 [0.480, 0.680]' ('–' when nothing is paired)."""
    if num(row["judge_win_rate"]) == "–":
        return "–"
    return f"{num(row['judge_win_rate'], digits)} {interval(row['judge_low'], row['judge_high'], digits)}"
