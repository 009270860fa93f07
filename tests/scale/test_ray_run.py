"""`evalcore run --engine ray`: the asking phase on Ray actors keeps the local guarantees.

Every (question, method) asked exactly once (checked on disk, below the views, and on the
server's own count), the same answers as the local engine, resume after Ctrl-C or a dead
actor asks only what is missing, and --concurrency holds for the whole cluster."""

from __future__ import annotations

import io
import json
import sys
import threading
from collections import Counter

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.runner.config import EvalConfig
from evalcore.demo import questions_path
from evalcore.demo.server import DemoHandler, DemoServer
from evalcore.errors import EvalcoreError
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.pipeline import resume_run, run_evaluation
from evalcore.scale import ray_asking
from evalcore.store import RunStore

METHODS = ["basic_search", "local_search"]
N_QUESTIONS = 40  # the demo set


class CountingHandler(DemoHandler):
    def do_POST(self) -> None:
        server = self.server
        # the body is read here to count by (question, method); the demo handler reads it again
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw)
        with server.lock:
            server.calls[(body["question"], body.get("method"))] += 1
            server.inflight += 1
            server.most_inflight = max(server.most_inflight, server.inflight)
        connection, self.rfile = self.rfile, io.BytesIO(raw)
        try:
            super().do_POST()
        finally:
            self.rfile = connection  # the next request of this keep-alive connection
            with server.lock:
                server.inflight -= 1


class CountingServer(DemoServer):
    """The demo RAG server (deterministic answers) counting calls and requests in flight."""

    def __init__(self, latency_ms: float = 0.0):
        super().__init__(0, latency_ms=latency_ms)
        self.RequestHandlerClass = CountingHandler
        self.lock = threading.Lock()
        self.calls: Counter = Counter()
        self.inflight = 0
        self.most_inflight = 0


@pytest.fixture
def target():
    server = CountingServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _config(url: str, **kw) -> EvalConfig:
    return EvalConfig(target=url, dataset=str(questions_path()), methods=METHODS, top_k=5,
                      score=False, progress=False, **kw)


def _answers(store: RunStore, run_id: str) -> dict:
    """What the target said, per (method, question): everything but timings and latency."""
    return {(r.method, r.question_id): (r.answer, [c.chunk_id for c in r.retrieved], r.citations, r.abstained,
                                        r.token_usage, r.error_kind)
            for r in run_responses(store, run_id)}


def _exactly_once(audit, store: RunStore, run_id: str) -> set:
    rows = audit.rows(store, run_id, "responses")
    keys = list(zip(rows["method"], rows["question_id"]))
    assert len(keys) == len(set(keys)) == N_QUESTIONS * len(METHODS)  # raw rows: no duplicate anywhere
    assert audit.replaced(store, run_id, "responses") == 0           # and none merged away
    return set(keys)


