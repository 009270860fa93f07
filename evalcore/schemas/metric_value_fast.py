"""MetricValue built without pydantic's validation when its fields are plainly what the model
would accept unchanged, and with it otherwise.

Why: a scoring pass builds one MetricValue per (answer, metric): 22 per answer with the default
metrics, and validating each took ~a quarter of the scoring's CPU (~0.3 ms an answer; in a live
run the scoring child's CPU is taken from the asking on a 2-core machine: bench/bench_runner.py).
The fields a metric returns are almost always plain: str ids, a float, a small dict of details.

The fast path accepts exactly what validation would accept and keep as given: exact `str` and
`float` (not a subclass, an int or text that pydantic would convert), None where allowed, a
`dict` with `str` keys no deeper than the bound (evalcore/schemas/bounds.py), a trial that is a
non-negative `int`, a finite value or a NaN with a reason. Anything else is validated as
before, so an invalid value is refused with the same error (tests/test_metric_value_fast.py
compares the two on plain, converted and invalid inputs).
"""

from __future__ import annotations

import math
from typing import Any

from evalcore.schemas.bounds import MAX_JSON_DEPTH, json_depth_over
from evalcore.schemas.results import MetricValue

_TEXT = ("run_id", "method", "question_id", "metric", "group", "version")
_OPTIONAL_TEXT = ("reason", "judge_id", "label")


def metric_value(**fields: Any) -> MetricValue:
    """MetricValue(**fields), validated by pydantic only when a field is not plainly valid."""
    if not _plain(fields):
        return MetricValue(**fields)
    given = set(fields)  # what validation records as set (model_dump(exclude_unset=True) reads it)
    if "details" in fields:
        fields["details"] = dict(fields["details"])  # validation copies it: the value never aliases the metric's
    # every field passed: for one left out, model_construct asks whether its default factory
    # takes the validated data, which inspects the factory's signature each time (a third of
    # the fast path's CPU, pydantic 2.12)
    for name, default in _DEFAULTS.items():
        if name not in fields:
            fields[name] = default
    for name, factory in _FACTORIES.items():
        if name not in fields:
            fields[name] = factory()
    return MetricValue.model_construct(_fields_set=given, **fields)


def _plain(fields: dict[str, Any]) -> bool:
    keys = fields.keys()
    if not (keys <= _ALLOWED and _REQUIRED <= keys):
        return False
    if any(type(fields[k]) is not str for k in _TEXT if k in fields):
        return False
    if any(fields.get(k) is not None and type(fields[k]) is not str for k in _OPTIONAL_TEXT):
        return False
    value = fields["value"]
    if type(value) is not float or math.isinf(value) or (math.isnan(value) and not fields.get("reason")):
        return False
    trial = fields.get("trial", 0)
    if type(trial) is not int or trial < 0:
        return False
    details = fields.get("details", {})
    if type(details) is not dict or any(type(k) is not str for k in details):
        return False
    return not any(json_depth_over(item, MAX_JSON_DEPTH - 1) for item in details.values())


_FIELDS = MetricValue.model_fields
_FACTORIES = {n: f.default_factory for n, f in _FIELDS.items() if f.default_factory is not None}
# the plain defaults (None, "1", 0: immutable, so shared as pydantic shares them)
_DEFAULTS = {n: f.default for n, f in _FIELDS.items() if f.default_factory is None and not f.is_required()}
_ALLOWED = frozenset({*_TEXT, *_OPTIONAL_TEXT, "value", "details", "trial"})
_REQUIRED = frozenset({*_TEXT[:5], "value"})  # (version has a default)
