"""Scoring while asking (issue 38, item 2; evalcore/scoring/streaming.py): a live run's default
scoring runs in chunks while the rest of the answers are asked. The values are exactly those of
scoring the same answers afterwards; when the later answers show what the first did not (a
metric's needs, a run-level rule), the run is scored again afterwards; a run that fails midway
keeps every chunk scored before, and its resume scores the rest."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pandas as pd
import pytest

from evalcore.pipeline import resume_run, run_evaluation
from evalcore.runner.config import EvalConfig
from evalcore.scoring import streaming
from evalcore.scoring.engine import score_run
from evalcore.store import RunStore, query_df
from tests.reliability.servers import Fault, ScriptedServer, ok_json

N = 150  # over two chunks (streaming.MIN_CHUNK) while asking


def _answer(request: dict, cite_from: int = 0) -> Fault:
    """Answers that touch many rules: abstentions, numbers, empty answers, citations."""
    q = request["body"]["question"]
    i = int(q.rsplit(" ", 1)[1])
    text = ["I don't know.", f"It is {i}.", "", f"the answer to question {i} is {i % 7}"][i % 4]
    body = {"answer": text, "retrieved": [{"chunk_id": f"c{i}", "text": f"context {i}", "score": 1.0}],
            "token_usage": {"input_tokens": 10 + i, "output_tokens": 3}}
    if i >= cite_from:
        body["citations"] = [f"c{i}"]
    return ok_json(body)


def _questions(tmp_path: Path) -> Path:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"q{i}", "question": f"question {i}",
                                         "ground_truth": f"the answer is {i % 7}", "answerable": i % 5 != 0})
                             + "\n" for i in range(N)))
    return qfile


def _values(store: RunStore, run_id: str) -> pd.DataFrame:
    return query_df(store, "SELECT method, question_id, trial, metric, value, reason FROM trial_metrics "
                           "WHERE run_id = ? ORDER BY method, question_id, trial, metric", [run_id])


def _run(server: ScriptedServer, store: RunStore, qfile: Path, **settings):
    config = EvalConfig(target=server.url, dataset=str(qfile), concurrency=8,
                        batch_size=8, progress=False, **settings)
    return run_evaluation(config, store)


@pytest.fixture(params=["thread", "worker"])
def where(request, monkeypatch):
    """Where the chunks are scored: a thread of the run's process, or a child process (a large
    run: streaming.WORKER_MIN_JOBS, lowered here to reach it with a small one)."""
    from evalcore.scoring import stream_worker

    children = []
    if request.param == "worker":
        monkeypatch.setattr(streaming, "WORKER_MIN_JOBS", 1)
        real = stream_worker.start_child
        monkeypatch.setattr(stream_worker, "start_child", lambda module: children.append(real(module)) or children[-1])
    return request.param, children


def test_scored_while_asking_equals_scoring_afterwards(tmp_path, where):
    server = ScriptedServer(_answer).start()
    try:
        store = RunStore(tmp_path / "runs")
        live = _run(server, store, _questions(tmp_path), trials=2)
    finally:
        server.stop()
    assert live.score_message == "scored while asking" and live.scored
    assert len(where[1]) == (where[0] == "worker")  # one child scored, or none
    ours = _values(store, live.run_id)
    manifest = store.manifest(live.run_id)
    report = score_run(store, live.run_id, progress=False)  # the same answers, scored afterwards
    assert live.score_result.metrics == report.metrics and len(report.metrics) > 10
    assert len(ours) == 2 * N * len(report.metrics)
    pd.testing.assert_frame_equal(ours, _values(store, live.run_id))
    assert manifest.status == "complete" and "scoring_s" in manifest.timings
    assert manifest.config["scoring"][-1]["metrics"] == report.metrics


def test_later_answers_showing_more_are_scored_again_afterwards(tmp_path, where):
    """Citations only from answer 100 on: the first chunk did not select the citation rules, so
    the whole run is scored after the last answer, as before."""
    server = ScriptedServer(lambda r: _answer(r, cite_from=100)).start()
    try:
        store = RunStore(tmp_path / "runs")
        live = _run(server, store, _questions(tmp_path))
    finally:
        server.stop()
    assert live.score_message == "scored", "scored again after the last answer"
    ours = _values(store, live.run_id)
    assert "source_citation_quality" in set(ours.metric)
    score_run(store, live.run_id, progress=False)
    pd.testing.assert_frame_equal(ours, _values(store, live.run_id))


def test_a_run_failing_midway_keeps_its_scored_chunks(tmp_path, monkeypatch, where):
    from evalcore.pipeline import live as pipeline

    root = tmp_path / "runs"
    real = pipeline._recorder

    def failing(writer, n_done, expected):
        on_flush = real(writer, n_done, expected)

        def flush(written: int) -> None:
            on_flush(written)
            if written >= 2 * streaming.MIN_CHUNK:
                deadline = time.monotonic() + 20
                while not _metric_files(root) and time.monotonic() < deadline:
                    time.sleep(0.02)  # a chunk scored and written while asking
                raise OSError(28, "No space left on device")

        return flush

    monkeypatch.setattr(pipeline, "_recorder", failing)
    server = ScriptedServer(_answer).start()
    try:
        store = RunStore(root)
        try:
            _run(server, store, _questions(tmp_path))
        except OSError:
            pass
        else:
            raise AssertionError("the run should have failed")
        monkeypatch.undo()
        (run_id,) = store.run_ids()
        assert store.manifest(run_id).status == "failed"
        kept = query_df(store, "SELECT count(DISTINCT question_id || method) AS n FROM metrics WHERE run_id = ?",
                        [run_id])["n"][0]
        # every answer may be scored by then (a child process scores fast: CI saw all 150),
        # so only "some" is certain; the resume must leave all N scored either way
        assert 0 < kept <= N, "the chunks scored before the failure are published"
        result = resume_run(run_id, store, progress=False)
    finally:
        server.stop()
    assert result.status == "complete" and result.scored
    done = query_df(store, "SELECT count(DISTINCT question_id || method) AS n FROM metrics WHERE run_id = ?",
                    [run_id])["n"][0]
    assert done == N


def _metric_files(root: Path) -> list[Path]:
    return list(root.glob("*/parts/metrics/*.parquet")) + list(root.glob("*/data/metrics*"))


def test_judge_and_embedding_metrics_do_not_stream():
    """A judge or embedding metric does not stream (its calls and model have their own batching):
    a selection holding one is scored after the last answer, as before."""
    assert not streaming.streamable(streaming_spec("faithfulness"))
    assert not streaming.streamable(streaming_spec("semantic_similarity"))
    assert streaming.streamable(streaming_spec("token_f1"))


def streaming_spec(name: str):
    from evalcore.scoring.engine import metric_registry

    return metric_registry()[name]


@pytest.fixture
def publish_clock(monkeypatch):
    """A fake clock for the live run's publish rule (pipeline/live_publish.py), and a writer
    recording when it publishes, each publish taking `takes` seconds of that clock."""
    from evalcore.pipeline import live as pipeline

    clock = [0.0]
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: clock[0])

    class Writer:
        def __init__(self, takes: float = 0.0):
            self.published: list[float] = []
            self.takes = takes

        def publish(self, record=None):
            self.published.append(clock[0])
            clock[0] += self.takes

    return clock, Writer


def test_publishing_while_asking_takes_at_most_a_fifth_of_the_run(publish_clock):
    """The periodic publish (compaction) waits 5 s, and at least four times its last duration:
    a run whose compaction takes 2 s publishes every 8 s, not every 5 s."""
    from evalcore.pipeline import live as pipeline

    clock, Writer = publish_clock
    writer = Writer(takes=2.0)  # a compaction of 2 s
    on_flush = pipeline._recorder(writer, 0, 100)
    for t in (1.0, 4.9, 5.0, 12.9, 15.0, 20.0, 23.0):
        clock[0] = max(clock[0], t)
        on_flush(10)
    assert writer.published == [5.0, 15.0]  # 12.9: 5.9 s after the last ended, under 4 x 2 s


def test_a_scoring_worker_killed_midway_leaves_the_run_scored_afterwards(tmp_path, monkeypatch):
    """The child scoring a large run dies (OOM killer, kill -9) after writing some chunks: the
    run still ends complete and scored, every answer's values equal to scoring afterwards."""
    from evalcore.scoring import stream_worker

    monkeypatch.setattr(streaming, "WORKER_MIN_JOBS", 1)
    children = []
    real = stream_worker.start_child
    monkeypatch.setattr(stream_worker, "start_child", lambda module: children.append(real(module)) or children[-1])
    root = tmp_path / "runs"

    def answer(request):
        if request["body"]["question"] == f"question {N - 20}":
            deadline = time.monotonic() + 20
            while not _metric_files(root) and time.monotonic() < deadline:
                time.sleep(0.02)  # a chunk scored and written by the child
            children[0].kill()
        return _answer(request)

    server = ScriptedServer(answer).start()
    try:
        store = RunStore(root)
        live = _run(server, store, _questions(tmp_path))
    finally:
        server.stop()
    assert children[0].wait(timeout=10) == -9
    assert live.score_message == "scored" and live.scored, "scored again after the last answer"
    assert any("scoring while asking stopped (scoring worker gone" in n for n in store.manifest(live.run_id).notes)
    ours = _values(store, live.run_id)
    assert ours.groupby("metric").size().eq(N).all() and len(set(ours.metric)) > 10
    score_run(store, live.run_id, progress=False)
    pd.testing.assert_frame_equal(ours, _values(store, live.run_id))