def test_ray_run_asks_each_job_once_with_the_local_answers(ray_local, target, tmp_path, audit):
    root = tmp_path / "runs"
    res = CliRunner().invoke(app, ["--store", str(root), "run", "--target", target.url, "--dataset",
                                   str(questions_path()), "--methods", ",".join(METHODS), "--top-k", "5",
                                   "--concurrency", "4", "--no-score", "--no-progress", "--engine", "ray"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    store = RunStore(root)
    run_id = res.stdout.strip().splitlines()[-1]
    manifest = store.manifest(run_id)
    assert manifest.status == "complete" and manifest.counts["responses"] == N_QUESTIONS * len(METHODS)
    _exactly_once(audit, store, run_id)
    assert sorted(Counter(target.calls.values())) == [1] and len(target.calls) == N_QUESTIONS * len(METHODS)

    local = run_evaluation(_config(target.url, concurrency=4), store)
    assert local.status == "complete"
    assert _answers(store, run_id) == _answers(store, local.run_id)
    # and nothing left to do: resuming on Ray asks nothing
    assert resume_run(run_id, store, engine="ray", progress=False).asked == 0


@pytest.mark.parametrize("how", ["ctrl_c", "actor_dies"])
def test_interrupted_ray_run_resumes_asking_only_the_missing(ray_local, target, tmp_path, audit, monkeypatch, how):
    """Ctrl-C on the driver (status cancelled) or an asking actor killed (the others finish,
    status failed): everything written is kept, and `--resume --engine ray` asks the rest."""
    target.latency_ms = 60  # ~2.4 s of asking, so the interruption lands mid-run
    store = RunStore(tmp_path / "runs")
    real_poll = ray_asking._poll
    fired = []

    def poll(ray, actors):
        counts = real_poll(ray, actors)
        if not fired and sum(c["written"] for c in counts) >= 8:
            fired.append(True)
            if how == "ctrl_c":
                raise KeyboardInterrupt
            ray.kill(actors[0])
        return counts

    monkeypatch.setattr(ray_asking, "_poll", poll)
    config = _config(target.url, concurrency=2, batch_size=4, flush_seconds=0.2)
    with pytest.raises(KeyboardInterrupt if how == "ctrl_c" else EvalcoreError) as caught:
        run_evaluation(config, store, engine="ray")
    if how == "actor_dies":
        assert "1 of 2 asking actors failed" in str(caught.value) and "--resume" in str(caught.value)
    monkeypatch.setattr(ray_asking, "_poll", real_poll)
    (run_id,) = store.run_ids()
    assert store.manifest(run_id).status == ("cancelled" if how == "ctrl_c" else "failed")
    before = audit.rows(store, run_id, "responses")
    done_before = set(zip(before["method"], before["question_id"]))
    assert len(done_before) == len(before)
    assert 8 <= len(done_before) < N_QUESTIONS * len(METHODS), "the interruption should land mid-run"
    assert len(run_responses(store, run_id)) == len(done_before)  # published: readers see all of it
    calls_before = sum(target.calls.values())

    target.latency_ms = 0
    result = resume_run(run_id, store, engine="ray", progress=False)
    assert result.status == "complete" and store.manifest(run_id).status == "complete"
    assert result.asked == N_QUESTIONS * len(METHODS) - len(done_before)
    assert sum(target.calls.values()) - calls_before == result.asked
    _exactly_once(audit, store, run_id)
    texts = {q.id: q.question for q in run_questions(store, run_id)}
    for method, qid in done_before:  # stored before the interruption -> never asked again
        assert target.calls[(texts[qid], method)] == 1


def test_concurrency_is_a_cluster_wide_limit(ray_local, target, tmp_path):
    target.latency_ms = 30
    store = RunStore(tmp_path / "runs")
    result = run_evaluation(_config(target.url, concurrency=3, samples=20), store, engine="ray")
    assert result.status == "complete" and result.asked == 40
    assert 2 <= target.most_inflight <= 3  # in parallel across the actors, never past --concurrency


def test_asker_plan_splits_the_concurrency_exactly():
    for cpus, concurrency, jobs in [(2, 3, 100), (2, 8, 100), (8, 3, 100), (4, 16, 2), (2, 1, 10), (0.5, 5, 10)]:
        lanes, cpu = ray_asking.asker_plan(cpus, concurrency, jobs)
        assert len(lanes) <= min(concurrency, jobs) and all(n >= 1 for n in lanes)
        assert sum(lanes) == concurrency and max(lanes) - min(lanes) <= 1
        assert len(lanes) * cpu <= max(cpus, 1) / 2 + 1e-9
    jobs = list(range(11))
    shards = ray_asking.shard_jobs(jobs, 3)
    assert sorted(j for s in shards for j in s) == jobs  # each job in exactly one shard


def test_engine_ray_without_ray_says_how_to_install_it(monkeypatch, tmp_path, target):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    root = tmp_path / "runs"
    res = CliRunner().invoke(app, ["--store", str(root), "run", "--target", target.url, "--dataset",
                                   str(questions_path()), "--methods", "basic_search", "--no-score",
                                   "--no-progress", "--engine", "ray"])
    assert isinstance(res.exception, EvalcoreError)
    assert "pip install 'evalcore[scale]'" in str(res.exception)
    assert not RunStore(root).run_ids() and not target.calls  # failed before anything was asked or written
    res = CliRunner().invoke(app, ["--store", str(root), "run", "--target", target.url, "--dataset",
                                   str(questions_path()), "--address", "auto"])
    assert isinstance(res.exception, EvalcoreError) and "--engine ray" in str(res.exception)
