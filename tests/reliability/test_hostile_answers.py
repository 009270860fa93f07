"""A live target's answer must never stop a run: hostile text is repaired or becomes that
question's error, every other answer is kept, and the run completes (a run that failed on an
answer would fail again on every --resume, since the server says the same thing again).

Covered: lone UTF-16 surrogates (JSON may spell "\\ud800"; UTF-8 cannot hold it) in the
answer, the ranking, the citations and unmapped fields, and in /health and /models/info (which
go into run.json: the run folder used to be left behind empty); JSON nested 100 000 deep (the
decoder raises RecursionError); and a record the store cannot encode reaching the writer.
"""

from __future__ import annotations

import json
import re

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.scoring.queries import run_responses
from evalcore.pipeline import run_evaluation
from evalcore.runner.engine import ResponseSink
from evalcore.schemas import EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION

from .servers import Fault, ScriptedServer, ok_json, rag_answer

FFFD = "\ufffd"
# Raw bytes as a server would send them: JSON escapes of lone surrogates (high, low, reversed pair).
SURROGATE_BODY = (b'{"answer": "x \\ud800 y \\udfff\\ud800", '
                  b'"retrieved": [{"chunk_id": "c\\udc00", "text": "ctx \\ud83d"}], '
                  b'"citations": ["c\\udc00"], "server_note\\ud800": "n\\udbff"}')
DEEP_BODY = b'{"answer": "x", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _decide(request: dict) -> Fault:
    question = request["body"]["question"]
    if "SURROGATE" in question:
        return Fault("ok", 200, SURROGATE_BODY)
    if "DEEP" in question:
        return Fault("ok", 200, DEEP_BODY)
    return rag_answer(question)


def _qfile(tmp_path, texts: dict[str, str]):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": k, "question": v}) + "\n" for k, v in texts.items()))
    return path


def _config(url: str, qfile, **extra) -> EvalConfig:
    return EvalConfig(target=url, dataset=str(qfile), methods=["m"], concurrency=2, batch_size=2,
                      retries=1, backoff=0.01, timeout=5, score=False, progress=False, **extra)


def _no_surrogate(value) -> bool:
    return not re.search(r"\\ud[89a-f]", json.dumps(value))


@pytest.fixture
def server():
    srv = ScriptedServer(_decide).start()
    yield srv
    srv.stop()


def test_lone_surrogates_in_an_answer_are_replaced_and_noted(server, store, tmp_path):
    texts = {f"q{i}": f"plain {i}" for i in range(6)} | {"q3": "SURROGATE here"}
    result = run_evaluation(_config(server.url, _qfile(tmp_path, texts)), store)
    assert result.status == "complete"
    got = {r.question_id: r for r in run_responses(store, result.run_id)}
    assert set(got) == set(texts)  # every question stored once, the others untouched
    assert all(got[q].error is None for q in texts)
    bad = got["q3"]
    assert bad.answer == f"x {FFFD} y {FFFD}{FFFD}"
    assert bad.retrieved[0].chunk_id == f"c{FFFD}" and bad.retrieved[0].text == f"ctx {FFFD}"
    assert bad.citations[0].chunk_id == f"c{FFFD}"
    note = bad.raw["unencodable_text"]
    assert note["replaced"] == 6
    assert {"answer", "retrieved[0].text", "retrieved[0].chunk_id", "citations[0]"} <= set(note["fields"])
    assert _no_surrogate(bad.model_dump(mode="json"))
    assert got["q0"].raw.get("unencodable_text") is None
    assert server.calls[("SURROGATE here", "m")] == 1  # repaired, not retried


def test_resume_after_a_surrogate_answer_has_nothing_left_to_ask(server, store, tmp_path):
    """The old failure mode: the run failed at the bad answer and --resume failed again."""
    from evalcore.pipeline import resume_run

    texts = {f"q{i}": ("SURROGATE " if i % 3 == 0 else "") + f"q {i}" for i in range(9)}
    result = run_evaluation(_config(server.url, _qfile(tmp_path, texts)), store)
    assert result.status == "complete"
    again = resume_run(result.run_id, store, progress=False, score=False)
    assert again.status == "complete" and again.asked == 0
    assert len(run_responses(store, result.run_id)) == 9


