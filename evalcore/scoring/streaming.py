"""Scoring while asking: a live run's answers are scored in chunks as they are written.

Why: the runner asks at the speed of the wire, and scoring everything after the last answer
added 40-60% to a run's wall time (issue 38, item 2). Here a background thread takes the
answers the runner has written, scores them with the same chunk code as `score_run`
(scoring/chunk.py), and writes each chunk's rows as part files at once, so a crash or Ctrl-C
keeps every chunk scored so far (the run's next publish makes them visible). The composites
(phase 2) of a chunk are built from that chunk's own values, held in memory: on a fresh run
they are exactly what `score_run` would read back from the store.

Same values as `score_run`, or no streaming at all:
- only metrics that are cheap, local and per answer stream (no judge, no embeddings, nothing
  that reads the whole run); a selection with any other metric leaves the run to `score_run`
  after the last answer, as before;
- which metrics run, and the run-level rules some apply ("the run has answers", "has
  citations": ScoringContext.have), are decided from the questions and the first answers;
  `finish` decides them again from every answer, and if anything differs the caller scores the
  whole run again with `score_run` (its values replace the streamed ones: compaction keeps the
  newest row per key).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable

from evalcore.metrics.base import Item, MetricSpec, ScoringContext
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring.chunk import run_has, score_chunk, write_chunk
from evalcore.scoring.pass_record import history_entry, pass_record
from evalcore.scoring.pass_report import ScoreReport
from evalcore.store import RunStore, RunWriter

COMPOSITE = "composite"
MIN_CHUNK = 64  # answers taken at once while asking: per-chunk costs stay small beside the work
MAX_CHUNK = 512


def streamable(spec: MetricSpec) -> bool:
    """A metric whose value for one answer needs nothing but that answer, its question and the
    run-level `have`: no judge (its calls have their own batching and cache), no embedding
    model, no whole-run statistic (BERTScore's idf needs embeddings, so it is excluded here)."""
    return not ({"judge", "embeddings"} & set(spec.needs) or spec.warm or spec.first_stage or spec.second_stage)


class StreamingScorer:
    """Scores answers handed to `add` in a background thread; `finish` returns the pass's report
    once every answer is scored, or None when the run must be scored afterwards instead."""

    def __init__(self, store: RunStore, writer: RunWriter, run_id: str, questions: list[EvalQuestion],
                 metrics: Iterable[str] | None, groups: Iterable[str] | None, options: dict[str, Any]):
        self._store, self._writer, self._run_id = store, writer, run_id
        self._questions = {q.id: q for q in questions}
        self._metrics, self._groups, self._options = list(metrics or []), list(groups or []), dict(options)
        self._pending: list[Item] = []
        self._seen: set[str] = set()  # what every answer added holds (run_has): `finish` decides again from it
        self._n_items = 0
        self._cond = threading.Condition()
        self._closing = False
        self._stopped = False
        self.failure: BaseException | None = None  # why streaming gave up (the caller scores afterwards)
        self._specs: list[MetricSpec] | None = None
        self._have: frozenset[str] | None = None
        self._ctx: ScoringContext | None = None
        self._report: ScoreReport | None = None
        self._values: dict[tuple[str, str, int], dict[str, float]] = {}
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="evalcore-live-scoring", daemon=True)
        self._thread.start()

    def add(self, responses: list[EvalResponse]) -> None:
        """Answers just written by the runner (any thread)."""
        if self._stopped or self.failure is not None:
            return  # streaming gave up: the run is scored afterwards, nothing is held here
        items = [(self._questions[r.question_id], r) for r in responses if r.question_id in self._questions]
        seen = run_has(items)
        with self._cond:
            self._seen |= seen
            self._n_items += len(items)
            self._pending.extend(items)
            self._cond.notify()

    def stop(self) -> None:
        """Give up (Ctrl-C, a failed run): the chunks already written stay in the store."""
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def finish(self) -> ScoreReport | None:
        """Score what is left and return the pass's report, with the manifest edit to publish
        (`record`); None when the caller must score the run afterwards (`failure` says why,
        or the final selection differs from the streamed one)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self.failure is not None or self._stopped or self._report is None:
            return None
        from evalcore.scoring.engine import metric_registry, select_metrics

        have = frozenset(self._seen)
        specs, skipped = select_metrics(metric_registry(), [], self._metrics, self._groups, self._options,
                                        set(), have=set(have))
        if have != self._have or [s.name for s in specs] != [s.name for s in self._specs or []]:
            return None
        self._report.skipped = skipped
        self._report.n_items = self._n_items
        self._report.seconds = time.monotonic() - self._started
        return self._report

    def record(self):
        """The manifest edit the run's final publish applies: the pass's history entry."""
        return pass_record(None, history_entry(self._specs or [], self._options))

    def _take(self) -> list[Item] | None:
        """The next chunk: at least MIN_CHUNK answers while asking, whatever is left at the end;
        None when done."""
        with self._cond:
            while not self._stopped and len(self._pending) < MIN_CHUNK and not self._closing:
                self._cond.wait()
            if self._stopped or not self._pending:
                return None
            chunk, self._pending = self._pending[:MAX_CHUNK], self._pending[MAX_CHUNK:]
            return chunk

    def _loop(self) -> None:
        try:
            while (chunk := self._take()) is not None:
                if self._specs is None and not self._decide(chunk):
                    return
                self._score(chunk)
        except BaseException as exc:  # noqa: BLE001 - reported through `failure`; the caller scores afterwards
            self.failure = exc
        finally:
            with self._cond:
                self._pending = []

    def _decide(self, first: list[Item]) -> bool:
        """Which metrics stream, from the questions and the first answers; False (stream
        nothing) when any selected metric cannot."""
        from evalcore.metrics.options import check_options
        from evalcore.scoring.engine import metric_registry, select_metrics

        self._options = check_options(self._options)
        self._have = frozenset(run_has(first))
        specs, _ = select_metrics(metric_registry(), first, self._metrics, self._groups, self._options, set(),
                                  have=set(self._have))
        if not specs or not all(streamable(s) for s in specs):
            self.failure = RuntimeError("a selected metric does not stream (judge, embeddings)")
            return False
        self._specs = specs
        self._ctx = ScoringContext(run_id=self._run_id, store=self._store, options=self._options, have=self._have)
        self._report = ScoreReport(run_id=self._run_id, metrics=[s.name for s in specs])
        return True

    def _score(self, chunk: list[Item]) -> None:
        ctx, report = self._ctx, self._report
        phase1 = [s for s in self._specs if s.group != COMPOSITE]
        phase2 = [s for s in self._specs if s.group == COMPOSITE]
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
