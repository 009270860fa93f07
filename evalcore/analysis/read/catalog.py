"""What can be scored: the metric registry as plain data (names, groups, needs, directions).

Why here: the Launch page offers these choices and the `metrics` command lists them; pages read
only through the analysis layer, so the registry reaches them as data, not as code.
"""

from __future__ import annotations


def metric_names() -> list[str]:
    from evalcore.metrics.registry import METRICS

    return sorted(METRICS)


def metric_groups() -> list[str]:
    from evalcore.metrics.registry import groups

    return sorted(groups())


def judged_metrics(names: list[str]) -> list[str]:
    """Those of `names` that need a judge."""
    from evalcore.metrics.registry import METRICS

    return [m for m in names if m in METRICS and "judge" in METRICS[m].needs]


def direction(metric: str) -> tuple[bool, bool | None]:
    """(higher_is_better, binary) from the registry; an unregistered metric counts as
    higher-is-better with binary None (decided from its values)."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    return (True, None) if spec is None else (bool(spec.higher_is_better), spec.binary)


def higher_is_better(metric: str) -> bool:
    """The metric's direction (see `direction`)."""
    return direction(metric)[0]


def repeats_problem(text: str) -> str | None:
    """Why `text` is not a K for `score --repeats K` (the Launch page's box), in one sentence;
    None when it is one. ASCII digits only (a full-width "３" is no number the CLI takes), then
    the option's own rule (evalcore.metrics.options: a whole number from 1 to the maximum)."""
    from evalcore.errors import EvalcoreError
    from evalcore.metrics.options import check_options

    if not (text.isascii() and text.isdigit()):
        return f"{text!r} is not a whole number (K is 1 or more)"
    try:
        check_options({"judge_repeats": int(text)}, "--repeats")
    except EvalcoreError as exc:
        return str(exc)
    return None


def pass_fail(metric: str) -> bool | None:
    """Whether each answer's value of `metric` is a pass or a fail (pass@T, pass^T over trials):
    a metric declared binary (exact_match, answer_correct, is_error...) or one whose value is an
    answer class counted right or not (answer_class: 1 = CORRECT). Grades and scores are not.
    None for an unregistered metric: decided from its values (all 0 or 1)."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    return None if spec is None else bool(spec.binary or spec.scale == "class")
