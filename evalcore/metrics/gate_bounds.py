"""What a regression gate or a threshold may say, checked before anything is compared: a gate's
`METRIC[:MIN_DELTA]`, a threshold's bounds inside the metric's range, alpha and the paired share.

Why here, below the runner and analysis: the eval config (evalcore.runner.config) refuses a bad
threshold when it is read, and the gate (evalcore.analysis.comparison.regression_gate) applies the same rule
after a comparison; both need it, and it needs only the metric registry (each metric's range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalcore.errors import EvalcoreError


@dataclass(frozen=True)
class Gate:
    """One `--fail-on-regression METRIC[:MIN_DELTA]`."""

    metric: str
    min_delta: float = 0.0


def _number(value: Any, what: str) -> float:
    """A bound given as a number or as text in plain decimal notation, finite."""
    from evalcore.schemas.numbers import NOTATION, plain_decimal

    if isinstance(value, str):
        try:
            number = plain_decimal(value)
        except ValueError:
            raise EvalcoreError(f"{what}: {value!r} is not {NOTATION}") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        raise EvalcoreError(f"{what}: {value!r} is not a number")
    if not math.isfinite(number):
        raise EvalcoreError(f"{what}: {value!r} is not a finite number (a NaN or infinite bound "
                            "would switch the gate off)")
    return number


def metric_range(metric: str) -> tuple[float, float]:
    """(lowest, highest) value `metric` can take, from its MetricSpec (`value_range`);
    unbounded for a name the registry does not know (a custom metric a side stored)."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    return spec.value_range if spec is not None else (-math.inf, math.inf)


def _shown(low: float, high: float) -> str:
    return f"[{low:g}, {high:g}]"


def parse_gate(text: str) -> Gate:
    """`METRIC[:MIN_DELTA]` -> Gate; an EvalcoreError (one line) for anything else."""
    name, sep, delta = text.partition(":")
    name = name.strip()
    what = f"--fail-on-regression {text!r}"
    if not name:
        raise EvalcoreError(f"{what}: give a metric name, e.g. token_f1 or token_f1:0.02")
    if not sep:
        return Gate(name)
    value = _number(delta, f"{what}: MIN_DELTA")
    if value < 0:
        raise EvalcoreError(f"{what}: MIN_DELTA is how much worse is tolerated; it must be 0 or more")
    low, high = metric_range(name)
    if value >= high - low:
        raise EvalcoreError(f"{what}: MIN_DELTA {value:g} is at least the width of {name}'s whole range "
                            f"{_shown(low, high)}: no change could exceed it, so the gate would be off")
    return Gate(name, value)


def threshold_bounds(metric: str, spec: Any) -> tuple[float | None, float | None]:
    """A pytest-gate threshold (`0.6`: a minimum; `{min: x, max: y}`) -> (min, max): numbers or
    plain decimal text, finite, inside the metric's range. A bound beyond the range either can
    never be met (min 10 on a 0-1 score) or never missed (max 10): refused either way. A bound
    at an end of the range (min 0, max 1) is taken: it still fails a metric that was not scored,
    and with a baseline it names the metric the regression check compares."""
    what = f"threshold {metric!r}"
    if isinstance(spec, dict):
        unknown = set(spec) - {"min", "max"}
        if unknown or not spec:
            raise EvalcoreError(f"{what}: keys must be min and/or max, got {sorted(spec)}")
        bounds = tuple(None if spec.get(k) is None else _number(spec[k], f"{what} {k}") for k in ("min", "max"))
    else:
        bounds = (_number(spec, what), None)
    low, high = metric_range(metric)
    for kind, bound in zip(("min", "max"), bounds):
        if bound is not None and not low <= bound <= high:
            raise EvalcoreError(f"{what}: {kind} {bound:g} lies beyond {metric}'s range {_shown(low, high)}, so the "
                                f"check could never {'pass' if (kind == 'min') == (bound > high) else 'fail'}")
    return bounds  # type: ignore[return-value]


def check_alpha(alpha: Any, what: str = "--alpha") -> float:
    """A significance level: a finite number strictly between 0 and 1 (however small: the
    quantiles are taken from its logarithm, evalcore.stats.normal)."""
    value = _number(alpha, what)
    if not 0 < value < 1:
        raise EvalcoreError(f"{what}: {alpha!r} must be between 0 and 1 (e.g. 0.05)")
    return value


def check_min_paired(share: Any, what: str = "--min-paired") -> float:
    """The coverage share: a finite number in (0, 1]."""
    value = _number(share, what)
    if not 0 < value <= 1:
        raise EvalcoreError(f"{what}: {share!r} must be a share in (0, 1], e.g. 0.9")
    return value
