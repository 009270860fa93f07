"""LLM-judged metrics (docs/metrics/judged.md). The ones that combine several tasks live beside it
(graded.py, ragas.py); this module registers them all. A metric that asks one judge task once per answer is
`judged_metric(name, task, read, ...)`: its scoring, its needs and its dry-run estimate come
from the task's `TaskDef` (`inputs`, `needs_ground_truth`), so adding one is a TaskDef and
this call (docs/architecture.md, "A judged metric"). Every value carries its judge label
(`heuristic:...` for the offline judge) and the reason when it is NaN. Docs:
docs/metrics/judged.md.

The judge comes from ScoringContext.options["judge"] (spec string or Judge object; default
the Anthropic judge). `estimate(items, ctx)` gives calls/tokens/cost for `score --dry-run`,
counting work shared between metrics once per ctx and cache hits as free.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from evalcore.metrics.judged import graded as g
from evalcore.metrics.judged import ragas as rg
from evalcore.metrics.judged import ragas_stages as st
from evalcore.judges.request_inputs import contexts_of, gold_list
from evalcore.judges.tasks import get_task
from evalcore.judges.work import estimate_calls, guess_claims
from evalcore.metrics.abstention import DONT_KNOW_OPTIONS
from evalcore.metrics.base import ANSWER_QUALITY, FAITHFULNESS, Item, MetricSpec, RETRIEVAL, ScoringContext
from evalcore.metrics.semantic import EMBEDDING_MODEL_OPTION

# a metric's planned judge requests for one answer: [(task, method or None, inputs), ...]
Plan = Callable[[object, object, ScoringContext], list[tuple[str, str | None, dict]]]


def _claims(q, r, ctx):
    """The requests faithfulness, context recall and precision make: claims (the answer
    analysis in the combined design), reference statements (method None: once per question)
    and one context review (claims guessed)."""
    plan = []
    dec = st.claims_request(q, r)
    if dec is not None:
        plan.append((st.claims_task(ctx), r.method, dec))
    ref = st.reference_request(q)
    if ref is not None:
        plan.append(("reference_statements", None, ref))
    review = st.review_request(q, r, guess_claims(r.answer) if dec is not None else [],
                               guess_claims(q.ground_truth) if ref is not None else [])
    if review is not None:
        plan.append(("context_review", r.method, review))
    return plan


def _questions(q, r, ctx):
    inp = st.questions_request(q, r, ctx)
    return [(st.questions_task(ctx), r.method, inp)] if inp is not None else []


def _single(task: str) -> Plan:
    """The one request a one-call metric makes per answer (the TaskDef's `inputs`)."""
    defn = get_task(task)
    if defn.inputs is None:
        raise ValueError(f"judge task {task!r} has no `inputs`: it cannot back a one-call metric")
    return lambda q, r, ctx: [] if defn.needs_ground_truth and not q.ground_truth else \
        [(task, r.method, defn.inputs(q, r))]


def _grounded(q, r, ctx):
    claims = guess_claims(r.answer)
    dec = st.claims_request(q, r)
    return ([(st.claims_task(ctx), r.method, dec)] if dec is not None else []) + \
        ([("groundedness", r.method, {"contexts": contexts_of(r), "answer": r.answer, "claims": claims,
                                      "n_citations": len(r.citations)})] if claims else [])


def _classes(q, r, ctx):
    plan = []
    if q.ground_truth:
        plan.append(("answer_class", r.method, {"question": q.question, "ground_truth": q.ground_truth,
                                                "answers": gold_list(q), "answer": r.answer or ""}))
    return plan


def _estimator(*plans: Plan):
    def estimate(items: list[Item], ctx: ScoringContext) -> dict[str, float]:
        planned = [(task, method, q.id, inputs) for q, r in items if not r.error
                   for plan in plans for task, method, inputs in plan(q, r, ctx)]
        return estimate_calls(ctx, planned)
    return estimate


def _spec(name, fn, group, needs, plans, description, binary=False, higher=True, version="1",
          error_value=0.0, **kw):
    """A judged metric; a failed answer scores `error_value` (the worst value: 0 on the
    0-1 and 0-5 scales, 1 on the plan's 1-5 scale, 1 for the "wrong" indicator) without a
    judge call, as a wrong answer would."""
    return MetricSpec(name=name, group=group, compute=fn, needs=frozenset({"judge", *needs}), version=version,
                      description=description, estimate=_estimator(*plans), binary=binary,
                      higher_is_better=higher, error_value=error_value, **kw)


def judged_metric(name: str, task: str, read: g.Read, description: str, *, needs=(), group: str = "judged",
                  **facts) -> MetricSpec:
    """A metric that asks the registered judge task `task` once per answer and turns each
    reply into a value with `read(output) -> Score | float`. Its compute and its `score
    --dry-run` estimate come from the task's `inputs`; it needs a judge, an answer, the
    ground truth when the task does, and any `needs` given. `facts` are MetricSpec's
    (scale, importance, key_rank, decides_correct, version, error_value...)."""
    defn = get_task(task)
    plan = _single(task)
    base = {"answer", "ground_truth"} if defn.needs_ground_truth else {"answer"}
    if "higher_is_better" in facts:  # MetricSpec's own word for _spec's `higher`
        facts["higher"] = facts.pop("higher_is_better")
    return _spec(name, partial(g.one_call, task, read=read), group, {*base, *needs}, [plan],
                 description, **facts)


ANS, CTX, GT = "answer", "contexts", "ground_truth"
CALLS = (st.JUDGE_CALLS_OPTION,)  # the call design of the metrics that share claims (ragas_stages.py)
REVIEWED = dict(first_stage=st.claims_stage, second_stage=st.review_stage, options=CALLS)
SPECS: list[MetricSpec] = [
    _spec("faithfulness", rg.faithfulness, "judged", {ANS, CTX}, [_claims],
          "Share of the answer's claims supported by the retrieved contexts (0-1).", version="2",
          states_claims=True, importance=(FAITHFULNESS, 0), key_rank=3, label_kind="claim", claims_from="answer",
          unfaithful_evidence=0, **REVIEWED),
    _spec("context_precision", rg.context_precision, "judged", {CTX}, [_claims],
          "Mean judge relevance verdict over retrieved contexts (0-1).", version="2",
          states_context_verdicts=True, importance=(RETRIEVAL, 0), key_rank=4, label_kind="context",
          retrieval_miss_evidence=2, **REVIEWED),
    _spec("context_precision_ap", rg.context_precision_ap, "judged", {CTX}, [_claims],
          "Rank-aware context precision: sum_k precision@k * v_k / #relevant (0-1).", version="2",
          states_context_verdicts=True, **REVIEWED),
    _spec("context_recall", rg.context_recall, "judged", {CTX, GT}, [_claims],
          "Share of ground-truth statements attributable to the contexts (0-1).", version="2",
          states_claims=True, importance=(RETRIEVAL, 1), key_rank=5, label_kind="claim", claims_from="ground_truth",
          **REVIEWED),
    _spec("answer_relevance", rg.answer_relevance, "judged", {ANS}, [_questions],
          "Mean cosine between the question and 3 questions generated from the answer (0-1); "
          "a direct 0-1 judge rating when no question could be generated.", first_stage=st.questions_first_stage,
          second_stage=st.questions_stage, warm=rg.warm_embedder, key_rank=6,
          options=(EMBEDDING_MODEL_OPTION, *CALLS)),
    judged_metric("factual_accuracy", "factual_accuracy", g.factual(as_grade=False),
                  "G-Eval 0.5 correctness + 0.3 completeness + 0.2 consistency, / 100 (0-1).",
                  importance=(ANSWER_QUALITY, 2), key_rank=2, label_kind="grade", label_rank=1),
    judged_metric("factual_grade", "factual_accuracy", g.factual(as_grade=True),
                  "Grade points of factual_accuracy: A=4 ... E=0 (letter in details).",
                  scale="points", point_range=(0, 4), importance=(ANSWER_QUALITY, 3), label_kind="grade"),
    _spec("answer_class", g.class_metric(None), "judged", {ANS}, [_classes],
          "1 if the answer is CORRECT, 0 if WRONG or DONT_KNOW (class in details).", version="2",
          scale="class", importance=(ANSWER_QUALITY, 4), decides_correct=1, label_kind="answer_class",
          options=DONT_KNOW_OPTIONS),
    _spec("answer_correct", g.class_metric("CORRECT"), "judged", {ANS}, [_classes],
          "Indicator of class CORRECT (mean = rate, sum = count).", binary=True, version="2",
          scale="class", importance=(ANSWER_QUALITY, 1), decides_correct=0, options=DONT_KNOW_OPTIONS),
    _spec("answer_wrong", g.class_metric("WRONG"), "judged", {ANS}, [_classes],
          "Indicator of class WRONG.", binary=True, higher=False, version="2", error_value=1.0, scale="class",
          options=DONT_KNOW_OPTIONS),
    _spec("answer_dont_know", g.class_metric("DONT_KNOW"), "judged", {ANS}, [_classes],
          "Indicator of class DONT_KNOW.", binary=True, higher=False, version="2",
          scale="class", decides_dont_know=True, options=DONT_KNOW_OPTIONS),
    _spec("groundedness", g.groundedness, "judged", {ANS, CTX}, [_grounded],
          "Judge 0-5: claims supported by contexts, 5 needs citations.", version="2",
          scale="points", point_range=(0, 5), importance=(FAITHFULNESS, 1), options=CALLS),
    _spec("groundedness_norm", g.groundedness_norm, "judged", {ANS, CTX}, [_grounded],
          "groundedness / 5.", version="2", norm_width=5.0, options=CALLS),
    judged_metric("correctness", "correctness", g.scaled(None, 0, 5, False),
                  "Judge 0-5: does the answer correctly address the question (with contexts).", scale="points",
                  point_range=(0, 5)),
    judged_metric("correctness_norm", "correctness", g.scaled(None, 0, 5, True),
                  "correctness / 5.", norm_width=5.0),
    judged_metric("answer_correctness", "answer_correctness", g.scaled(None, 0, 1, False),
                  "Judge 0-1: equivalence in meaning to the expected answer.",
                  importance=(ANSWER_QUALITY, 0), key_rank=1, decides_correct=2),
]
for _key in ("correctness", "faithfulness", "completeness"):
    SPECS.append(judged_metric(f"judge_{_key}", "plan_scores", g.scaled(_key, 1, 5, False),
                               f"Korean plan {_key}, judge 1-5.", error_value=1.0, scale="points", point_range=(1, 5),
                               importance={"correctness": (ANSWER_QUALITY, 5), "faithfulness": (FAITHFULNESS, 2)}.get(_key)))
    SPECS.append(judged_metric(f"judge_{_key}_norm", "plan_scores", g.scaled(_key, 1, 5, True),
                               f"judge_{_key} normalised: (score - 1) / 4.", norm_width=4.0))
