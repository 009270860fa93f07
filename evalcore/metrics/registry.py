"""The explicit metric registry: name -> MetricSpec, from a fixed list of imported modules.

Each module in METRIC_MODULES exposes `SPECS: list[MetricSpec]`; a new metric module is
imported here and added to the tuple (no module-name strings, no import magic). Code outside
the package (a plugin, a test's toy metric) adds one with `register_metric`.

A metric's facts live on its spec (direction, scale, importance, key metric, decides-correct,
group, needs, what a person labels, its part in the failure diagnosis, the leaderboard's score,
its options); the functions below are the views other layers read, computed from the
registry each time, so a metric registered later shows up everywhere.
"""

from __future__ import annotations

from evalcore.metrics import abstention, citation, composites, lexical, performance, retrieval, semantic
from evalcore.metrics.judged import specs as judged
from evalcore.metrics.base import LABEL_KINDS, PASS_OPTIONS, MetricOption, MetricSpec

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
    _check_fits(spec, [s for s in METRICS.values() if s.name != spec.name])
    METRICS[spec.name] = spec
    return previous


def _check_fits(spec: MetricSpec, others: list[MetricSpec]) -> None:
    """Refuse a spec whose facts contradict the registered ones: a second metric ranking the
    leaderboard, or an option another metric (or the pass) declares with another type or default."""
    ranking = [s.name for s in others if s.ranks_systems]
    if spec.ranks_systems and ranking:
        raise ValueError(f"metric {spec.name!r}: the leaderboard is already ranked by {ranking[0]!r}")
    declared = {o.name: (o, "the scoring pass") for o in PASS_OPTIONS}
    for other in others:
        for option in other.options:
            declared.setdefault(option.name, (option, f"metric {other.name!r}"))
    for option in spec.options:
        known, where = declared.get(option.name, (option, ""))
        if known != option:
            raise ValueError(f"metric {spec.name!r}: option {option.name!r} is declared differently by {where} "
                             "(declare one MetricOption and share it)")


def only_builtin() -> bool:
    """Whether every registered spec is one of the package's own (METRIC_MODULES' SPECS): a
    child process (a large live run's scoring worker) builds the same registry only then; a
    spec added, replaced or removed here (`register_metric`, `unregister_metric`) is so in this
    process alone."""
    builtin = {id(spec) for module in METRIC_MODULES for spec in module.SPECS}
    return {id(spec) for spec in METRICS.values()} == builtin


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


def labelled_metrics(kind: str | None = None) -> tuple[str, ...]:
    """The metrics a person labels as claims, contexts, answer classes or grades (of `kind`
    only, if given), in LABEL_KINDS order, then MetricSpec.label_rank, then registration."""
    labelled = [s for s in METRICS.values() if s.label_kind is not None and kind in (None, s.label_kind)]
    return tuple(s.name for s in sorted(labelled, key=lambda s: (LABEL_KINDS.index(s.label_kind), s.label_rank)))


def retrieval_miss_evidence() -> tuple[str, ...]:
    """The metrics whose value near 0 says nothing relevant was retrieved, first read first
    (MetricSpec.retrieval_miss_evidence; analysis/questions/failure_modes.py)."""
    evidence = [s for s in METRICS.values() if s.retrieval_miss_evidence is not None]
    return tuple(s.name for s in sorted(evidence, key=lambda s: (s.retrieval_miss_evidence, s.name)))


def unfaithful_evidence() -> str | None:
    """The metric whose value below 1 says the answer is unfaithful to its contexts, the first
    by MetricSpec.unfaithful_evidence, or None when no registered metric says so."""
    evidence = [s for s in METRICS.values() if s.unfaithful_evidence is not None]
    return min(evidence, key=lambda s: (s.unfaithful_evidence, s.name)).name if evidence else None


def ranking_metric() -> str:
    """The metric whose mean ranks systems on the leaderboard (MetricSpec.ranks_systems)."""
    ranking = next((s.name for s in METRICS.values() if s.ranks_systems), None)
    if ranking is None:
        raise LookupError("no registered metric ranks systems (MetricSpec.ranks_systems)")
    return ranking


def metric_options() -> dict[str, MetricOption]:
    """Every option a registered metric reads, by name (one declaration each, see register_metric)."""
    return {o.name: o for s in METRICS.values() for o in s.options}
