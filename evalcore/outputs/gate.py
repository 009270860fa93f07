"""Quality gates for CI: thresholds on metric means and significant regressions vs a baseline.

Thresholds come from the eval config: `thresholds: {recall@5: 0.6, latency_ms: {max: 2000}}`;
a bare number is a minimum. Every method of the run must meet every threshold; a metric the
run did not score is a failure (a gate must not pass because a metric silently went missing).
A regression is a paired comparison (evalcore.analysis.comparison.compare: bootstrap CI, randomization or
McNemar test, Holm-corrected) of the same method on the same questions that is significantly
worse than the baseline run. The comparison must have compared something (the rule of
evalcore.analysis.comparison.regression_gate, as `evalcore compare --fail-on-regression` applies it): a
method the baseline lacks, a metric with no value on a side, ids that pair on no question, or
fewer pairs than `min_paired` of the questions with a value on either side fail the gate. A bound
that is not a finite number in plain decimal notation, or lies beyond the metric's range, is
refused (a NaN compares false with everything; min 10 on a 0-1 score can never be met):
regression_gate.threshold_bounds, the rule the eval config applies when it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalcore.analysis.comparison.regression_gate import (
    DEFAULT_MIN_PAIRED,
    check_alpha,
    check_min_paired,
    coverage_problem,
    threshold_bounds,
)
from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import match_name
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


def method_means(store: RunStore, run_id: str) -> dict[str, dict[str, float]]:
    """{method: {metric: mean over scored values}}: evalcore.analysis.runs.means.per_method_means, the
    means `evalcore show` prints (one definition)."""
    from evalcore.analysis.runs.means import per_method_means

    return per_method_means(store, run_id)


def check_gate(store: RunStore, run_id: str, thresholds: dict[str, Any], baseline: str | None = None,
               alpha: float = 0.05, min_paired: float = DEFAULT_MIN_PAIRED) -> GateOutcome:
    bounds = {metric: threshold_bounds(metric, spec) for metric, spec in thresholds.items()}  # all refused up front
    alpha, min_paired = check_alpha(alpha, "regression_alpha"), check_min_paired(min_paired, "min_paired")
    outcome = GateOutcome(run_id=run_id, store_root=str(store.root), means=method_means(store, run_id))
    methods = store.manifest(run_id).methods
    collided = _id_collisions(store, run_id, outcome)
    for metric, (low, high) in bounds.items():
        for method in methods:
            value = outcome.means.get(method, {}).get(metric)
            if value is None:
                outcome.failures.append(f"{method}: {metric} was not scored (cannot check the threshold)")
            elif low is not None and value < low:
                outcome.failures.append(f"{method}: {metric} = {value:.4f} is below the minimum {low}")
            elif high is not None and value > high:
                outcome.failures.append(f"{method}: {metric} = {value:.4f} is above the maximum {high}")
    if baseline:
        methods = [m for m in methods if m not in collided]  # already failed, naming the ids
        _regressions(store, outcome, methods, store.resolve(baseline), list(thresholds) or None, alpha, min_paired)
    return outcome


def _id_collisions(store: RunStore, run_id: str, outcome: GateOutcome) -> set[str]:
    """A method whose answers hold two ids that are one under the id rule (a run stored before
    it) fails the gate, naming them: its means count a question twice, and which copy a
    comparison should pair is unknown (evalcore.analysis.read.id_collisions). Returns those methods."""
    from evalcore.analysis.read.id_collisions import colliding_ids, refusal

    found = colliding_ids(store, run_id, questions=False)
    methods = sorted({c.method for c in found if c.method is not None})
    for method in methods:
        outcome.failures.append(f"{method}: " + refusal([c for c in found if c.method == method]))
    return set(methods)


def _regressions(store: RunStore, outcome: GateOutcome, methods: list[str], baseline: str,
                 metrics: list[str] | None, alpha: float, min_paired: float) -> None:
    from evalcore.analysis.comparison.compare import Selection, compare

    base_methods = store.manifest(baseline).methods
    for method in methods:
        base_method = match_name(method, base_methods)  # the id rule: an older run's "m " is m
        if base_method is None:
            outcome.failures.append(f"{method}: baseline {baseline} has no method {method!r} "
                                    f"(it has: {', '.join(base_methods) or 'none'}); nothing to compare it with")
            continue
        try:
            table = compare(store, [Selection(baseline, base_method), Selection(outcome.run_id, method)],
                            metrics=metrics, alpha=alpha, gated=metrics or ()).table
        except EvalcoreError as exc:  # an unknown metric name: the gate cannot check it
            outcome.failures.append(f"{method}: cannot compare with baseline {baseline}: {exc}")
            continue
        if table.empty:
            outcome.failures.append(f"{method}: compared nothing with baseline {baseline}: no metric is "
                                    "scored on both sides")
        for row in table.to_dict("records"):
            problem = coverage_problem(row, min_paired)
            if problem:
                outcome.failures.append(f"{method}: {row['metric']} vs baseline {baseline} {problem}")
            worse = row["delta"] < 0 if row["higher_is_better"] else row["delta"] > 0
            if row["significant"] and worse:
                outcome.regressions.append(row)
                outcome.failures.append(
                    f"{method}: {row['metric']} regressed vs baseline {baseline} "
                    f"({row['mean_a']:.4f} -> {row['mean_b']:.4f}, p_holm={row['p_holm']:.4g}, "
                    f"n={row['n_pairs']})")
