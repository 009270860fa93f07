"""The metric interface every metric module implements (small, explicit, typed).

A metric is a `MetricSpec`: a name as in docs/metrics/ (`recall@5`, `token_f1`, ...), its group,
a version (bump it when the formula changes), what it needs from a question/response, and a
batch function `compute(items, ctx) -> list[Score]` (one Score per item, in order).
Most metrics are per-question pure functions wrapped with `per_item`; embedding and judge
metrics use the batch form to share work (one encode pass, one judge call per answer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import StrictBool, StrictInt

from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.labels import TARGET_LABELS

Item = tuple[EvalQuestion, EvalResponse]

# What a metric may need. Scoring leaves out metrics whose needs the run cannot meet, and
# metrics needing "judge" run only when a judge is chosen.
NEEDS = frozenset({"gold", "retrieved", "ground_truth", "answer", "citations", "embeddings", "judge",
                   "keywords", "checks", "contexts"})

SCALES = ("unit", "points", "class", "open")
# What a person labels to check a judged metric: the annotation target kinds (claim, context,
# answer_class, grade), in the order the labelling pages offer them.
LABEL_KINDS = tuple(TARGET_LABELS)
CLAIM_SOURCES = ("answer", "ground_truth")
# The tiers of MetricSpec.importance, most important first.
IMPORTANCE_TIERS = ("answer quality", "faithfulness", "retrieval")
ANSWER_QUALITY, FAITHFULNESS, RETRIEVAL = range(3)


@dataclass(frozen=True)
class Score:
    """A metric's value for one item. NaN requires a reason (stored with it)."""

    value: float
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    judge_id: str | None = None
    # a categorical verdict in evalcore.schemas.labels' words (grade letter, answer class)
    label: str | None = None
    # per-context relevance verdicts: ({"rank", "verdict", "score", "reason"}, ...); scoring
    # stores them in the context_verdicts table
    contexts: tuple[dict[str, Any], ...] = ()
    # the statements a value was computed from, with their verdicts: ({"source": "answer" or
    # "ground_truth", "idx", "text", "verdict", "reason"}, ...); scoring stores them as claims
    claims: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if math.isinf(self.value):
            raise ValueError("metric values must be finite or NaN")
        if math.isnan(self.value) and not self.reason:
            raise ValueError("a NaN score needs a reason")

    @staticmethod
    def nan(reason: str, **details: Any) -> "Score":
        return Score(float("nan"), reason=reason, details=details)


@dataclass
class ScoringContext:
    """Shared state for one scoring pass: the run, options (judge, embedding model, k...),
    and lazily built resources (an embedder, a judge client) shared by every metric."""

    run_id: str
    store: Any = None  # read-only use: the caches' areas (judge replies, embeddings); metrics never write
    options: dict[str, Any] = field(default_factory=dict)
    # Every item of the scoring pass. Metrics see one chunk at a time; a metric whose definition
    # depends on the whole set (BERTScore's idf over the run's references) reads it here, so its
    # values do not depend on where the chunks were cut. Empty: the items of the compute call.
    items: list[Item] = field(default_factory=list)
    # What the whole run holds (scoring's `_run_has`: "answer" = some answer has text,
    # "citations" = some answer cites...), for rules about the run a metric must apply to
    # one chunk; the Ray engine's workers see blocks and questions only. None: derive it
    # from the items at hand.
    have: frozenset[str] | None = None
    # The run's stored metric values, {(method, question_id, trial): {metric: value}}, that composites
    # (group "composite") are built from. Scoring reads them from the store and passes them in
    # before its second phase, so no metric ever reads the store itself. None: not loaded.
    stored_metrics: dict[tuple[str, str, int], dict[str, float]] | None = None
    _resources: dict[str, Any] = field(default_factory=dict)

    def run_has(self, what: str, items: list[Item]) -> bool:
        """Whether the run holds `what` ("answer", "citations"): `have`, else any of the
        pass's items (or `items`) with it."""
        if self.have is not None:
            return what in self.have
        pool = [(q, r) for q, r in (self.items or items) if r is not None]
        if what == "answer":
            return any(r.answer.strip() for _, r in pool)
        if what == "citations":
            return any(r.citations for _, r in pool)
        raise ValueError(f"run_has: unknown input {what!r}")

    def resource(self, name: str, factory: Callable[[], Any]) -> Any:
        if name not in self._resources:
            self._resources[name] = factory()
        return self._resources[name]

    def built(self, name: str) -> Any:
        """The resource `name` if some metric built it during this pass, else None (never builds
        it: scoring asks for the judge work only to store the calls it made)."""
        return self._resources.get(name)

    def kept(self, prefixes: tuple[str, ...]) -> dict[str, Any]:
        """The built resources whose names start with one of `prefixes` (what is slow to build,
        e.g. an embedding model), to hand to the next context with `adopt`."""
        return {k: v for k, v in self._resources.items() if k.startswith(prefixes)}

    def adopt(self, resources: dict[str, Any]) -> None:
        """Take resources another context built (see `kept`)."""
        self._resources.update(resources)


