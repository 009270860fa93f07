"""The explicit metric registry: name -> MetricSpec, collected from a fixed list of modules.

Each module listed in METRIC_MODULES exposes `SPECS: list[MetricSpec]`.
"""

from __future__ import annotations

import importlib

from evalcore.metrics.base import MetricSpec

METRIC_MODULES = [
    "evalcore.metrics.retrieval",
    "evalcore.metrics.citation",
    "evalcore.metrics.lexical",
    "evalcore.metrics.abstention",
    "evalcore.metrics.performance",
    "evalcore.metrics.semantic",
    "evalcore.metrics.judged",
    "evalcore.metrics.composites",
]


def _collect() -> dict[str, MetricSpec]:
    out: dict[str, MetricSpec] = {}
    for module_name in METRIC_MODULES:
        module = importlib.import_module(module_name)
        for spec in module.SPECS:
            if spec.name in out:
                raise RuntimeError(f"metric {spec.name!r} registered twice ({module_name})")
            out[spec.name] = spec
    return out


METRICS: dict[str, MetricSpec] = _collect()


def groups() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for spec in METRICS.values():
        out.setdefault(spec.group, []).append(spec.name)
    return out
