"""K independent judge verdicts per judged value (`evalcore score --repeats K`), folded into one.

Why: a judge samples (the Anthropic judge sends no temperature, so the provider's default 1.0
applies; hosted models are not deterministic even at 0), and the cache hides it: a re-run replays
the first sample. With K > 1, every judged metric of a chunk is computed K times, repeat r asking
its own requests (JudgeWork.repeat = r: its own memo entries and cache keys, repeat 0 keeping
today's), so the K verdicts are K calls made once and replayed on every later pass.

Every stage is repeated, claim extraction included (docs/judges.md, "Repeated verdicts", gives
the measurement): a verdict on fixed claims would leave out the noise of which claims were found,
which moves faithfulness as much as the verdicts do.

What is stored: the metric value is the mean over the repeats that have a value (so every reader
of metric values keeps working, and a value's noise shrinks as 1/K); its label is the repeats'
most common one; its claims and context verdicts are repeat 0's; each repeat is a MetricRepeat
row (the `metric_repeats` table), which analysis reads for the judge's noise
(analysis/comparison/judge_noise.py). Both engines run this through scoring/chunk.py's
score_chunk, so the Ray workers store what the local pass stores.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

from evalcore.metrics.base import Item, MetricSpec, Score, ScoringContext
from evalcore.schemas import MetricRepeat, MetricValue


def is_judged(spec: MetricSpec) -> bool:
    """Whether a metric's value is a judge's verdict (what repeats repeat)."""
    return "judge" in spec.needs


def set_repeat(ctx: ScoringContext, repeat: int) -> None:
    """Make the pass's judge requests ask for verdict `repeat` (0: the ordinary one)."""
    from evalcore.judges.work import get_work

    get_work(ctx).repeat = repeat


def repeated_scores(specs: list[MetricSpec], chunk: list[Item], ctx: ScoringContext, repeats: int,
                    rounds: Callable[[list[MetricSpec]], None],
                    compute: Callable[[MetricSpec], list[Score]]) -> dict[str, list[list[Score]]]:
    """{metric: [scores of repeat 0, of repeat 1, ...]} for the judged `specs` beyond repeat 0:
    repeats 1..K-1, each round's judge requests sent together (`rounds`) before its metrics are
    computed (`compute`), as repeat 0's are."""
    judged = [s for s in specs if is_judged(s)]
    out: dict[str, list[list[Score]]] = {s.name: [] for s in judged}
    if repeats <= 1 or not judged:
        return out
    try:
        for repeat in range(1, repeats):
            set_repeat(ctx, repeat)
            rounds(judged)
            for spec in judged:
                out[spec.name].append(compute(spec))
    finally:
        set_repeat(ctx, 0)
    return out


def _majority(labels: list[str | None]) -> str | None:
    """The most common label; a tie goes to the one the earliest repeat gave."""
    given = [x for x in labels if x is not None]
    if not given:
        return None
    counts = Counter(given)
    top = max(counts.values())
    return next(x for x in given if counts[x] == top)


def combined(runs: list[Score]) -> Score:
    """One answer's K repeat scores as the stored score: the mean of the repeats with a value,
    the most common label, repeat 0's claims and context verdicts, and the repeats' values in
    `details.repeat_values` (None for a repeat without one, whose reason the value's reason
    names). All repeats NaN: repeat 0's score (its reason)."""
    first = runs[0]
    valued = [s for s in runs if not math.isnan(s.value)]
    details = {**(valued[0] if valued else first).details, "judge_repeats": len(runs),
               "repeat_values": [None if math.isnan(s.value) else s.value for s in runs]}
    if not valued:
        return Score(first.value, reason=first.reason, details=details, judge_id=first.judge_id, label=first.label,
                     contexts=first.contexts, claims=first.claims)
    missing = [(i, s.reason) for i, s in enumerate(runs) if math.isnan(s.value)]
    reason = None
    if missing:
        i, why = missing[0]
        reason = f"mean of {len(valued)} of {len(runs)} judge repeats; repeat {i}: {why}"
    return Score(sum(s.value for s in valued) / len(valued), reason=reason, details=details,
                 judge_id=valued[0].judge_id, label=_majority([s.label for s in valued]),
                 contexts=first.contexts, claims=first.claims)


def repeat_rows(values: list[MetricValue], runs_per_item: list[list[Score]]) -> list[MetricRepeat]:
    """The MetricRepeat rows of stored values (one per repeat), tied to each value by its
    computed_at. An answer that was not judged (a failed answer scored its error value, or no
    repeat has a value) gets none: it says nothing about the judge."""
    out = []
    for value, runs in zip(values, runs_per_item):
        if all(math.isnan(s.value) for s in runs) or any(s.details.get("failed_answer") for s in runs):
            continue
        out.extend(MetricRepeat(run_id=value.run_id, method=value.method, question_id=value.question_id,
                                metric=value.metric, repeat=r, value=s.value, label=s.label, judge_id=s.judge_id,
                                reason=s.reason, value_at=value.computed_at, trial=value.trial)
                   for r, s in enumerate(runs))
    return out
