"""Quality gates for CI: thresholds on metric means and significant regressions vs a baseline.

Thresholds come from the eval config: `thresholds: {recall@5: 0.6, latency_ms: {max: 2000}}`;
a bare number is a minimum. Every method of the run must meet every threshold; a metric the
run did not score is a failure (a gate must not pass because a metric silently went missing).
A regression is a paired comparison (evalcore.analysis.compare: bootstrap CI, randomization or
McNemar test, Holm-corrected) of the same method on the same questions that is significantly
worse than the baseline run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.store import RunStore


@dataclass
class GateOutcome:
    run_id: str
    store_root: str
    means: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    regressions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def assert_ok(self) -> None:
        if self.failures:
            raise AssertionError("RAG quality gate failed:\n  " + "\n  ".join(self.failures))


def _bounds(spec: Any) -> tuple[float | None, float | None]:
    if isinstance(spec, dict):
        unknown = set(spec) - {"min", "max"}
        if unknown:
            raise ValueError(f"threshold keys must be min/max, got {sorted(unknown)}")
        return spec.get("min"), spec.get("max")
    return float(spec), None


def method_means(store: RunStore, run_id: str) -> dict[str, dict[str, float]]:
    """{method: {metric: mean over scored values}}: evalcore.analysis.means.per_method_means, the
    means `evalcore show` prints (one definition)."""
    from evalcore.analysis.means import per_method_means

    return per_method_means(store, run_id)


def check_gate(store: RunStore, run_id: str, thresholds: dict[str, Any], baseline: str | None = None,
               alpha: float = 0.05) -> GateOutcome:
    outcome = GateOutcome(run_id=run_id, store_root=str(store.root), means=method_means(store, run_id))
    methods = store.manifest(run_id).methods
    for metric, spec in thresholds.items():
        low, high = _bounds(spec)
        for method in methods:
            value = outcome.means.get(method, {}).get(metric)
            if value is None:
                outcome.failures.append(f"{method}: {metric} was not scored (cannot check the threshold)")
            elif low is not None and value < low:
                outcome.failures.append(f"{method}: {metric} = {value:.4f} is below the minimum {low}")
            elif high is not None and value > high:
                outcome.failures.append(f"{method}: {metric} = {value:.4f} is above the maximum {high}")
    if baseline:
        _regressions(store, outcome, methods, store.resolve(baseline), list(thresholds) or None, alpha)
    return outcome


def _regressions(store: RunStore, outcome: GateOutcome, methods: list[str], baseline: str,
                 metrics: list[str] | None, alpha: float) -> None:
    from evalcore.analysis.compare import Selection, compare

    base_methods = set(store.manifest(baseline).methods)
    for method in methods:
        if method not in base_methods:
            continue
        table = compare(store, [Selection(baseline, method), Selection(outcome.run_id, method)],
                        metrics=metrics, alpha=alpha).table
        for row in table.to_dict("records"):
            worse = row["delta"] < 0 if row["higher_is_better"] else row["delta"] > 0
            if row["significant"] and worse:
                outcome.regressions.append(row)
                outcome.failures.append(
                    f"{method}: {row['metric']} regressed vs baseline {baseline} "
                    f"({row['mean_a']:.4f} -> {row['mean_b']:.4f}, p_holm={row['p_holm']:.4g}, "
                    f"n={row['n_pairs']})")
