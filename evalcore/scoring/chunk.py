"""One chunk of answers scored: the one engine the local pass (engine.py) and the Ray workers
(scale/ray_scoring.py) both run, so a value cannot depend on where it was computed.

`score_chunk` sends every selected metric's judge requests first (so the calls of all metrics
overlap), computes each metric over the chunk, and returns the rows to write; `write_chunk`
writes them as part files (unpublished). What differs between the two callers stays with them:
where the judge calls are drained to, progress bars, and waiting for a model that loads in the
background (the `before` hook).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterable

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import Item, MetricSpec, Score, ScoringContext
from evalcore.schemas import Claim, ContextJudgement, MetricRepeat, MetricValue
from evalcore.schemas.labels import context_verdict
from evalcore.schemas.metric_value_fast import metric_value
from evalcore.scoring.pass_report import MetricReport, ScoreReport
from evalcore.scoring.repeats import combined, repeat_rows, repeated_scores

if TYPE_CHECKING:
    from evalcore.store.writer import RunWriter

EMPTY_SET = -1  # the idx/rank of an empty claim or verdict set's marker row (store/merge.py)


@dataclass
class ChunkRows:
    """The rows one chunk produced, for every metric of the phase."""

    values: list[MetricValue] = field(default_factory=list)
    verdicts: list[ContextJudgement] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    repeats: list[MetricRepeat] = field(default_factory=list)  # `score --repeats K`: each verdict


def run_has(items: list[Item]) -> set[str]:
    """Which metric needs the run can meet (any question/response that has the thing)."""
    have = set()
    for q, r in items:
        if q.gold_passages:
            have.add("gold")
        if r.retrieved:
            have.add("retrieved")
            if any(c.text for c in r.retrieved):
                have.add("contexts")
        if q.ground_truth or q.answers:
            have |= {"ground_truth", "keywords"}
        if q.expected_keywords:
            have.add("keywords")
        if r.answer.strip():
            have.add("answer")
        if r.citations:
            have.add("citations")
        if q.checks or q.is_correct_rule:
            have.add("checks")
    return have | {"judge", "embeddings"}  # availability of these is decided by options


def in_chunks(items: list[Item], size: int) -> Iterable[list[Item]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def compute(spec: MetricSpec, chunk: list[Item], ctx: ScoringContext, report: ScoreReport) -> list[Score]:
    """The metric's scores for the chunk. A metric that raises on the chunk is asked again one
    answer at a time, so only the answers it fails on become reasoned NaNs: otherwise which
    answers lost their value would depend on where the chunks were cut (the local pass, the
    scoring while asking, and Ray cut them differently)."""
    try:
        scores = spec.score(chunk, ctx)
    except EvalcoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - stored as a reasoned NaN and reported, not swallowed
        if len(chunk) > 1:
            return [score for item in chunk for score in compute(spec, [item], ctx, report)]
        msg = f"{type(exc).__name__}: {exc}"
        report.errors[spec.name] = msg
        return [Score.nan(f"metric error: {msg}")]
    if len(scores) != len(chunk):
        raise EvalcoreError(f"metric {spec.name} returned {len(scores)} scores for {len(chunk)} items")
    return scores


def metric_values(run_id: str, spec: MetricSpec, chunk: list[Item], scores: list[Score]) -> list[MetricValue]:
    """One value per answer, validated only where a field is not plainly valid
    (schemas/metric_value_fast.py: validating every one was a quarter of the scoring's CPU)."""
    return [metric_value(run_id=run_id, method=r.method, question_id=q.id, metric=spec.name,
                        value=s.value, group=spec.group, version=spec.version, reason=s.reason,
                        details=s.details, judge_id=s.judge_id, label=s.label, trial=r.trial)
            for (q, r), s in zip(chunk, scores)]


def context_verdict_rows(run_id: str, spec: MetricSpec, chunk: list[Item],
                      scores: list[Score]) -> list[ContextJudgement]:
    """The typed per-context verdicts a metric returned (context_precision...), one set per
    answer; for a metric that states them, an answer without any gets the empty-set marker
    (rank -1, dropped at compaction), so a re-score leaves no verdicts of an older value."""
    out = []
    now = datetime.now(timezone.utc)
    for (q, r), s in zip(chunk, scores):
        if not s.contexts and spec.states_context_verdicts:
            out.append(ContextJudgement(run_id=run_id, method=r.method, question_id=q.id, metric=spec.name,
                                        rank=EMPTY_SET, judge_id=s.judge_id, computed_at=now, trial=r.trial))
        for c in s.contexts:
            verdict = context_verdict(c.get("verdict"))
            out.append(ContextJudgement(run_id=run_id, method=r.method, question_id=q.id, metric=spec.name,
                                        rank=int(c["rank"]), verdict=verdict.value if verdict else None,
                                        score=c.get("score"), reason=c.get("reason"), judge_id=s.judge_id,
                                        computed_at=now, trial=r.trial))
    return out


def claim_rows(run_id: str, spec: MetricSpec, chunk: list[Item], scores: list[Score]) -> list[Claim]:
    """The claim sets a metric returned (faithfulness, context_recall), one per answer; an
    answer scored without claims gets the empty-set marker (idx -1, dropped at compaction)."""
    out = []
    now = datetime.now(timezone.utc)
    for (q, r), s in zip(chunk, scores):
        if not s.claims and spec.states_claims:
            out.append(Claim(run_id=run_id, method=r.method, question_id=q.id, source="answer", idx=EMPTY_SET,
                             text="", metric=spec.name, judge_id=s.judge_id, computed_at=now, trial=r.trial))
        out += [Claim(run_id=run_id, method=r.method, question_id=q.id, source=c["source"], idx=int(c["idx"]),
                      text=c["text"], verdict=c.get("verdict"), reason=c.get("reason"), metric=spec.name,
                      judge_id=s.judge_id, computed_at=now, trial=r.trial) for c in s.claims]
    return out


def judge_rounds(specs: list[MetricSpec], chunk: list[Item], ctx: ScoringContext) -> None:
    """Send the judge requests of every selected metric before computing any, so the calls of
    all metrics overlap instead of waiting metric by metric; the metrics then find the replies
    in the pass's memo. First-stage requests (what needs nothing) go out at once; an answer's
    second-stage requests (built from its first-stage replies) go out as soon as those replies
    are in, without waiting for the rest of the chunk (JudgeWork.run_staged)."""
    from evalcore.judges.work import get_work

    first = [b for s in specs if s.first_stage is not None for b in s.first_stage(chunk, ctx)]
    seconds = [s.second_stage for s in specs if s.second_stage is not None]
    if not first and not seconds:
        return
    if all(len(requests) == len(chunk) for _, requests in first):  # one request (or None) per answer
        get_work(ctx).run_staged(first, len(chunk), lambda i: [b for stage in seconds
                                                               for b in stage(chunk[i:i + 1], ctx)])
        return
    if first:  # requests not aligned with the answers: two rounds, with a barrier
        get_work(ctx).run_batches(first)
    second = [b for stage in seconds for b in stage(chunk, ctx)]
    if second:
        get_work(ctx).run_batches(second)


def score_chunk(specs: list[MetricSpec], chunk: list[Item], ctx: ScoringContext, report: ScoreReport,
                before: Callable[[MetricSpec], None] | None = None,
                after: Callable[[MetricSpec, int], None] | None = None) -> ChunkRows:
    """Score `chunk` with every metric of `specs`: judge requests first, then each metric's
    values, claims and context verdicts, counted in `report`. `before(spec)` runs before a
    metric computes (the local pass waits there for a model loading in the background),
    `after(spec, n)` after (a progress bar). With K judge repeats (option `judge_repeats`), the
    judged metrics are computed K times and each stores the mean (scoring/repeats.py)."""
    from evalcore.judges.work import judge_repeats

    judge_rounds(specs, chunk, ctx)
    first: dict[str, list[Score]] = {}
    for spec in specs:
        if before is not None:
            before(spec)
        first[spec.name] = compute(spec, chunk, ctx, report)
        if after is not None:
            after(spec, len(chunk))
    more = repeated_scores(specs, chunk, ctx, judge_repeats(ctx.options),
                           lambda judged: judge_rounds(judged, chunk, ctx),
                           lambda spec: compute(spec, chunk, ctx, report))
    rows = ChunkRows()
    for spec in specs:
        scores = first[spec.name]
        runs = [list(item) for item in zip(scores, *more[spec.name])] if more.get(spec.name) else None
        if runs is not None:
            scores = [combined(r) for r in runs]
        for score in scores:
            report.by_metric.setdefault(spec.name, MetricReport()).add(score)
        values = metric_values(ctx.run_id, spec, chunk, scores)
        rows.values.extend(values)
        if runs is not None:
            rows.repeats.extend(repeat_rows(values, runs))
        rows.verdicts.extend(context_verdict_rows(ctx.run_id, spec, chunk, scores))
        rows.claims.extend(claim_rows(ctx.run_id, spec, chunk, scores))
    return rows


def write_chunk(writer: RunWriter, rows: ChunkRows) -> bool:
    """Write a chunk's rows as part files; True when a metrics part file was written."""
    writer.write_claims(rows.claims)
    writer.write_context_verdicts(rows.verdicts)
    if rows.repeats:
        writer.write_metric_repeats(rows.repeats)
    return bool(writer.write_metrics(rows.values))
