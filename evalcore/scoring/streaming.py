"""Scoring while asking: a live run's answers are scored in chunks as they are written.

Why: the runner asks at the speed of the wire, and scoring everything after the last answer
added 40-60% to a run's wall time (issue 38, item 2). Here a background thread takes the
answers the runner has written, scores them with the same chunk code as `score_run`
(scoring/chunk.py), and writes each chunk's rows as part files at once, so a crash or Ctrl-C
keeps every chunk scored so far (the run's next publish makes them visible). The composites
(phase 2) of a chunk are built from that chunk's own values, held in memory: on a fresh run
they are exactly what `score_run` would read back from the store.

Where the chunks are scored: in a thread of this process, or, for a run of at least
`WORKER_MIN_JOBS` jobs, in a child process (scoring/stream_worker.py) on another core, so the
scoring does not take the interpreter lock from the asking (unless this process registered a
metric of its own, which the child would not have: `worker_can_score`). Both run the same ChunkStream
(scoring/stream_chunks.py). The child costs an interpreter start, which small runs (the tests'
many live runs) do not repay.

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

import sys
import threading
import time
from typing import Any, Iterable

from evalcore.metrics.base import Item
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring.chunk import run_has
from evalcore.scoring.pass_record import pass_record
from evalcore.scoring.pass_report import ScoreReport
from evalcore.scoring.stream_chunks import COMPOSITE, ChunkStream, streamable
from evalcore.store import RunStore, RunWriter

__all__ = ["COMPOSITE", "MAX_CHUNK", "MIN_CHUNK", "StreamingScorer", "WORKER_MIN_JOBS", "streamable"]

MIN_CHUNK = 64  # answers taken at once while asking: per-chunk costs stay small beside the work
MAX_CHUNK = 512
WORKER_MIN_JOBS = 1000  # a run asking this many answers scores them in a child process


def worker_can_score() -> bool:
    """A child process scores with the package's own metrics only: not when this process has
    registered one of its own (`register_metric`: a plugin, an API user's metric), which the
    child would not know. A registry never imported here holds nothing of the kind."""
    registry = sys.modules.get("evalcore.metrics.registry")
    return registry is None or registry.only_builtin()


class StreamingScorer:
    """Scores answers handed to `add` in a background thread (or a child process it feeds);
    `finish` returns the pass's report once every answer is scored, or None when the run must
    be scored afterwards instead."""

    def __init__(self, store: RunStore, writer: RunWriter, run_id: str, questions: list[EvalQuestion],
                 metrics: Iterable[str] | None, groups: Iterable[str] | None, options: dict[str, Any],
                 in_worker: bool = False, expected: int | None = None):
        self._questions = {q.id: q for q in questions}
        self._expected = expected  # answers the run will hand to `add`, when known: see _take
        metrics, groups = list(metrics or []), list(groups or [])
        self._stream: Any = None
        if in_worker and worker_can_score():
            from evalcore.scoring.stream_worker import WorkerStream

            try:
                self._stream = WorkerStream(store, run_id, metrics, groups, dict(options))
            except (OSError, ValueError):  # no interpreter to start (frozen, a process limit): score here
                self._stream = None
        if self._stream is None:
            self._stream = ChunkStream(store, writer, run_id, metrics, groups, dict(options))
        self._pending: list[Item] = []
        self._seen: set[str] = set()  # what every answer added holds (run_has): `finish` decides again from it
        self._n_items = 0
        self._cond = threading.Condition()
        self._closing = False
        self._stopped = False
        self._decided = False
        self.failure: BaseException | None = None  # why streaming gave up (the caller scores afterwards)
        self._entry: dict[str, Any] | None = None
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
        try:
            if self.failure is not None or self._stopped or not self._decided:
                return None
            closed = self._stream.close(frozenset(self._seen), self._n_items)
        except Exception as exc:  # noqa: BLE001 - the worker is gone: the caller scores afterwards
            self.failure = exc
            return None
        finally:
            self._stream.release()
        if closed is None:
            return None
        report, self._entry = closed
        report.seconds = time.monotonic() - self._started
        return report

    def record(self):
        """The manifest edit the run's final publish applies: the pass's history entry."""
        return pass_record(None, self._entry)

    def _near_the_end(self) -> bool:
        """Fewer than a chunk's answers are still to come: whatever is pending is scored now.
        Otherwise the run's last answers (up to a chunk, ~0.1 s of scoring) would all wait for
        its end and be scored after the last answer, in the time the user waits."""
        return self._expected is not None and self._expected - self._n_items < MIN_CHUNK

    def _take(self) -> list[Item] | None:
        """The next chunk: at least MIN_CHUNK answers while asking (whatever is pending once
        fewer than that are still to come), whatever is left at the end; None when done."""
        with self._cond:
            while (not self._stopped and not self._closing and len(self._pending) < MIN_CHUNK
                   and not (self._pending and self._near_the_end())):
                self._cond.wait()
            if self._stopped or not self._pending:
                return None
            chunk, self._pending = self._pending[:MAX_CHUNK], self._pending[MAX_CHUNK:]
            return chunk

    def _loop(self) -> None:
        try:
            while (chunk := self._take()) is not None:
                if not self._decided:
                    why = self._stream.decide(chunk)
                    if why is not None:
                        self.failure = RuntimeError(why)
                        return
                    self._decided = True
                self._stream.score(chunk)
        except BaseException as exc:  # noqa: BLE001 - reported through `failure`; the caller scores afterwards
            self.failure = exc
        finally:
            with self._cond:
                self._pending = []
            if self.failure is not None or self._stopped:
                self._stream.release()
