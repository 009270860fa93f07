"""The asking loop's writes run beside the asking (runner/engine.py, Flushes): a slow write
(a publish compacting the run) must not stop every lane, and a write that fails beside the
asking still stops the run with its error."""

from __future__ import annotations

import asyncio
import threading

import pytest

from evalcore.runner.config import EvalConfig, MethodConfig
from evalcore.runner.engine import HOLD_BATCHES, Job, ResponseSink, ask_jobs
from evalcore.schemas import EvalQuestion, EvalResponse

BATCH = 4
LANES = 4


class AnsweringClient:
    """Answers at once, counting the answers given."""

    def __init__(self) -> None:
        self.answered = 0
        self.enough = threading.Event()  # set once `need` answers were given
        self.need = 10 ** 9

    async def query(self, question, question_id, method, send_method, top_k, params):
        await asyncio.sleep(0.001)
        self.answered += 1
        if self.answered >= self.need:
            self.enough.set()
        return EvalResponse(question_id=question_id, method=method, answer=f"answer to {question}")


class SlowFirstWrite:
    """The first write waits until the client has answered `need` more answers (or `wait_s` pass)."""

    def __init__(self, client: AnsweringClient, need: int, wait_s: float = 10.0) -> None:
        self.client, self.need, self.wait_s = client, need, wait_s
        self.batches: list[list[EvalResponse]] = []
        self.waited_out = None

    def write_responses(self, batch):
        if not self.batches:
            self.client.need = self.client.answered + self.need
            self.waited_out = not self.client.enough.wait(self.wait_s)
        self.batches.append(list(batch))


class FailingSecondWrite:
    def __init__(self) -> None:
        self.calls = 0

    def write_responses(self, batch):
        self.calls += 1
        if self.calls == 2:
            raise OSError(28, "No space left on device")


def _jobs(n: int) -> list[Job]:
    method = MethodConfig(name="m")
    return [Job(EvalQuestion(id=f"q{i}", question=f"question {i}"), method) for i in range(n)]


def _ask(writer, client, n: int):
    config = EvalConfig(target="http://127.0.0.1:9", dataset="unused.jsonl", concurrency=LANES, batch_size=BATCH, flush_seconds=3600)
    sink = ResponseSink(writer, BATCH)
    stats = asyncio.run(ask_jobs(_jobs(n), {"default": client}, config, sink, show_progress=False))
    return stats, sink


def test_the_lanes_keep_asking_while_a_write_is_slow():
    # Before, every lane whose answer filled the buffer awaited the write: during a slow write
    # no more than a batch and a lane's answer each could arrive, so this write timed out.
    client = AnsweringClient()
    more = (HOLD_BATCHES - 1) * BATCH
    writer = SlowFirstWrite(client, need=more)
    stats, sink = _ask(writer, client, 200)
    assert writer.waited_out is False, f"fewer than {more} answers arrived while the first write was going"
    assert stats.asked == 200 and sink.written == 200
    assert sorted(r.question_id for b in writer.batches for r in b) == sorted(f"q{i}" for i in range(200))


def test_the_lanes_wait_once_the_buffer_holds_its_limit():
    # the buffer is bounded: answers beyond HOLD_BATCHES batches wait for the write going on
    client = AnsweringClient()
    writer = SlowFirstWrite(client, need=HOLD_BATCHES * BATCH + 2 * LANES, wait_s=1.0)
    stats, _ = _ask(writer, client, 200)
    assert writer.waited_out is True  # the lanes stopped: the client never got that far ahead
    assert stats.asked == 200


def test_a_write_failing_beside_the_asking_stops_the_run_with_its_error():
    with pytest.raises(OSError, match="No space left"):
        _ask(FailingSecondWrite(), AnsweringClient(), 200)