BatchFn = Callable[[list[Item], ScoringContext], list[Score]]


@dataclass(frozen=True)
class MetricOption:
    """A setting read from `ScoringContext.options`, declared with its type and default by the
    spec of each metric that reads it (as a pydantic_evals evaluator declares its settings as
    typed dataclass fields).

    Why declared on the spec: the options `score --option`, `--options-file`, a run config's
    `score_options` and `score_run(options=...)` accept are the registry's (plus PASS_OPTIONS),
    so a new metric's setting needs no list elsewhere, and a misspelt or mistyped one is refused
    before any work starts instead of being ignored while the metric uses its default.
    `type` is checked there (evalcore.metrics.options.check_options: pydantic, booleans and
    integers strictly); `check(value)` returns what is wrong with a value the type admits (a
    weight sum of 0), or None; finer rules (known keys, positive budgets) stay with the code
    that reads the value. None as a value means "not given": the default applies."""

    name: str
    type: Any
    default: Any
    description: str
    check: Callable[[Any], str | None] | None = None

    def __hash__(self) -> int:  # a default may be a dict or a list: the name identifies it
        return hash(self.name)


MAX_JUDGE_REPEATS = 50  # K verdicts cost K passes of judge calls: beyond this, a typo is more likely

# The options of the pass itself, read by scoring and the judge client rather than by a metric.
PASS_OPTIONS: tuple[MetricOption, ...] = (
    MetricOption("judge", Any, None, "judge spec for judged metrics (e.g. heuristic, anthropic:MODEL)"),
    MetricOption("judge_concurrency", StrictInt, None, "judge requests in flight"),
    MetricOption("judge_update_manifest", StrictBool, True, "record the judge in the run manifest (default true)"),
    MetricOption("judge_record_claims", StrictBool, True, "store the judge's per-claim verdicts (default true)"),
    MetricOption("judge_repeats", StrictInt, 1, "independent judge verdicts per judged value, K (default 1; "
                 "docs/judges.md, Repeated verdicts)",
                 lambda k: None if 1 <= k <= MAX_JUDGE_REPEATS else
                 f"(--repeats) must be a whole number from 1 to {MAX_JUDGE_REPEATS}"),
    MetricOption("progress", StrictBool, None, "show progress bars (default: only on a terminal)"),
)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    group: str
    compute: BatchFn
    version: str = "1"
    needs: frozenset[str] = frozenset()
    higher_is_better: bool = True
    binary: bool = False
    description: str = ""
    # Optional: estimate(items, ctx) -> {"calls": int, "input_tokens": int, "output_tokens": int}
    estimate: Callable[[list[Item], ScoringContext], dict[str, float]] | None = None
    # Optional: the judge requests this metric needs first, [(task, [(method, question_id,
    # inputs) or None, ...]), ...]; scoring sends those of every selected metric in one batch
    # (the pass's options choose them, e.g. `judge_calls`)
    first_stage: Callable[[list[Item], "ScoringContext"], list[tuple[str, list]]] | None = None
    # Optional: its second-stage requests, built from first-stage replies found in the pass's
    # memo; scoring calls it per answer (a one-item list) as soon as that answer's first-stage
    # replies are in, and sends the requests at once (no barrier across the chunk)
    second_stage: Callable[[list[Item], "ScoringContext"], list[tuple[str, list]]] | None = None
    # Whether each value states a set of claims / of per-context verdicts: scoring then stores
    # the set for every answer it scores, an empty set included (so a re-score replaces it)
    states_claims: bool = False
    states_context_verdicts: bool = False
    # Optional: warm(ctx) prepares something slow this metric will use (loads an embedding
    # model); scoring runs it in the background while judge calls are in flight
    warm: Callable[["ScoringContext"], None] | None = None
    # The value an answer that failed gets (`answer_failed`: a target error, or an empty answer
    # in a run that answers), on questions that have what the metric needs: a failed answer is
    # a wrong answer, so quality means count it (0; 1 for a "wrong" indicator) instead of
    # leaving it out and averaging over the answers that worked. None: the metric decides
    # (retrieval is scored on what was retrieved; performance measures the failure itself).
    error_value: float | None = None
    # What kind of number a value is (SCALES): "unit" a 0-1 score, "points" an integer point
    # scale (groundedness 0-5, judge_* 1-5), "class" a class indicator, "open" unbounded (ms,
    # tokens, USD). Judge agreement (metrics/judge_agreement.py) picks its disagreement rule by it.
    scale: str = "unit"
    # A 0-1 copy of a point scale: the width of that scale (groundedness_norm: 5.0), so a gap
    # between two judges is judged in points as on the original.
    norm_width: float | None = None
    # A point scale's (lowest, highest) value (groundedness (0, 5), judge_* (1, 5)): what
    # `value_range` reads for scale "points" (a point metric without one is read as unbounded).
    point_range: tuple[float, float] | None = None
    # Where a reader weighs it: (tier, position), tiers IMPORTANCE_TIERS (answer quality,
    # faithfulness, retrieval); None: after those (analysis/question_drilldown.metric_order).
    importance: tuple[int, int] | None = None
    # Position among the key metrics the leaderboard and pages show first; None: not one.
    key_rank: int | None = None
    # Position in the precedence of metrics whose value decides whether an answer is correct
    # (analysis/read/correctness.py); None: it does not decide.
    decides_correct: int | None = None
    # Whether a set value means the answer abstained (analysis/read/correctness.py: DONT_KNOW).
    decides_dont_know: bool = False
    # What a person labels to check it (LABEL_KINDS; analysis/labels/label_units.py): its claims
    # ("claim", from the text `claims_from` names), its per-context verdicts ("context"), or its
    # stored `label`, which is then a grade letter ("grade") or an answer class ("answer_class").
    # None: a person rates the value itself, 0-1.
    label_kind: str | None = None
    claims_from: str | None = None
    # Among the metrics of one label_kind, lower first: the pages offer them in this order and a
    # grade count reads the first grade metric a system has (factual_grade before factual_accuracy).
    label_rank: int = 0
    # The failure diagnosis (analysis/questions/failure_modes.py): the position among the metrics
    # whose value near 0 says nothing relevant was retrieved (the first with a value is the
    # evidence of a retrieval miss; a judged one is the judge's, else the gold passages'), and
    # among those whose value below 1 says the answer makes claims its contexts do not support
    # (the first one's value is read). None: no part in the diagnosis.
    retrieval_miss_evidence: int | None = None
    unfaithful_evidence: int | None = None
    # The metric whose mean ranks systems on the leaderboard: its column, ± 95% CI and CI
    # bounds (`<name>_ci95`, `_ci_low`, `_ci_high`) lead every row (analysis/runs/leaderboard.py).
    # One metric at most.
    ranks_systems: bool = False
    # The settings it reads from ScoringContext.options, typed (MetricOption). A metric sharing
    # a setting with others (the abstention phrase lists) declares the same MetricOption object.
    options: tuple[MetricOption, ...] = ()
    # Its docs page; empty: docs/metrics/<group>.md (tests/test_metric_docs.py reads it there).
    docs: str = ""

    @property
    def docs_page(self) -> str:
        """The page that defines it: `docs`, else its group's page docs/metrics/<group>.md."""
        return self.docs or f"docs/metrics/{self.group}.md"

    def __post_init__(self) -> None:
        unknown = set(self.needs) - NEEDS
        if unknown:
            raise ValueError(f"metric {self.name}: unknown needs {sorted(unknown)}")
        if self.scale not in SCALES:
            raise ValueError(f"metric {self.name}: unknown scale {self.scale!r} (known: {', '.join(SCALES)})")
        if self.point_range is not None and (self.scale != "points" or not self.point_range[0] < self.point_range[1]):
            raise ValueError(f"metric {self.name}: point_range is (lowest, highest) of a scale 'points'")
        if self.importance is not None and self.importance[0] not in range(len(IMPORTANCE_TIERS)):
            raise ValueError(f"metric {self.name}: importance tier {self.importance[0]} is not one of "
                             f"0..{len(IMPORTANCE_TIERS) - 1} ({', '.join(IMPORTANCE_TIERS)})")
        if self.label_kind is not None and self.label_kind not in LABEL_KINDS:
            raise ValueError(f"metric {self.name}: unknown label_kind {self.label_kind!r} "
                             f"(known: {', '.join(LABEL_KINDS)})")
        if (self.label_kind == "claim") != (self.claims_from is not None) or \
                self.claims_from not in (None, *CLAIM_SOURCES):
            raise ValueError(f"metric {self.name}: a label_kind 'claim' names claims_from "
                             f"({' or '.join(CLAIM_SOURCES)}), and only it does")
        names = [getattr(o, "name", None) for o in self.options]
        if len(set(names)) != len(names) or not all(isinstance(o, MetricOption) for o in self.options):
            raise ValueError(f"metric {self.name}: options are MetricOptions with distinct names")

    @property
    def value_range(self) -> tuple[float, float]:
        """The values the metric can take, (lowest, highest): (0, 1) for a 0-1 score or a class
        indicator, the declared point_range for a point scale, unbounded for "open" (ms, tokens,
        USD) and for a point scale that declares none. Why: a gate bound at or beyond it can
        never be crossed (a MIN_DELTA of 1 on a 0-1 score switches the regression gate off),
        so the gate refuses it."""
        if self.point_range is not None:
            return (float(self.point_range[0]), float(self.point_range[1]))
        if self.scale in ("open", "points"):
            return (-math.inf, math.inf)
        return (0.0, 1.0)

    def score(self, items: list[Item], ctx: "ScoringContext") -> list[Score]:
        """`compute`, with the error rule applied first: failed answers get `error_value` and
        are not computed (no judge call is spent on an answer that does not exist)."""
        if self.error_value is None:
            return self.compute(items, ctx)
        answers_expected = ctx.run_has("answer", items)
        failed = [answer_failed(r, answers_expected) and question_has(q, self.needs) for q, r in items]
        if not any(failed):
            return self.compute(items, ctx)
        rest = iter(self.compute([it for it, f in zip(items, failed) if not f], ctx)
                    if not all(failed) else [])
        return [Score(self.error_value, details={"target_error": r.error_kind or "empty",
                                                 "failed_answer": True}) if f else next(rest)
                for (q, r), f in zip(items, failed)]


