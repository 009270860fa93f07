"""The asking loop: every (question, method, trial) job is sent once, with bounded concurrency,
and its answer (or classified error) lands in the store within one small batch.

Why this shape:
* a fixed pool of `concurrency` workers pulls from a queue, so memory stays flat for large
  runs and the server never sees more than `concurrency` requests from us at once;
* jobs are interleaved question-major (q1/m1, q1/m2, q2/m1...) so all methods progress in
  the same pass and a partial run still compares methods on the same questions;
* answers are buffered and written as one atomic Parquet part file per `batch_size` answers
  or `flush_seconds`, whichever comes first, and sooner when the buffered answers hold
  BUFFER_CHARS of text or the value budget of retrieved chunks (evalcore/common/value_budget.py): a
  reply may be as large as `max_response_mb`, and sixteen such must not be held at once;
  a crash loses at most the unwritten buffer and
  `--resume` re-asks exactly those jobs. On cancellation (Ctrl-C) the buffer is flushed
  synchronously before the cancellation propagates;
* writes run beside the asking (Flushes): the lane whose answer fills the buffer starts a write
  and goes on asking. A lane waits only when HOLD_BATCHES batches, or the memory guards above,
  are buffered while a write is still going: a write that takes long (each few seconds it
  publishes, which compacts the run) must not stop every lane, and a lane waiting on its own
  write's fsync was a lane not asking;
* one bad answer never fails the run. A run that fails on an answer fails again on
  `--resume` (the server says the same thing), so it could never finish: an unexpected
  exception while asking, or an answer the store cannot encode, becomes that job's error
  row (`error_kind` "error" / "malformed") and every other answer is kept.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from evalcore.runner.config import EvalConfig, MethodConfig
from evalcore.runner.progress import RunProgress
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.storable import storable_text
from evalcore.store import RunWriter
from evalcore.targets.client import RetryPolicy, TargetClient
from evalcore.common.value_budget import value_limit

BUFFER_CHARS = 16 * 2 ** 20  # text held in buffered answers before they are written
HOLD_BATCHES = 8  # batches buffered while a write is going before the lanes wait for it


@dataclass(frozen=True)
class Job:
    question: EvalQuestion
    method: MethodConfig
    trial: int = 0  # which of the question's `--trials T` askings this is (0 .. T-1)


@dataclass
class AskStats:
    asked: int = 0
    written: int = 0
    errors: Counter = field(default_factory=Counter)
    seconds: float = 0.0


def target_clients(config: EvalConfig, lanes: int | None = None) -> dict[str, TargetClient]:
    """One client per target, each with `lanes` (default: the config's concurrency) connections."""
    retry = RetryPolicy(retries=config.retries, backoff_s=config.backoff)
    return {name: TargetClient(spec, timeout_s=config.timeout, concurrency=lanes or config.concurrency,
                               retry=retry, follow_redirects=config.follow_redirects,
                               max_response_mb=config.max_response_mb)
            for name, spec in config.targets.items()}


def plan_jobs(questions: list[EvalQuestion], methods: list[MethodConfig],
              done: set[tuple[str, str, int]], trials: int = 1) -> list[Job]:
    """Jobs still missing, question-major (a question's trials one after another, so a run cut
    short has every trial of the questions it reached); `done` holds (method name, question id,
    trial) triples."""
    return [Job(q, m, t) for q in questions for t in range(trials) for m in methods
            if (m.name, q.id, t) not in done]


class ResponseSink:
    """Buffers answers and writes them as part files; thread-safe, flushes never overlap."""

    def __init__(self, writer: RunWriter, batch_size: int,
                 on_flush: Callable[[int], None] | None = None,
                 on_batch: Callable[[list[EvalResponse]], None] | None = None,
                 before_first_write: Callable[[], None] | None = None,
                 failed_before: Callable[[], BaseException | None] | None = None):
        self.writer = writer
        self._before_first_write = before_first_write  # e.g. the run's first publish, made meanwhile
        # what made that work fail, if it did (None meanwhile): asked before every question, so
        # a run that could not write its questions stops asking at once instead of asking until
        # its held answers fill the buffer (paid calls whose answers would be thrown away)
        self._failed_before = failed_before
        self.batch_size = batch_size
        self.on_flush = on_flush
        self.on_batch = on_batch  # gets each batch as written (scoring while asking: scoring/streaming.py)
        self._buffer: list[EvalResponse] = []
        self._held = (0, 0)  # (characters, chunks) of the buffered answers
        self._most_values = value_limit()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.written = 0
        self.failure: BaseException | None = None  # the first write that failed

    def add(self, response: EvalResponse) -> bool:
        """Buffer one answer; True when the buffer should be written now."""
        chars = len(response.answer) + sum(len(chunk.text) for chunk in response.retrieved)
        values = 1 + len(response.retrieved) + len(response.citations)
        with self._lock:
            self._buffer.append(response)
            self._held = (self._held[0] + chars, self._held[1] + values)
            return (len(self._buffer) >= self.batch_size or self._held[0] >= BUFFER_CHARS
                    or self._held[1] >= self._most_values)

    def overfull(self) -> bool:
        """True when the lanes must wait for the write going on (see Flushes)."""
        with self._lock:
            return (len(self._buffer) >= HOLD_BATCHES * self.batch_size or self._held[0] >= BUFFER_CHARS
                    or self._held[1] >= self._most_values)

    def raise_failure(self) -> None:
        """A write that failed beside the asking (a full disk) stops the run as it would have
        stopped the lane that waited for it."""
        if self.failure is None and self._failed_before is not None:
            self.failure = self._failed_before()
        if self.failure is not None:
            raise self.failure

    def flush_sync(self) -> int:
        try:
            return self._flush_sync()
        except BaseException as exc:  # noqa: BLE001 - recorded, then raised as it was
            self.failure = self.failure or exc
            raise

    def _flush_sync(self) -> int:
        with self._write_lock:
            with self._lock:
                batch, self._buffer, self._held = self._buffer, [], (0, 0)
            if not batch:
                return 0
            if self._before_first_write is not None:
                self._before_first_write()  # raises, as a failed write would
                self._before_first_write = None
            n = len(batch)
            try:
                self.writer.write_responses(batch)
            except ValueError:  # a record the store cannot encode; disk errors (OSError) propagate
                batch = self._write_one_by_one(batch)
            self.written += n
            if self.on_batch is not None:
                self.on_batch(batch)
            if self.on_flush is not None:
                self.on_flush(self.written)
            return n

    def _write_one_by_one(self, batch: list[EvalResponse]) -> list[EvalResponse]:
        """Write each answer alone; one that still cannot be written is stored as an error
        naming why, so the job counts as asked and the rest of the batch is kept. Returns the
        answers as stored."""
        stored = []
        for response in batch:
            try:
                self.writer.write_responses([response])
            except ValueError as exc:
                response = unstorable(response, exc)
                self.writer.write_responses([response])
            stored.append(response)
        return stored

    async def flush(self) -> int:
        return await asyncio.to_thread(self.flush_sync)


def unstorable(response: EvalResponse, exc: BaseException) -> EvalResponse:
    """The error row that replaces an answer the store could not encode."""
    reason, _ = storable_text(f"{type(exc).__name__}: {exc}"[:500])
    return EvalResponse(question_id=response.question_id, method=response.method,
                        error=f"the answer could not be stored ({reason})", error_kind="malformed",
                        latency_ms=response.latency_ms, trial=response.trial,
                        raw={k: response.raw[k] for k in ("attempts", "retry_waits") if k in response.raw})


def _crashed(job: Job, exc: Exception) -> EvalResponse:
    """The error row for a job whose asking raised instead of returning a response."""
    reason, _ = storable_text(f"{type(exc).__name__}: {exc}"[:500])
    return EvalResponse(question_id=job.question.id, method=job.method.name,
                        error=f"unexpected failure while asking: {reason}", error_kind="error")


class Flushes:
    """Starts the sink's writes from the lanes without making them wait (see the module's
    docstring): at most one write is started from here at a time."""

    def __init__(self, sink: ResponseSink):
        self.sink = sink
        self.task: asyncio.Task | None = None

    async def kick(self) -> None:
        while True:
            self.sink.raise_failure()
            if self.task is None or self.task.done():
                self.task = asyncio.create_task(self.sink.flush())
                self.task.add_done_callback(_retrieved)  # its failure is the sink's: raise_failure
                return
            if not self.sink.overfull():
                return
            await asyncio.wait({self.task})


def _retrieved(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()


async def _periodic_flush(sink: ResponseSink, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        await sink.flush()


async def ask_jobs(jobs: list[Job], clients: dict[str, TargetClient], config: EvalConfig,
                   sink: ResponseSink, show_progress: bool = True) -> AskStats:
    """Ask every job once; returns counts. Cancellation flushes what was answered."""
    stats = AskStats()
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    started = time.perf_counter()

    with RunProgress(len(jobs), "asking", enabled=show_progress) as bar:
        async def worker() -> None:
            while True:
                sink.raise_failure()  # a write the answers need failed: ask nothing more
                try:
                    job = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                m = job.method
                try:
                    response = await clients[m.target].query(
                        job.question.question, job.question.id, m.name, m.send_as,
                        m.top_k or config.top_k, m.params)
                except Exception as exc:  # noqa: BLE001 - see the module docstring
                    response = _crashed(job, exc)
                if response.trial != job.trial:  # the answer is stored under the trial that asked it
                    response = response.model_copy(update={"trial": job.trial})
                stats.asked += 1
                if response.error_kind:
                    stats.errors[response.error_kind] += 1
                bar.advance(sum(stats.errors.values()))
                if sink.add(response):
                    await flushes.kick()

        flushes = Flushes(sink)
        flusher = asyncio.create_task(_periodic_flush(sink, config.flush_seconds))
        workers = [asyncio.create_task(worker()) for _ in range(min(config.concurrency, len(jobs)))]
        try:
            await asyncio.gather(*workers)
        finally:
            flusher.cancel()
            for task in workers:
                task.cancel()
            # Synchronous on purpose: this also runs while a cancellation is propagating.
            sink.flush_sync()
            stats.written = sink.written
            stats.seconds = time.perf_counter() - started
    sink.raise_failure()  # a write beside the asking failed, and nothing else did
    return stats
