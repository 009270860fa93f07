"""`evalcore score --engine ray`: the same values as the local engine, written into the same
store, with the judge behind one cluster-wide gate."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import threading
import time

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.store import RunStore, query_df

from tests.judges.conftest import anthropic_env, llm_server  # noqa: F401,E402  (fixtures)

runner = CliRunner()
EMBEDDING_METRICS = {"semantic_similarity", "bert_score_p", "bert_score_r", "bert_score_f1", "answer_relevance"}


def _tolerance(metric: str) -> float:
    """1e-9, or 1e-6 for embedding metrics and the composites built from them: a model run with
    another thread count (one per Ray actor) rounds float32 sums differently."""
    from evalcore.metrics.composites import INPUTS

    inputs = set(INPUTS.get(metric, [])) | {metric}
    return 1e-6 if inputs & EMBEDDING_METRICS else 1e-9
ALL_GROUPS = ["retrieval", "lexical", "abstention", "citation", "performance", "semantic", "judged", "composite"]


def _import(root, *args):
    res = runner.invoke(app, ["--store", str(root), "import", *args])
    assert res.exit_code == 0, res.output
    return res.stdout.strip().splitlines()[-1]


def _twin_stores(tmp_path, *import_args):
    """One imported run in two stores: one scored locally, one on Ray."""
    run_id = _import(tmp_path / "local", *import_args)
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    return RunStore(tmp_path / "local"), RunStore(tmp_path / "ray"), run_id


def _table(store, run_id, sql):
    return query_df(store, sql, [run_id], runs=[run_id])


def _assert_same_values(local, ray_store, run_id):
    sql = ("SELECT method, question_id, metric, value, reason, label, judge_id, version FROM metrics "
           "WHERE run_id = ? ORDER BY method, question_id, metric")
    a, b = _table(local, run_id, sql), _table(ray_store, run_id, sql)
    assert len(a) == len(b) and len(a) > 0
    merged = a.merge(b, on=["method", "question_id", "metric"], suffixes=("_l", "_r"), how="outer",
                     validate="one_to_one")
    assert len(merged) == len(a), "the engines scored different (method, question, metric) keys"
    for row in merged.itertuples():
        tol = _tolerance(row.metric)
        if row.value_l != row.value_l:  # NaN: the same reason
            assert row.value_r != row.value_r and row.reason_r == row.reason_l, row
        else:
            assert abs(row.value_l - row.value_r) <= tol, row
        assert (row.label_l, row.judge_id_l, row.version_l) == (row.label_r, row.judge_id_r, row.version_r), row
    return a


def test_ray_scores_equal_local_on_every_group(tmp_path, ray_local):
    from evalcore.scale.ray_scoring import score_run_ray
    from evalcore.scoring.engine import score_run

    local, ray_store, run_id = _twin_stores(tmp_path, "--example")
    options = {"judge": "heuristic", "bertscore_idf": True}
    a = score_run(local, run_id, groups=ALL_GROUPS, options=dict(options), progress=False)
    b = score_run_ray(ray_store, run_id, groups=ALL_GROUPS, options=dict(options))
    assert b.metrics == a.metrics and b.n_values == a.n_values and not b.errors
    for name, m in a.by_metric.items():
        assert (b.by_metric[name].n, b.by_metric[name].n_nan) == (m.n, m.n_nan), name
    values = _assert_same_values(local, ray_store, run_id)
    assert {"semantic_similarity", "bert_score_f1", "faithfulness", "context_recall"} <= set(values.metric)
    # claims and per-context verdicts are stored by the Ray workers exactly as locally
    for sql in ("SELECT method, question_id, metric, source, idx, text, verdict FROM claims WHERE run_id = ? "
                "ORDER BY 1, 2, 3, 4, 5",
                "SELECT method, question_id, metric, rank, verdict, score FROM context_verdicts WHERE run_id = ? "
                "ORDER BY 1, 2, 3, 4"):
        left, right = _table(local, run_id, sql), _table(ray_store, run_id, sql)
        assert len(left) > 0
        assert left.equals(right), sql
    manifest = ray_store.manifest(run_id)
    assert manifest.config["scoring"][-1]["options"]["engine"] == "ray"
    assert manifest.counts.get("judge_calls", 0) > 0 and manifest.judges


def test_ray_blocks_do_not_change_values_on_real_data(tmp_path, ray_local, shared_data, monkeypatch):
    """Many small blocks (one part file each) on real data give the local values: nothing
    depends on where blocks are cut, BERTScore's idf included (run-wide, not per block).
    HaluEval QA, first 120 rows: the right and the hallucinated answer as two methods."""
    from evalcore.scale import ray_scoring
    from evalcore.scoring.engine import score_run

    lines = (shared_data / "halueval" / "qa_one-turn_data.jsonl").read_text(encoding="utf-8").splitlines()[:120]
    records = tmp_path / "halueval.jsonl"
    with records.open("w", encoding="utf-8") as out:
        for i, line in enumerate(lines):
            row = json.loads(line)
            for method, answer in (("right", row["right_answer"]), ("hallucinated", row["hallucinated_answer"])):
                out.write(json.dumps({"question_id": f"h{i}", "question": row["question"], "method": method,
                                      "answer": answer, "ground_truth": row["right_answer"],
                                      "contexts": [row["knowledge"]]}) + "\n")
    local, ray_store, run_id = _twin_stores(tmp_path, str(records))
    monkeypatch.setattr(ray_scoring, "EMBEDDING_BATCH", 37)  # blocks cut across questions and methods
    options = {"bertscore_idf": True}
    groups = ["lexical", "semantic"]
    score_run(local, run_id, groups=groups, options=dict(options), progress=False)
    report = ray_scoring.score_run_ray(ray_store, run_id, groups=groups, options=dict(options))
    assert report.n_items == 240 and report.parts_written >= 6
    values = _assert_same_values(local, ray_store, run_id)
    assert values.value.notna().sum() > 1000


def test_score_cli_engine_ray(tmp_path, ray_local):
    root = tmp_path / "runs"
    run_id = _import(root, "--example")
    res = runner.invoke(app, ["--store", str(root), "score", run_id, "--engine", "ray", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "recall@5" in res.stdout and "values in" in res.stdout
    res = runner.invoke(app, ["--store", str(root), "score", run_id, "--address", "auto"])
    assert isinstance(res.exception, EvalcoreError) and "need --engine ray" in str(res.exception)
    res = runner.invoke(app, ["--store", str(root), "score", run_id, "--engine", "spark"])
    # --engine is one choice in `run` and `score` (issue 26): a usage error naming the choices
    assert res.exit_code == 2 and "spark" in res.output and "local" in res.output and "ray" in res.output


def test_rescoring_on_ray_replaces_values(tmp_path, ray_local):
    from evalcore.scale.ray_scoring import score_run_ray

    root = tmp_path / "runs"
    run_id = _import(root, "--example")
    store = RunStore(root)
    score_run_ray(store, run_id, metrics=["token_f1"])
    first = _table(store, run_id, "SELECT count(*) AS n FROM metrics WHERE run_id = ?").n[0]
    score_run_ray(store, run_id, metrics=["token_f1"])
    assert _table(store, run_id, "SELECT count(*) AS n FROM metrics WHERE run_id = ?").n[0] == first
    assert store.pending_rows(run_id, "metrics") == 0  # the driver published the workers' parts


def test_missing_ray_is_one_clear_sentence(monkeypatch):
    from evalcore.scale import ray_session

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(EvalcoreError, match=r"pip install 'evalcore\[scale\]'"):
        ray_session.require_ray()


def test_a_built_judge_client_is_refused(tmp_path):
    from evalcore.judges import make_judge
    from evalcore.scale.ray_scoring import score_run_ray

    root = tmp_path / "runs"
    run_id = _import(root, "--example")
    with pytest.raises(EvalcoreError, match="judge as a spec"):
        score_run_ray(RunStore(root), run_id, metrics=["faithfulness"], options={"judge": make_judge("heuristic")})


def test_the_answers_file_is_read_with_one_footer_reader(monkeypatch):
    """Ray Data reads Parquet footers on 32 actors unless told otherwise when the read is built; a
    pass reads one file, so it asks for one (and keeps a number the user set), and leaves the
    environment as it found it."""
    from types import SimpleNamespace

    from evalcore.scale import ray_scoring

    seen = []

    class Answers:
        def ray_dataset(self, data, **options):
            seen.append(os.environ.get(ray_scoring.FOOTER_READERS_ENV))
            return SimpleNamespace(repartition=lambda n: n)

    monkeypatch.delenv(ray_scoring.FOOTER_READERS_ENV, raising=False)
    assert ray_scoring._read_blocks(SimpleNamespace(data=None), Answers(), rows=10, batch=5, actors=2) == 2
    assert seen == ["1"] and ray_scoring.FOOTER_READERS_ENV not in os.environ
    monkeypatch.setenv(ray_scoring.FOOTER_READERS_ENV, "4")
    ray_scoring._read_blocks(SimpleNamespace(data=None), Answers(), rows=10, batch=5, actors=2)
    assert seen == ["1", "4"] and os.environ[ray_scoring.FOOTER_READERS_ENV] == "4"


# ---- the cluster-wide judge gate -----------------------------------------------------------------
def test_gate_holds_slots_and_spaces_starts():
    from evalcore.scale.judge_gate import _GateState

    async def scenario():
        gate = _GateState(slots=2, per_minute=600)  # one start per 0.1 s
        inside, most, starts = 0, 0, []

        async def request():
            nonlocal inside, most
            lease = await gate.acquire()
            starts.append(time.monotonic())
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.35)  # long enough for 4 spaced starts: the slots cap it at 2
            inside -= 1
            await gate.release(lease)

        await asyncio.gather(*(request() for _ in range(6)))
        return most, starts, gate

    most, starts, gate = asyncio.run(scenario())
    assert most == 2 and gate.granted == 6 and not gate.held
    # no start comes before its turn: the i-th at least i intervals after the first. (Measured
    # from the first, not between neighbours: a start can only come late, and under load a late
    # one and the next on time once landed 0.4 ms apart though neither came early.)
    first = min(starts)
    assert all(at - first >= i * 0.1 - 0.01 for i, at in enumerate(sorted(starts)))


def test_gate_lease_expires_when_its_holder_dies():
    from evalcore.scale.judge_gate import _GateState

    async def scenario():
        gate = _GateState(slots=1, lease_seconds=0.2)
        await gate.acquire()  # never released: its worker died
        t0 = time.monotonic()
        lease = await asyncio.wait_for(gate.acquire(), timeout=5)
        return time.monotonic() - t0, lease

    waited, lease = asyncio.run(scenario())
    assert 0.1 <= waited < 5 and lease


def test_judge_requests_across_actors_respect_one_cluster_limit(tmp_path, ray_fresh, anthropic_env):
    """Two scoring actors, each allowed judge_concurrency=2 requests of its own, behind the
    cluster-wide gate of 2 slots: the judge server never sees more than 2 requests at once
    (without the gate it saw 4: each actor's own limit, twice)."""
    from evalcore.scale.ray_scoring import score_run_ray
    from tests.judges.conftest import good_judge

    in_flight, most, lock = 0, 0, threading.Lock()

    def slow_judge(body, api):
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.4)
        with lock:
            in_flight -= 1
        return good_judge(body, api)

    anthropic_env.responder = slow_judge
    root = tmp_path / "runs"
    run_id = _import(root, "--example")
    report = score_run_ray(RunStore(root), run_id, metrics=["faithfulness", "context_precision"],
                           options={"judge": "anthropic:claude-test", "judge_concurrency": 2}, workers=2)
    assert not report.errors and report.by_metric["faithfulness"].n_nan < report.by_metric["faithfulness"].n
    assert anthropic_env.count() >= 4
    assert most <= 2
    manifest = RunStore(root).manifest(run_id)
    assert any("claude-test" in j for j in manifest.judges)


