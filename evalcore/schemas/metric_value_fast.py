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
    # every field, in the model's order, as validation lays them out: a field left out gets its
    # default, or a fresh value of its factory (a new dict, the time now)
    values = _TEMPLATE.copy()  # (every field, in the model's order: updating a key keeps its place)
    values.update(fields)
    for name, factory in _FACTORIES:
        if name not in fields:
            values[name] = factory()
    if not _DIRECT:
        return MetricValue.model_construct(_fields_set=given, **values)
    # what model_construct does for this model, without its per-field walk through aliases and
    # defaults (half the fast path's CPU, pydantic 2.12): `_DIRECT` says the model has none of
    # what that walk is for (checked when this module is imported)
    built = _new(MetricValue)
    _setattr(built, "__dict__", values)
    _setattr(built, "__pydantic_fields_set__", given)
    _setattr(built, "__pydantic_extra__", None)
    _setattr(built, "__pydantic_private__", None)
    return built


def _plain(fields: dict[str, Any]) -> bool:
    keys = fields.keys()
    if not (keys <= _ALLOWED and _REQUIRED <= keys):
        return False
    get = fields.get
    for name in _TEXT:  # (version may be left out: its default is text)
        if type(get(name, "")) is not str:
            return False
    for name in _OPTIONAL_TEXT:
        text = get(name)
        if text is not None and type(text) is not str:
            return False
    value = fields["value"]
    if type(value) is not float or math.isinf(value) or (math.isnan(value) and not get("reason")):
        return False
    trial = get("trial", 0)
    if type(trial) is not int or trial < 0:
        return False
    details = get("details", _NO_DETAILS)
    if type(details) is not dict:
        return False
    for key, item in details.items():
        if type(key) is not str:
            return False
        kind = type(item)
        if kind in _SCALARS or (kind is list and _flat(item)):
            continue
        if json_depth_over(item, MAX_JSON_DEPTH - 1):
            return False
    return True


def _flat(items: list[Any]) -> bool:
    """A list of scalars (matched keywords, numbers found): two levels deep, within any bound."""
    for item in items:
        if type(item) not in _SCALARS:
            return False
    return True


_FIELDS = MetricValue.model_fields
# every field in the model's order, with its plain default (None, "1", 0: immutable, so shared
# as pydantic shares them; None stands for a required field, always given, and for a factory's)
_TEMPLATE = {n: None if f.is_required() or f.default_factory is not None else f.default for n, f in _FIELDS.items()}
_FACTORIES = tuple((n, f.default_factory) for n, f in _FIELDS.items() if f.default_factory is not None)
_ALLOWED = frozenset({*_TEXT, *_OPTIONAL_TEXT, "value", "details", "trial"})
_REQUIRED = frozenset({*_TEXT[:5], "value"})  # (version has a default)
_SCALARS = frozenset({str, int, float, bool, type(None)})  # a details value that cannot nest
_NO_DETAILS: dict[str, Any] = {}
_new = MetricValue.__new__
_setattr = object.__setattr__
# the model has nothing model_construct's walk is for: no alias, no extra fields kept, not a
# root model, no post-init hook, no private attributes (otherwise model_construct is called)
_DIRECT = (all(f.alias is None and f.validation_alias is None for f in _FIELDS.values())
           and MetricValue.model_config.get("extra") != "allow" and not MetricValue.__pydantic_root_model__
           and not MetricValue.__pydantic_post_init__ and not MetricValue.__private_attributes__
           and _ALLOWED == frozenset(_FIELDS) - {"computed_at"} and MAX_JSON_DEPTH >= 2)