# What a metric may need from the question itself (the rest comes from the answer, which a
# failed answer lacks: that absence is the failure, not a reason to skip it).
QUESTION_NEEDS = {"gold": lambda q: bool(q.gold_passages),
                  "ground_truth": lambda q: bool(q.ground_truth or q.answers),
                  "keywords": lambda q: bool(q.expected_keywords or q.ground_truth or q.answers),
                  "checks": lambda q: bool(q.checks or q.is_correct_rule)}


def question_has(q: EvalQuestion, needs: frozenset[str]) -> bool:
    """Whether the question has what `needs` asks of a question (gold, ground truth...)."""
    return all(QUESTION_NEEDS[n](q) for n in needs if n in QUESTION_NEEDS)


def answer_failed(r: EvalResponse, answers_expected: bool = True) -> bool:
    """An answer that is an error, or empty where an answer was expected: a wrong answer to
    every quality measure (docs/metrics/composites.md, "Failed answers")."""
    return r.error is not None or (answers_expected and not r.answer.strip())


def per_item(fn: Callable[[EvalQuestion, EvalResponse], Score]) -> BatchFn:
    """Wrap a per-question function as a batch function."""

    def batch(items: list[Item], ctx: ScoringContext) -> list[Score]:
        return [fn(q, r) for q, r in items]

    return batch
