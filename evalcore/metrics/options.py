"""Scoring options: the settings metrics read from `ScoringContext.options`, by name.

Options reach the metrics from three places: Python (`score_run(..., options=...)`), a run
config's `score_options:` mapping, and `evalcore score --options-file FILE` / `--option KEY=VALUE`.
Why a closed list: a misspelt key (`dont_know_phrase`) would otherwise be ignored, the metric
would quietly use its default, and the user would believe the setting applied. The list is the
registry's: each metric's spec declares the options it reads (MetricSpec.options, typed
MetricOptions), plus the few of the pass itself (metrics/base.PASS_OPTIONS); a metric
registered later brings its own. Each value is checked against its declared type here, before
any work starts; the finer rules (known keys, positive budgets) stay with the metric that
reads the value, which knows its shape.
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping

from pydantic import StrictBool, StrictInt, TypeAdapter, ValidationError

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import PASS_OPTIONS, MetricOption


def scoring_options() -> dict[str, MetricOption]:
    """Every option a scoring pass accepts, by name: the pass's own, then each registered
    metric's (the docs page of a metric's group explains its options)."""
    from evalcore.metrics.registry import metric_options

    return {**{o.name: o for o in PASS_OPTIONS}, **metric_options()}


def check_options(options: Mapping[str, Any], source: str = "scoring options") -> dict[str, Any]:
    """`options` as a dict, or an EvalcoreError naming the unknown key (with the nearest known
    one) or the value its option's type or check refuses."""
    if not isinstance(options, Mapping):
        raise EvalcoreError(f"{source}: expected a mapping of option names to values, got {options!r}")
    known = scoring_options()
    for key, value in options.items():
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise EvalcoreError(f"{source}: unknown option {key!r}{hint}; known: {', '.join(sorted(known))}")
        if value is not None:  # None: not given, the default applies
            _check_value(known[key], value, source)
    return dict(options)


def _check_value(option: MetricOption, value: Any, source: str) -> None:
    """The value against the option's type (lax, but StrictBool and StrictInt are strict: "no"
    is not false), then against its own check."""
    if option.type is not Any:
        try:
            TypeAdapter(option.type).validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "".join(f"[{p!r}]" for p in first["loc"])
            why = "" if option.type in (StrictBool, StrictInt) else \
                f" ({first['msg'][:1].lower()}{first['msg'][1:]}{' at ' + where if where else ''})"
            raise EvalcoreError(f"{source}: option {option.name!r} must be {_type_name(option.type)}, "
                                f"got {value!r}{why}") from None
    problem = option.check(value) if option.check else None
    if problem:
        raise EvalcoreError(f"{source}: option {option.name!r} {problem}, got {value!r}")


def _type_name(kind: Any) -> str:
    """A declared type in words: `dict[str, list[str]]` as written."""
    if kind is StrictBool:
        return "true or false"
    if kind is StrictInt:
        return "an integer"
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` from the command line; VALUE is read as YAML, so `match_snippets=false`,
    `budgets={latency: 5000}` and `dont_know_phrases={en: [no idea]}` all work."""
    import yaml

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise EvalcoreError(f"--option {text!r}: expected KEY=VALUE")
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise EvalcoreError(f"--option {text!r}: the value is not valid YAML ({exc})") from exc
