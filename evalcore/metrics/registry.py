"""The explicit metric registry: name -> MetricSpec, from a fixed list of imported modules.

Each module in METRIC_MODULES exposes `SPECS: list[MetricSpec]`; a new metric module is
imported here and added to the tuple (no module-name strings, no import magic). Code outside
the package (a plugin, a test's toy metric) adds one with `register_metric`.

A metric's facts live on its spec (direction, scale, importance, key metric, decides-correct,
group, needs); the functions below are the views other layers read, computed from the
registry each time, so a metric registered later shows up everywhere.
"""

from __future__ import annotations

from evalcore.metrics import abstention, citation, composites, lexical, performance, retrieval, semantic
from evalcore.metrics.judged import specs as judged
from evalcore.metrics.base import MetricSpec

METRIC_MODULES = (retrieval, citation, lexical, abstention, performance, semantic, judged, composites)

METRICS: dict[str, MetricSpec] = {}


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec | None:
    """Add `spec` to the registry (CLI, scoring and pages see it at once). A name already
    registered is an error unless `replace`; returns the spec it replaced (or None)."""
    if not isinstance(spec, MetricSpec):
        raise TypeError(f"register_metric takes a MetricSpec, not {type(spec).__name__}")
    previous = METRICS.get(spec.name)
    if previous is not None and not replace:
        raise ValueError(f"metric {spec.name!r} is already registered (pass replace=True to replace it)")
    METRICS[spec.name] = spec
    return previous


def unregister_metric(name: str) -> MetricSpec:
    """Remove a metric added with `register_metric` (a test's toy metric); returns it."""
    if name not in METRICS:
        raise KeyError(f"metric {name!r} is not registered")
    return METRICS.pop(name)


for _module in METRIC_MODULES:
    for _spec in _module.SPECS:
        if _spec.name in METRICS:
            raise RuntimeError(f"metric {_spec.name!r} registered twice ({_module.__name__})")
        register_metric(_spec)


def groups() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in METRICS.values():
        out.setdefault(spec.group, []).append(spec.name)
    return out


def key_metric_names() -> list[str]:
    """The metrics the leaderboard and pages show first, in their order (MetricSpec.key_rank)."""
    keyed = [s for s in METRICS.values() if s.key_rank is not None]
    return [s.name for s in sorted(keyed, key=lambda s: (s.key_rank, s.name))]


def correct_deciders() -> tuple[str, ...]:
    """The metrics that decide whether an answer is correct, first decider first
    (MetricSpec.decides_correct; analysis/read/correctness.py applies the rule)."""
    deciding = [s for s in METRICS.values() if s.decides_correct is not None]
    return tuple(s.name for s in sorted(deciding, key=lambda s: (s.decides_correct, s.name)))


def dont_know_deciders() -> tuple[str, ...]:
    """The metrics whose set value means the answer abstained (MetricSpec.decides_dont_know)."""
    return tuple(s.name for s in METRICS.values() if s.decides_dont_know)
