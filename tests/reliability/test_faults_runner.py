"""Faults in flight, runner side: a live run against a server that resets, stalls, storms 5xx,
rate-limits with Retry-After, truncates and drips. Every question must end stored exactly
once with the right classification, the server must have seen exactly the attempts the
client reports, and the per-request timeout must bound the whole request (a drip of bytes
that each arrive in time must still time out)."""

from __future__ import annotations

import json
import time

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.scoring.queries import run_responses
from evalcore.pipeline import run_evaluation

from .servers import Fault, ScriptedServer, rag_answer

TIMEOUT = 0.5
RETRIES = 3
TEXTS = {"q1": "plain", "q2": "RESET twice", "q3": "STALL once", "q4": "STORM of 503",
         "q5": "RATE limited", "q6": "TRUNC twice", "q7": "DRIP always", "q8": "STORM forever"}


def decide(request: dict) -> Fault:
    q, n = request["body"]["question"], request["n"]
    if "RESET" in q and n <= 2:
        return Fault("reset")
    if "STALL" in q and n == 1:
        return Fault("stall", seconds=3.0)
    if "STORM of" in q and n <= 3:
        return Fault("ok", 503, b'{"error": "overloaded"}')
    if "STORM forever" in q:
        return Fault("ok", 502, b'{"error": "bad gateway"}')
    if "RATE" in q and n == 1:
        return Fault("ok", 429, b'{"error": "slow down"}', {"Retry-After": "1"})
    if "TRUNC" in q and n <= 2:
        return Fault("truncate", body=rag_answer(q).body)
    if "DRIP" in q:  # 200 bytes, 4 every 0.1 s: each read in time, the whole in ~5 s
        return Fault("drip", body=json.dumps({"answer": "x" * 180}).encode(), chunk=4, seconds=0.1)
    return rag_answer(q)


@pytest.fixture
def server():
    srv = ScriptedServer(decide).start()
    yield srv
    srv.stop()


def _qfile(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": k, "question": v, "ground_truth": "x"}) + "\n"
                            for k, v in TEXTS.items()))
    return path


def test_runner_survives_every_fault_class(server, store, tmp_path, audit):
    config = EvalConfig(target=server.url, dataset=str(_qfile(tmp_path)), methods=["m"], concurrency=4,
                        timeout=TIMEOUT, retries=RETRIES, backoff=0.01, score=False, progress=False)
    t0 = time.monotonic()
    result = run_evaluation(config, store)
    elapsed = time.monotonic() - t0
    assert result.status == "complete"
    got = {r.question_id: r for r in run_responses(store, result.run_id)}
    assert set(got) == set(TEXTS)
    outcome = {q: (r.error_kind, r.raw.get("attempts")) for q, r in got.items()}
    assert outcome == {"q1": (None, 1), "q2": (None, 3), "q3": (None, 2), "q4": (None, 4),
                       "q5": (None, 2), "q6": (None, 3), "q7": ("timeout", RETRIES + 1),
                       "q8": ("http", RETRIES + 1)}
    # the server saw exactly the attempts the client reports: nothing hidden, nothing extra
    for qid, text in TEXTS.items():
        assert server.calls[(text, "m")] == got[qid].raw["attempts"], qid
    # Retry-After: 1 was honoured (the second attempt came at least ~1 s after the first)
    rate = [r["t"] for r in server.requests if r["body"]["question"] == TEXTS["q5"]]
    assert rate[1] - rate[0] >= 0.95 and got["q5"].raw["retry_waits"][0] >= 1.0
    # the drip: every attempt ended at the total deadline, not after the ~5 s the body takes
    drip = got["q7"]
    assert drip.raw["elapsed_ms"] / 1000 < (RETRIES + 1) * (TIMEOUT + 0.3) + 0.5
    assert elapsed < 8.0
    raw = audit.rows(store, result.run_id, "responses").groupby("question_id").size()
    assert sorted(raw.index) == sorted(TEXTS) and set(raw) == {1}
    assert audit.replaced(store, result.run_id, "responses") == 0
    retries = sum(r.raw["attempts"] - 1 for r in got.values())
    print(f"\n[faults/runner] {len(TEXTS)} questions, 6 fault classes, retries seen {retries}, "
          f"{elapsed:.1f}s")


def test_retry_after_longer_than_the_cap_is_reported_not_waited(store, tmp_path):
    """A server asking for an hour's pause gets an error row at once, not a stalled run."""
    srv = ScriptedServer(lambda r: Fault("ok", 429, b"{}", {"Retry-After": "3600"})).start()
    try:
        qfile = tmp_path / "q.jsonl"
        qfile.write_text(json.dumps({"id": "q1", "question": "hi"}) + "\n")
        config = EvalConfig(target=srv.url, dataset=str(qfile), timeout=TIMEOUT, retries=RETRIES,
                            backoff=0.01, score=False, progress=False)
        t0 = time.monotonic()
        result = run_evaluation(config, store)
        assert time.monotonic() - t0 < 5
        (resp,) = run_responses(store, result.run_id)
        assert resp.error_kind == "http" and "429" in resp.error and resp.raw["attempts"] == 1
    finally:
        srv.stop()