def test_surrogates_in_health_and_info_do_not_stop_the_run(store, tmp_path):
    def on_get(request: dict) -> Fault:
        if request["path"] == "/health":
            return Fault("ok", 200, b'{"status": "ok \\ud800"}')
        if request["path"] == "/models/info":
            return Fault("ok", 200, b'{"llm\\udfff": ["m\\ud800"]}')
        return ok_json({"error": "not found"}, 404)

    srv = ScriptedServer(_decide, on_get=on_get).start()
    try:
        result = run_evaluation(_config(srv.url, _qfile(tmp_path, {"q1": "plain"})), store)
    finally:
        srv.stop()
    assert result.status == "complete"
    assert store.run_ids() == [result.run_id]
    manifest = store.manifest(result.run_id)
    assert manifest.target_info["targets"]["default"]["health"]["status"] == f"ok {FFFD}"
    assert manifest.target_info["models_info"] == {f"llm{FFFD}": [f"m{FFFD}"]}
    assert any("U+FFFD" in n and "health.status" in n for n in manifest.notes), manifest.notes


def test_a_run_that_cannot_be_created_leaves_no_folder(store, monkeypatch):
    """(A manifest holding a lone surrogate no longer fails: its serializer makes every string
    storable, test_manifest_text_is_always_storable. A failing write is forced instead.)"""
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id="r-1", name="r", kind="live",
                           status="created", evalcore_version="0", methods=["m"])

    def cannot_encode(*args, **kwargs):
        raise ValueError("cannot encode")

    monkeypatch.setattr(RunManifest, "model_dump_json", cannot_encode)
    with pytest.raises(ValueError):
        store.create_run(manifest)
    assert not (store.root / "r-1").exists()
    assert store.run_ids() == []


def test_manifest_text_is_always_storable(store):
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id="r-1", name="r", kind="live",
                           status="created", evalcore_version="0", methods=["m"],
                           target_info={"health": {"status": "ok \ud800\x00"}}, notes=["file a\udcff.jsonl"])
    store.create_run(manifest)
    stored = store.manifest("r-1")
    assert stored.target_info["health"]["status"] == f"ok {FFFD}{FFFD}" and stored.notes == ["file a\\xff.jsonl"]


def test_an_answer_the_store_cannot_encode_becomes_that_questions_error(store):
    """The writer's last line of defence: whatever slipped past parsing costs one row, not the batch."""
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id="r-2", name="r", kind="live",
                           status="created", evalcore_version="0", methods=["m"])
    writer = store.create_run(manifest)
    sink = ResponseSink(writer, batch_size=10)
    sink.add(EvalResponse(question_id="good", method="m", answer="fine", raw={"attempts": 1}))
    sink.add(EvalResponse(question_id="bad", method="m", answer="bro\ud800ken", raw={"attempts": 2}))
    assert sink.flush_sync() == 2
    writer.publish()
    got = {r.question_id: r for r in run_responses(store, "r-2")}
    assert got["good"].answer == "fine" and got["good"].error is None
    assert got["bad"].error_kind == "malformed" and "could not be stored" in got["bad"].error
    assert got["bad"].raw == {"attempts": 2}


def test_an_exception_while_asking_is_that_questions_error(server, store, tmp_path):
    texts = {"q1": "plain one", "q2": "DEEP nesting", "q3": "plain three"}
    result = run_evaluation(_config(server.url, _qfile(tmp_path, texts)), store)
    assert result.status == "complete"
    got = {r.question_id: r for r in run_responses(store, result.run_id)}
    assert set(got) == set(texts)
    assert got["q1"].error is None and got["q3"].error is None
    assert got["q2"].error_kind in ("error", "malformed") and got["q2"].error