def test_a_metric_registered_in_this_process_keeps_the_scoring_here(tmp_path, monkeypatch):
    """A metric added with register_metric (a plugin, an API user's) exists in this process only:
    a large run does not hand its scoring to a child that would not know it, and the metric's
    values are stored as if it were built in."""
    from evalcore.metrics.base import MetricSpec, Score, per_item
    from evalcore.metrics.registry import register_metric, unregister_metric
    from evalcore.scoring import stream_worker

    monkeypatch.setattr(streaming, "WORKER_MIN_JOBS", 1)
    children = []
    monkeypatch.setattr(stream_worker, "start_child", lambda module: children.append(module))
    register_metric(MetricSpec("toy_answer_length", "lexical", per_item(lambda q, r: Score(float(len(r.answer)))),
                               needs=frozenset({"answer"})))
    server = ScriptedServer(_answer).start()
    try:
        store = RunStore(tmp_path / "runs")
        live = _run(server, store, _questions(tmp_path), metrics=["token_f1", "toy_answer_length"])
    finally:
        server.stop()
        unregister_metric("toy_answer_length")
    assert live.score_message == "scored while asking" and children == []  # no child
    ours = _values(store, live.run_id)
    toy = ours[ours.metric == "toy_answer_length"]
    assert len(toy) == N and toy.value.max() > 0


