"""The runner against a scripted faulty server: every failure is retried as documented,
classified, stored once, and the run still completes with every question answered once."""

from __future__ import annotations

from evalcore.runner.config import EvalConfig
from evalcore.scoring.queries import run_responses
from evalcore.pipeline import run_evaluation

TEXTS = ["plain one", "FLAKY two", "BROKEN three", "TRUNC four", "SLOW five", "RESET six",
         "EMPTY seven", "BADRANK eight", "plain nine"]


def test_every_failure_is_classified_and_stored_once(faulty, question_file, store, audit):
    qfile = question_file(TEXTS)
    config = EvalConfig(target=faulty.url, dataset=str(qfile), methods=["m"], concurrency=4,
                        timeout=0.5, retries=2, backoff=0.01, score=False, progress=False)
    result = run_evaluation(config, store)
    assert result.status == "complete"
    by_q = {r.question_id: r for r in run_responses(store, result.run_id)}
    assert len(by_q) == len(TEXTS)
    kinds = {qid: (r.error_kind, r.raw.get("attempts")) for qid, r in by_q.items()}
    assert kinds["q1"] == (None, 1)
    assert kinds["q2"] == (None, 3)            # 500, 500, then a valid answer
    assert kinds["q3"] == ("http", 3)          # permanent 500: 1 + 2 retries
    assert kinds["q4"] == ("malformed", 3)     # truncated JSON is retried, then classified
    assert kinds["q5"] == ("timeout", 3)
    assert kinds["q6"] == ("error", 3)         # connection reset
    assert kinds["q7"] == ("empty", 1)         # blank answer: not retried
    assert kinds["q8"] == ("malformed", 3)     # duplicate chunk ids do not fit the contract
    assert by_q["q2"].answer == "answer to FLAKY two"
    assert "HTTP 500" in by_q["q3"].error
    # the server saw exactly the attempts the client reports (nothing hidden, nothing extra)
    assert faulty.calls[("BROKEN three", "m")] == 3
    assert faulty.calls[("FLAKY two", "m")] == 3
    assert faulty.calls[("plain one", "m")] == 1
    assert len(audit.rows(store, result.run_id, "responses")) == len(TEXTS)
    assert audit.replaced(store, result.run_id, "responses") == 0
    manifest = store.manifest(result.run_id)
    assert manifest.counts["errors"] == 6 and manifest.counts["errors_malformed"] == 2
    assert manifest.target_info["models_info"] == {"llm": "faulty-1"}
    assert manifest.target_info["index_stats"] is None  # the faulty server has no /index/stats


def test_unreachable_target_fails_before_creating_a_run(question_file, store):
    import socket

    import pytest

    from evalcore.targets import TargetUnavailable

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = EvalConfig(target=f"http://127.0.0.1:{port}", dataset=str(question_file(["a"])),
                        timeout=1, score=False, progress=False)
    with pytest.raises(TargetUnavailable):
        run_evaluation(config, store)
    assert store.run_ids() == []