def test_ray_scoring_on_an_s3_store(tmp_path, ray_fresh, s3_store):
    """Workers read the answers from the bucket and write their part files there; the engine
    starts (and stops) its own Ray instance, whose workers inherit the S3 settings."""
    from evalcore.scale.ray_scoring import score_run_ray
    from evalcore.scoring.engine import score_run

    run_id = _import(s3_store.root, "--example")
    local_root = tmp_path / "local"
    local_id = _import(local_root, "--example", "--name", "twin")
    report = score_run_ray(s3_store, run_id, groups=["retrieval", "lexical"])
    score_run(RunStore(local_root), local_id, groups=["retrieval", "lexical"], progress=False)
    assert report.n_values > 0 and not report.errors
    assert s3_store.pending_rows(run_id, "metrics") == 0
    sql = "SELECT method, question_id, metric, value FROM metrics WHERE run_id = ? ORDER BY 1, 2, 3"
    remote = _table(s3_store, run_id, sql)
    local = _table(RunStore(local_root), local_id, sql)
    assert len(remote) == len(local) == report.n_values
    assert (remote.value.fillna(-1) - local.value.fillna(-1)).abs().max() <= 1e-9


def test_the_default_path_never_imports_ray():
    """Ray is an optional extra: the CLI, the local scoring and live-run code load without it."""
    import subprocess

    code = ("import sys, evalcore.cli.main, evalcore.scoring.engine, evalcore.pipeline.live, evalcore.cli.score_commands;"
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith(('ray.', 'evalcore.scale'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
