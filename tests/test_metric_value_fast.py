"""schemas/metric_value_fast.py: a MetricValue built without validation is exactly the one
validation builds, and whatever validation would refuse or convert is validated as before."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from evalcore.schemas import MetricValue
from evalcore.schemas.bounds import MAX_JSON_DEPTH
from evalcore.schemas.metric_value_fast import _plain, metric_value

BASE = {"run_id": "r1", "method": "m", "question_id": "q1", "metric": "token_f1", "value": 0.5, "group": "lexical"}


def _nested(depth: int):
    node: object = 1
    for _ in range(depth):
        node = [node]
    return node


CASES = [
    {},
    {"version": "2", "reason": "why", "judge_id": "j", "label": "A", "trial": 3},
    {"details": {"n": 1, "list": [1, 2, {"x": None}], "text": "é"}},
    {"value": float("nan"), "reason": "no contexts"},
    {"value": -0.0},
    {"value": 1e308},
    # converted by validation: validated, so stored as validation stores them
    {"value": 1},
    {"value": True},
    {"value": np.float64(0.25)},
    {"value": "0.75"},
    {"trial": True},
    {"details": {"deep": _nested(MAX_JSON_DEPTH - 2)}},
    {"details": {"matched": ["a", 1, 2.5, None, True], "empty": []}},  # a flat list: not walked
    {"details": {"deep": [_nested(MAX_JSON_DEPTH - 3)]}},  # a list that nests: walked
    # refused by validation: refused the same way
    {"value": float("nan")},
    {"value": float("nan"), "reason": ""},
    {"value": float("inf"), "reason": "x"},
    {"value": -math.inf},
    {"value": None},
    {"run_id": 7},
    {"reason": 3},
    {"label": b"A"},
    {"trial": -1},
    {"trial": 1.5},
    {"details": {1: "int key"}},
    {"details": [1, 2]},
    {"details": {"deep": _nested(MAX_JSON_DEPTH + 5)}},
    {"details": {"deep": [1, "a", _nested(MAX_JSON_DEPTH)]}},  # a list nesting too deep, after scalars
    {"details": {"pair": (1, 2)}},  # a tuple: validation keeps it? whatever it does, the same
    {"unknown": 1},
]


def _outcome(build, fields):
    try:
        value = build(**fields)
    except ValidationError as exc:
        return "refused", [(e["type"], e["loc"]) for e in exc.errors()]
    dumped = value.model_dump()
    dumped.pop("computed_at")
    return "built", {k: (type(v).__name__, repr(v)) for k, v in dumped.items()}, sorted(value.model_fields_set)


@pytest.mark.parametrize("change", CASES, ids=[repr(c)[:60] for c in CASES])
def test_fast_path_and_validation_agree(change):
    fields = {**BASE, **change}
    if "value" in change and change["value"] is None:
        fields["value"] = None
    assert _outcome(metric_value, dict(fields)) == _outcome(MetricValue, dict(fields))


def test_the_fast_path_is_taken_for_plain_fields_only():
    assert _plain({**BASE, "details": {"a": 1}, "reason": None})
    assert not _plain({**BASE, "value": 1})
    assert not _plain({**BASE, "value": np.float64(0.5)})
    assert not _plain({**BASE, "value": float("nan")})


def test_details_are_copied_as_validation_copies_them():
    details = {"a": 1}
    value = metric_value(**BASE, details=details)
    details["a"] = 2
    assert value.details == {"a": 1}


def test_fields_left_out_get_what_validation_gives_them_fresh_each_time():
    """The defaults the fast path fills in itself: a new details dict per value (never one
    shared by two values) and the time the value was made, as the model's factories give."""
    from datetime import datetime, timezone

    before = datetime.now(timezone.utc)
    first, second = metric_value(**BASE), metric_value(**BASE)
    checked = MetricValue(**BASE)
    assert first.details == {} and first.details is not second.details
    first.details["x"] = 1
    assert second.details == {}
    assert before <= first.computed_at <= second.computed_at <= checked.computed_at
    assert first.computed_at.tzinfo is not None and type(first.computed_at) is type(checked.computed_at)
    assert first.model_fields_set == checked.model_fields_set == set(BASE)
    assert first.model_dump(exclude_unset=True) == checked.model_dump(exclude_unset=True)


def _internals(value: MetricValue) -> tuple:
    """Everything pydantic keeps on an instance, `computed_at` aside: the fields in their order,
    with types, and the bookkeeping model_dump, copies and equality read."""
    fields = {k: (type(v), v) for k, v in vars(value).items() if k != "computed_at"}
    return (list(vars(value)), fields, value.__pydantic_fields_set__, value.__pydantic_extra__,
            value.__pydantic_private__, type(value.computed_at))


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "model_construct"])
def test_the_instance_built_is_the_one_validation_builds(direct, monkeypatch):
    """The fast path sets an instance's internals itself (`_DIRECT`, true for MetricValue with
    this pydantic) or through model_construct: either way the same as validation's, down to the
    order of the fields, and it behaves the same (equality, copies, pickling, assignment)."""
    import pickle

    import evalcore.schemas.metric_value_fast as fast

    assert fast._DIRECT  # the direct path is the one taken: this test holds it to validation
    monkeypatch.setattr(fast, "_DIRECT", direct)
    for change in ({}, {"details": {"a": [1, 2]}, "reason": "r", "trial": 2}, {"version": "3", "label": "B"}):
        fields = {**BASE, **change}
        built, checked = metric_value(**dict(fields)), MetricValue(**dict(fields))
        assert _internals(built) == _internals(checked)
        same_time = built.model_copy(update={"computed_at": checked.computed_at})
        assert same_time == checked and pickle.loads(pickle.dumps(same_time)) == checked
        assert built.model_dump_json(exclude={"computed_at"}) == checked.model_dump_json(exclude={"computed_at"})
        built.label = "C"  # assignment on a built instance works as on a validated one
        assert built.label == "C" and "label" in built.model_fields_set
