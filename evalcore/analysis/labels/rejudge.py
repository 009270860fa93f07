"""What `evalcore rejudge` reports: per judged metric, the old and new means and how often the
two judges disagree (rate and Cohen's kappa), by evalcore.metrics.judge_agreement.agreement — the
spot check's definition, not a copy of it.

Why here: it is a number a person reads, so it is computed in the analysis layer; the command
only reads the values before and after re-scoring and prints this.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from evalcore.store import RunStore, query_df


def judged_values(store: RunStore, run_id: str, metrics: Sequence[str] | None = None,
                  judged_only: bool = True) -> pd.DataFrame:
    """(method, question_id, metric, value) of a run, NaN kept; only values a judge produced
    unless `judged_only` is False."""
    return query_df(store, """SELECT method, question_id, metric, value FROM metrics
                        WHERE run_id = $run AND ($m IS NULL OR list_contains($m, metric))
                          AND (NOT $judged OR judge_id IS NOT NULL)""",
              {"run": run_id, "m": list(metrics) if metrics is not None else None, "judged": judged_only},
              runs=[run_id])


def rejudge_summary(old: pd.DataFrame, new: pd.DataFrame, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per metric: new_mean (every scored new value), old_mean (the old values that have a new
    one), n_paired, disagreement_rate and kappa (reliability.agreement on the pairs)."""
    from evalcore.metrics.judge_agreement import agreement

    before = {(r.method, r.question_id, r.metric): r.value for r in old.itertuples(index=False)}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = new[new["metric"] == name]
        pairs = [(before[(r.method, r.question_id, name)], r.value) for r in rows.itertuples(index=False)
                 if (r.method, r.question_id, name) in before]
        agreed = agreement(name, pairs)
        kept = [(a, b) for a, b in pairs if a == a and b == b]
        vals = rows["value"].dropna()
        out[name] = {"new_mean": float(vals.mean()) if len(vals) else None,
                     "old_mean": (sum(a for a, _ in kept) / len(kept)) if kept else None,
                     "n_paired": agreed["n"], "disagreement_rate": agreed["disagreement_rate"],
                     "kappa": agreed["kappa"]}
    return out