def test_no_interpreter_to_start_keeps_the_scoring_here(tmp_path, monkeypatch):
    """A large run whose worker cannot start (a frozen interpreter, a process limit) scores
    while asking in this process: the run neither crashes nor waits for the end to score."""
    import sys

    monkeypatch.setattr(streaming, "WORKER_MIN_JOBS", 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    server = ScriptedServer(_answer).start()
    try:
        store = RunStore(tmp_path / "runs")
        live = _run(server, store, _questions(tmp_path))
    finally:
        server.stop()
    assert live.status == "complete" and live.score_message == "scored while asking"
    assert len(_values(store, live.run_id)) == N * len(live.score_result.metrics)


def test_the_worker_imports_this_evalcore_not_one_in_the_current_folder(tmp_path, monkeypatch):
    """Run from a folder holding another `evalcore/` (an old checkout): the worker must not
    import it (`python -m` puts the current folder first on the path; -P keeps it off)."""
    from evalcore.common.child_pipe import receive_message, send_message, start_child

    fake = tmp_path / "evalcore"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the wrong evalcore')\n")
    (tmp_path / "probe.py").write_text(
        "import sys\nfrom evalcore.common.child_pipe import receive_message, send_message\n"
        "import evalcore\nsend_message(sys.stdout.buffer, evalcore.__file__)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # `probe` found by this test's child only through PYTHONPATH
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    child = start_child("probe")
    try:
        send_message(child.stdin, None)
        where = receive_message(child.stdout)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
    assert where == str(Path(streaming.__file__).resolve().parents[1] / "__init__.py")


def test_the_registry_is_the_packages_own_only_when_nothing_was_added_replaced_or_removed():
    from evalcore.metrics.registry import METRICS, only_builtin, register_metric, unregister_metric

    saved = dict(METRICS)
    try:
        assert only_builtin()
        unregister_metric("token_f1")
        assert not only_builtin(), "removed here: a child would still compute it"
        register_metric(saved["token_f1"])
        assert only_builtin()
        register_metric(dataclasses.replace(saved["token_f1"]), replace=True)
        assert not only_builtin(), "replaced here"
    finally:
        METRICS.clear()
        METRICS.update(saved)  # the registry's order, as other tests see it


def test_a_run_about_to_end_skips_its_periodic_publish(publish_clock):
    """At its pace so far, a run that ends before the next publish would be due skips the
    periodic one: the final publish shows everything sooner."""
    from evalcore.pipeline import live as pipeline

    clock, Writer = publish_clock
    near, far = Writer(), Writer()
    near_flush, far_flush = pipeline._recorder(near, 0, 100), pipeline._recorder(far, 10, 110)
    clock[0] = 5.0
    near_flush(95)  # 19 answers a second: the last 5 take 0.3 s
    far_flush(30)  # 6 a second: the 70 left take 12 s
    assert near.published == [] and far.published == [5.0]
    clock[0] = 9.0
    near_flush(96)  # a slower pace now (10.7 a second): the last 4 still take 0.4 s
    assert near.published == []


def test_a_run_asks_with_the_heap_frozen_and_hands_it_back(tmp_path, monkeypatch):
    """No full collection walks the libraries' objects while a run asks (common/frozen_heap.py),
    nor while it reads its questions (one an earlier run left due would come there); when the
    run ends, however it ends, they are the collector's again."""
    import gc

    from evalcore.pipeline import live as live_module
    from evalcore.runner import engine

    seen, reading = [], []
    real = engine.ResponseSink.add
    real_collect = live_module.collect_questions

    def add(self, response):
        if len(seen) < 3:  # (get_freeze_count walks every frozen object: a pytest worker holds millions)
            seen.append(gc.get_freeze_count())
        return real(self, response)

    def collect(config):
        reading.append(gc.get_freeze_count())
        return real_collect(config)

    monkeypatch.setattr(engine.ResponseSink, "add", add)
    monkeypatch.setattr(live_module, "collect_questions", collect)
    gc.unfreeze()
    server = ScriptedServer(_answer).start()
    try:
        store = RunStore(tmp_path / "runs")
        _run(server, store, _questions(tmp_path))
        assert seen and min(seen) > 1000 and gc.get_freeze_count() == 0
        assert reading and min(reading) > 1000

        def interrupted(self, response):
            raise KeyboardInterrupt

        monkeypatch.setattr(engine.ResponseSink, "add", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _run(server, store, _questions(tmp_path))
        assert gc.get_freeze_count() == 0
    finally:
        server.stop()
