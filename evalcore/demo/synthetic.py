"""A seeded synthetic run store, written through RunWriter like a real run.

The dashboard needs data on every page to be developed, tested, benchmarked and
screenshotted before the real scorers exist; this builds it with the same shapes the
scorers are expected to write (per-context verdicts in context_precision details, a grade
in factual_accuracy details, a class in answer_class details, claims, judge calls).
Nothing here is a result: every number is random, only the structure is meaningful.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from evalcore import __version__
from evalcore.metrics.registry import METRICS
from evalcore.schemas import (
    Claim,
    ContextJudgement,
    EvalQuestion,
    EvalResponse,
    JudgeCall,
    JudgeId,
    MetricValue,
    RunManifest,
)
from evalcore.store import FORMAT_VERSION, RunStore

CATEGORIES = ["single_hop", "multi_hop_2", "aggregation", "negative"]
QUESTION_TYPES = ["factoid", "list", "comparison", "numeric"]
DIFFICULTIES = ["easy", "medium", "hard"]
# Judged metrics first: they carry details the drill-down pages read.
METRIC_NAMES = [
    "faithfulness", "context_precision", "factual_accuracy", "answer_class", "weighted_score",
    "context_recall", "answer_relevance", "ragas_score", "answer_correctness", "groundedness",
    "token_f1", "exact_match", "keyword_hit", "keyword_coverage", "number_match",
    "answer_completeness", "semantic_similarity", "bert_score_f1", "recall@1", "recall@3",
    "recall@5", "recall@10", "hit_rate@5", "precision@3", "mrr", "ndcg@10", "map@10",
    "citation_precision", "citation_recall", "dont_know",
]
WORDS = ("the observatory river telescope aperture opened public budget founded town market "
         "northern bank astronomer research years private largest operates four metres").split()
JUDGE = JudgeId(provider="heuristic", model="synthetic", prompt_id="synthetic", prompt_version="1")


def _judge_of(metric: str) -> str | None:
    """The judge label a value of `metric` carries: the synthetic judge's for a judged metric
    (its spec needs a judge), none otherwise, as scoring writes them."""
    spec = METRICS.get(metric)
    return JUDGE.label if spec is not None and "judge" in spec.needs else None


def _group_of(metric: str) -> str:
    """The registry's group; a name the registry does not know (tests write hostile or custom
    names on purpose) counts in the "answer" group, as before the registry decided groups."""
    spec = METRICS.get(metric)
    return spec.group if spec is not None else "answer"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _grade(score: float) -> str:
    pct = score * 100
    return "A" if pct >= 80 else "B" if pct >= 60 else "C" if pct >= 40 else "D" if pct >= 20 else "E"


def _question(rng: random.Random, i: int) -> EvalQuestion:
    category = CATEGORIES[i % len(CATEGORIES)]
    return EvalQuestion(
        id=f"q{i:05d}", question=_sentence(rng, 9).rstrip(".") + "?",
        ground_truth=None if category == "negative" else _sentence(rng, 12),
        category=category, question_type=QUESTION_TYPES[(i // 4) % len(QUESTION_TYPES)],
        difficulty=rng.choice(DIFFICULTIES), answerable=category != "negative")


def _response(rng: random.Random, q: EvalQuestion, method: str, answer: str | None) -> EvalResponse:
    retrieved = [{"rank": k, "chunk_id": f"{q.id}-c{k}", "rel_path": f"docs/{rng.choice(WORDS)}.md",
                  "text": _sentence(rng, 14), "score": round(1 - 0.1 * k, 2)} for k in (1, 2, 3)]
    tokens_in, tokens_out = rng.randint(300, 1500), rng.randint(10, 200)
    return EvalResponse(
        question_id=q.id, method=method, answer=answer if answer is not None else _sentence(rng, 14),
        retrieved=retrieved, latency_ms=round(rng.lognormvariate(6.5, 0.5), 1),
        token_usage={"input_tokens": tokens_in, "output_tokens": tokens_out,
                     "cost_usd": round(tokens_in * 3e-6 + tokens_out * 15e-6, 6)})


def _details(rng: random.Random, metric: str, value: float, response: EvalResponse) -> dict:
    if metric == "context_precision":
        return {"contexts": [{"rank": c.rank, "verdict": int(rng.random() < value + 0.1),
                              "reason": _sentence(rng, 8)} for c in response.retrieved]}
    if metric == "factual_accuracy":
        return {"grade": _grade(value), "correctness": round(value * 100),
                "reasoning": _sentence(rng, 10)}
    if metric == "answer_class":
        return {"class": "CORRECT" if value >= 0.5 else rng.choice(["WRONG", "DONT_KNOW"])}
    return {}


def _metric_value(rng: random.Random, metric: str, skill: float) -> float:
    spec = METRICS.get(metric)
    if spec is not None and (spec.binary or spec.scale == "class"):
        return float(rng.random() < (0.15 if metric == "dont_know" else skill))
    return min(1.0, max(0.0, rng.gauss(skill, 0.18)))


def write_run(store: RunStore, name: str, questions: list[EvalQuestion], methods: list[str],
              metrics: list[str], seed: int, created_at: datetime | None = None,
              answers: dict[tuple[str, str], str] | None = None, judge_calls: bool = True) -> str:
    """Write one complete run; `answers[(method, question_id)]` overrides generated answers."""
    rng = random.Random(seed)
    run_id = f"{name}-{seed:04d}"
    manifest = RunManifest(
        format_version=FORMAT_VERSION, run_id=run_id, name=name, kind="live", status="complete",
        created_at=created_at or datetime.now(timezone.utc), evalcore_version=__version__,
        methods=methods, dataset={"name": "synthetic", "n_questions": len(questions)},
        judges=[JUDGE.label], counts={"questions": len(questions),
                                      "responses": len(questions) * len(methods)})
    writer = store.create_run(manifest)
    writer.write_questions(questions)
    for m_index, method in enumerate(methods):
        skill_base = 0.45 + 0.1 * m_index + rng.uniform(-0.08, 0.08)
        responses, values, claims, calls, verdicts = [], [], [], [], []
        for q in questions:
            r = _response(rng, q, method, (answers or {}).get((method, q.id)))
            responses.append(r)
            skill = min(0.95, max(0.05, skill_base + rng.gauss(0, 0.15)))
            for metric in metrics:
                if metric == "context_recall" and not q.answerable:
                    values.append(MetricValue(run_id=run_id, method=method, question_id=q.id, metric=metric,
                                              value=math.nan, group=_group_of(metric), reason="no ground truth",
                                              judge_id=_judge_of(metric)))
                    continue
                value = _metric_value(rng, metric, skill)
                details = _details(rng, metric, value, r)
                judge = _judge_of(metric)
                values.append(MetricValue(
                    run_id=run_id, method=method, question_id=q.id, metric=metric, value=value,
                    group=_group_of(metric),
                    details=details, judge_id=judge, label=details.get("grade") or details.get("class")))
                for c in details.get("contexts", []):
                    verdicts.append(ContextJudgement(
                        run_id=run_id, method=method, question_id=q.id, metric=metric, rank=c["rank"],
                        verdict="relevant" if c["verdict"] else "not_relevant", reason=c["reason"],
                        judge_id=judge))
            if "faithfulness" in metrics:
                # One claim set shares its timestamp: the claims view keeps the newest set.
                set_time = datetime.now(timezone.utc)
                for idx in range(3):
                    claims.append(Claim(run_id=run_id, method=method, question_id=q.id, source="answer",
                                        idx=idx, text=_sentence(rng, 7),
                                        verdict="supported" if rng.random() < skill else "not_supported",
                                        reason=_sentence(rng, 6), metric="faithfulness",
                                        judge_id=JUDGE.label, computed_at=set_time))
            if judge_calls:
                calls.append(JudgeCall(
                    run_id=run_id, call_key=f"{method}-{q.id}-faith", judge_id=JUDGE, method=method,
                    question_id=q.id, purpose="faithfulness.verdicts",
                    request={"messages": [{"role": "user", "content": f"Judge: {r.answer}"}]},
                    response_raw='{"verdicts": []}', parsed={"verdicts": []},
                    input_tokens=rng.randint(200, 900), output_tokens=rng.randint(20, 120),
                    cost_usd=round(rng.uniform(0.0005, 0.003), 6), latency_ms=rng.uniform(200, 900)))
        writer.write_responses(responses)
        writer.write_metrics(values)
        if claims:
            writer.write_claims(claims)
        if calls:
            writer.write_judge_calls(calls)
        writer.write_context_verdicts(verdicts)
    writer.publish()
    return run_id


def build_store(root: str | Path, n_runs: int = 2, n_questions: int = 40, n_metrics: int = 30,
                methods: tuple[str, ...] = ("local_search", "basic_search"), seed: int = 7,
                judge_calls: bool = True) -> RunStore:
    """A store of `n_runs` runs over the same questions (so runs compare on question_id)."""
    store = RunStore(root)
    rng = random.Random(seed)
    questions = [_question(rng, i) for i in range(n_questions)]
    metrics = METRIC_NAMES[:n_metrics]
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for i in range(n_runs):
        write_run(store, f"synthetic-{i:02d}", questions, list(methods), metrics, seed=seed * 1000 + i,
                  created_at=start + timedelta(days=i), judge_calls=judge_calls)
    return store
