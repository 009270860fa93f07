"""The scoring half of scoring-while-asking: one run's chunks of answers scored and written,
with no threads or queues of its own (scoring/streaming.py feeds it).

Why apart from the feeding: the same object scores in a thread of the run's process (small
runs) or in a child process (scoring/stream_worker.py, large runs), so the values cannot
depend on where they were computed. `decide` picks the metrics from the first chunk, `score`
writes each chunk's rows as part files at once (a crash keeps them), `close` checks the
selection against every answer and returns the pass's report and history entry.
"""

from __future__ import annotations

from typing import Any

from evalcore.metrics.base import Item, MetricSpec, ScoringContext
from evalcore.scoring.chunk import run_has, score_chunk, write_chunk
from evalcore.scoring.pass_record import history_entry
from evalcore.scoring.pass_report import ScoreReport
from evalcore.store import RunStore, RunWriter

COMPOSITE = "composite"


def streamable(spec: MetricSpec) -> bool:
    """A metric whose value for one answer needs nothing but that answer, its question and the
    run-level `have`: no judge (its calls have their own batching and cache), no embedding
    model, no whole-run statistic (BERTScore's idf needs embeddings, so it is excluded here)."""
    return not ({"judge", "embeddings"} & set(spec.needs) or spec.warm or spec.first_stage or spec.second_stage)


class ChunkStream:
    """Scores one run's chunks with the metrics the first chunk selects."""

    def __init__(self, store: RunStore, writer: RunWriter, run_id: str, metrics: list[str], groups: list[str],
                 options: dict[str, Any]):
        self._store, self._writer, self._run_id = store, writer, run_id
        self._metrics, self._groups, self._options = list(metrics), list(groups), dict(options)
        self.specs: list[MetricSpec] | None = None
        self.have: frozenset[str] | None = None
        self._ctx: ScoringContext | None = None
        self.report: ScoreReport | None = None
        self._values: dict[tuple[str, str, int], dict[str, float]] = {}

    def decide(self, first: list[Item]) -> str | None:
        """Which metrics stream, from the questions and the first answers: None when they all
        can, else why streaming gives up (the run is then scored after the last answer)."""
        from evalcore.metrics.options import check_options
        from evalcore.scoring.engine import metric_registry, select_metrics

        self._options = check_options(self._options)
        self.have = frozenset(run_has(first))
        specs, _ = select_metrics(metric_registry(), first, self._metrics, self._groups, self._options, set(),
                                  have=set(self.have))
        if not specs or not all(streamable(s) for s in specs):
            return "a selected metric does not stream (judge, embeddings)"
        self.specs = specs
        self._ctx = ScoringContext(run_id=self._run_id, store=self._store, options=self._options, have=self.have)
        self.report = ScoreReport(run_id=self._run_id, metrics=[s.name for s in specs])
        return None

    def score(self, chunk: list[Item]) -> None:
        """Score a chunk and write its rows (metrics, claims, verdicts) as part files now; the
        composites (phase 2) are built from this pass's own phase-1 values, held here."""
        ctx, report = self._ctx, self.report
        phase1 = [s for s in self.specs if s.group != COMPOSITE]
        phase2 = [s for s in self.specs if s.group == COMPOSITE]
        rows = score_chunk(phase1, chunk, ctx, report)
        for v in rows.values:
            self._values.setdefault((v.method, v.question_id, v.trial), {})[v.metric] = float(v.value)
        if phase2:
            ctx.stored_metrics = self._values
            more = score_chunk(phase2, chunk, ctx, report)
            rows.values.extend(more.values)
            rows.claims.extend(more.claims)
            rows.verdicts.extend(more.verdicts)
            rows.repeats.extend(more.repeats)
        if write_chunk(self._writer, rows):
            report.parts_written += 1
        report.n_values += len(rows.values)

    def close(self, have: frozenset[str], n_items: int) -> tuple[ScoreReport, dict[str, Any]] | None:
        """The pass's report and history entry, once every answer is scored: None when the
        selection made from every answer (`have`) differs from the streamed one."""
        if self.report is None:
            return None
        from evalcore.scoring.engine import metric_registry, select_metrics

        specs, skipped = select_metrics(metric_registry(), [], self._metrics, self._groups, self._options,
                                        set(), have=set(have))
        if have != self.have or [s.name for s in specs] != [s.name for s in self.specs or []]:
            return None
        self.report.skipped = skipped
        self.report.n_items = n_items
        return self.report, history_entry(self.specs, self._options)

    def release(self) -> None:
        """Nothing to let go in this process (a worker's handle ends its child here)."""
