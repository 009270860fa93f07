"""Run store: layout, atomic publication, compaction that replaces rather than duplicates, safety."""

import json
import math

import duckdb
import pytest

from evalcore.errors import StoreError
from evalcore.analysis.read.results import wide_results
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.schemas.results import Annotation
from evalcore.store import FORMAT_VERSION, RunStore, check_run_id, new_run_id, open_db, query_df
from evalcore.store.summary import summary_sql


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    """Every test here runs on a local folder and on S3-compatible object storage (moto on
    127.0.0.1): the same guarantees must hold on both."""
    if request.param == "s3":
        return request.getfixturevalue("s3_store")
    return RunStore(tmp_path / "runs")


def _manifest(run_id="r1", name="demo"):
    return RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=name, evalcore_version="test",
                       methods=["a", "b"])


def _fill(writer):
    writer.write_questions([EvalQuestion(id="q1", question="One?", ground_truth="1"),
                            EvalQuestion(id="q2", question="Two?", ground_truth="2")])
    writer.write_responses([EvalResponse(question_id=q, method=m, answer=f"{m}-{q}", latency_ms=10.0)
                            for q in ("q1", "q2") for m in ("a", "b")])
    writer.publish()


def test_layout_and_roundtrip(store):
    writer = store.create_run(_manifest())
    writer.write_questions([EvalQuestion(id="q1", question="One?")])
    assert query_df(store, "SELECT count(*) AS n FROM questions")["n"][0] == 0  # unpublished: unseen
    _fill(writer)
    run_dir = store.root / "r1"
    assert (run_dir / "run.json").is_file()
    pointer = json.loads((run_dir / "tables.json").read_text())
    assert pointer["generation"] == 1 and pointer["rows"] == {"questions": 2, "responses": 4}
    data = sorted(p.name for p in (run_dir / "data").iterdir())
    assert {f.split("-g")[0] for f in data} >= {"questions", "responses", "summary_metrics", "summary_responses"}
    # every part was absorbed; no temp file left anywhere
    assert not list((run_dir / "parts").rglob("*.parquet")) and not list(run_dir.rglob(".*.tmp"))
    assert [q.id for q in run_questions(store, "r1")] == ["q1", "q2"]
    responses = run_responses(store, "r1", method="b")
    assert [(r.method, r.question_id, r.answer) for r in responses] == [("b", "q1", "b-q1"), ("b", "q2", "b-q2")]


def test_rewrites_replace_not_duplicate(store):
    writer = store.create_run(_manifest())
    _fill(writer)
    mv = dict(run_id="r1", method="a", question_id="q1", metric="token_f1", group="lexical")
    writer.write_metrics([MetricValue(value=0.2, **mv)])
    writer.publish()
    writer.write_metrics([MetricValue(value=0.7, **mv)])
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="second try")])
    writer.publish()
    df = query_df(store, "SELECT value FROM metrics WHERE run_id = ?", ["r1"])
    assert df["value"].tolist() == [0.7]
    # one row per key on disk: the canonical file itself holds no history
    pointer = json.loads((store.root / "r1" / "tables.json").read_text())
    assert pointer["rows"]["metrics"] == 1 and pointer["rows"]["responses"] == 4
    answers = query_df(store, "SELECT answer FROM responses WHERE method='a' AND question_id='q1'")
    assert answers["answer"].tolist() == ["second try"]


def test_nan_metric_keeps_reason_and_wide_export(store):
    writer = store.create_run(_manifest())
    _fill(writer)
    writer.write_metrics([MetricValue(run_id="r1", method="a", question_id="q1", metric="context_recall",
                                      value=float("nan"), reason="no contexts", group="judged")])
    writer.publish()
    df = query_df(store, "SELECT value, reason FROM metrics")
    assert math.isnan(df["value"][0]) and df["reason"][0] == "no contexts"
    wide = wide_results(store, "r1")
    assert set(wide.columns) >= {"question_id", "method", "question", "ground_truth", "answer", "context_recall"}
    assert len(wide) == 4


def test_staged_run_is_all_or_nothing(store):
    store.create_run(_manifest("keep"))
    with pytest.raises(RuntimeError):
        with store.staged_run(_manifest("half")) as writer:
            _fill(writer)
            raise RuntimeError("crash mid-import")
    assert store.run_ids() == ["keep"]
    assert not list((store.root / ".staging").iterdir())
    with store.staged_run(_manifest("whole")) as writer:
        _fill(writer)
    assert store.run_ids() == ["keep", "whole"]
    assert len(run_questions(store, "whole")) == 2


def test_views_span_runs_and_empty_store(store):
    with open_db(store) as con:  # nothing written yet: empty, typed views
        assert con.execute("SELECT count(*) FROM metrics").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    for rid in ("r1", "r2"):
        _fill(store.create_run(_manifest(rid)))
    df = query_df(store, "SELECT run_id, count(*) AS n FROM responses GROUP BY run_id ORDER BY run_id")
    assert df.to_dict("records") == [{"run_id": "r1", "n": 4}, {"run_id": "r2", "n": 4}]


@pytest.mark.parametrize("bad", ["../etc", "a/b", ".hidden", "_shared", "", "x" * 200, "a..b"])
def test_run_ids_cannot_escape(store, bad):
    with pytest.raises(StoreError):
        check_run_id(bad)
    with pytest.raises(StoreError):
        store.run_dir(bad)


def test_resolve_latest_prefix_name(store):
    store.create_run(_manifest("alpha-1", name="first"))
    store.create_run(_manifest("beta-1", name="second"))
    assert store.resolve("latest") == "beta-1"
    assert store.resolve("alp") == "alpha-1"
    assert store.resolve("second") == "beta-1"
    with pytest.raises(StoreError, match="no run"):
        store.resolve("gamma")


def test_newer_format_is_refused(store):
    store.create_run(_manifest())
    path = store.root / "r1" / "run.json"
    data = json.loads(path.read_text())
    data["format_version"] = FORMAT_VERSION + 1
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match="newer"):
        store.manifest("r1")


def test_delete_and_annotations_append_only(store):
    store.create_run(_manifest())
    ann = dict(who="ann", run_id="r1", target_kind="claim", target_ref="a/q1/0", label="agree")
    store.append_annotations([Annotation(annotation_id="1", **ann)])
    store.append_annotations([Annotation(annotation_id="2", **{**ann, "label": "disagree"})])
    df = query_df(store, "SELECT label FROM annotations ORDER BY annotation_id")
    assert df["label"].tolist() == ["agree", "disagree"]
    store.delete_run("r1")
    assert store.run_ids() == []
    assert query_df(store, "SELECT count(*) AS n FROM annotations")["n"][0] == 2


def test_new_run_id_is_safe():
    rid = new_run_id("My run: ../../etc")
    assert check_run_id(rid) == rid and "/" not in rid


def test_update_manifest(store):
    writer = store.create_run(_manifest())
    writer.update_manifest(status="complete", counts={"questions": 2})
    m = RunStore(store.root).manifest("r1")
    assert m.status == "complete" and m.counts == {"questions": 2}


def test_nan_filters_hold_in_aggregates(store):
    """Parquet statistics ignore NaN; DuckDB must still see the NaNs (a real bug we hit)."""
    writer = store.create_run(_manifest())
    _fill(writer)
    values = []
    for i in range(300):
        for metric in ("keyword_coverage", "latency_ms"):
            nan = metric == "keyword_coverage" and i % 3 == 0
            values.append(MetricValue(run_id="r1", method="a", question_id=f"q{i}", metric=metric, group="g",
                                      value=float("nan") if nan else float(i % 2 if metric != "latency_ms" else i),
                                      reason="no keywords" if nan else None))
    writer.write_metrics(values)
    writer.publish()
    from evalcore.analysis.runs.means import metric_table

    row = metric_table(store, "r1").set_index("metric").loc["keyword_coverage"]
    expected = [float(i % 2) for i in range(300) if i % 3]
    assert row["n_scored"] == len(expected) == 200
    assert row["mean"] == pytest.approx(sum(expected) / len(expected))
    assert row["not_scored_reasons"] == "no keywords (100)"


def test_claim_sets_replace_whole_sets(store):
    from evalcore.schemas import Claim

    writer = store.create_run(_manifest())

    def claims(texts):
        return [Claim(run_id="r1", method="a", question_id="q1", source="answer", idx=i, text=t,
                      verdict="supported", metric="faithfulness") for i, t in enumerate(texts)]

    writer.write_claims(claims(["c0", "c1", "c2"]))  # each Claim has its own default timestamp
    writer.publish()
    assert query_df(store, "SELECT count(*) AS n FROM claims")["n"][0] == 3
    writer.write_claims(claims(["new0", "new1"]))
    writer.publish()
    assert query_df(store, "SELECT text FROM claims ORDER BY idx")["text"].tolist() == ["new0", "new1"]


def test_a_query_in_flight_survives_its_database_being_evicted(tmp_path):
    """The reader keeps a few databases; evicting one while another thread still queries it must
    not close that thread's cursor (closing a DuckDB connection closes its cursors). The cache of
    databases is the same whatever the storage, so this runs on a local store only."""
    from evalcore.store import views

    store = RunStore(tmp_path / "runs")

    _fill(store.create_run(_manifest()))
    with open_db(store, runs=["r1"]) as cur:
        for i in range(views._KEPT_MAX + 2):  # other keys push this database out of the cache
            store.create_run(_manifest(f"x{i}"))
            with open_db(store):
                pass
        assert cur.execute("SELECT count(*) FROM responses").fetchone()[0] == 4


def test_parts_left_by_a_killed_sweep_are_not_absorbed_twice(store, monkeypatch):
    """Killed after publishing its pointer but before removing the parts it absorbed, a compaction
    leaves them behind; the next one removes them instead of counting their rows as replaced."""
    from evalcore.store import compaction

    writer = store.create_run(_manifest())
    writer.write_questions([EvalQuestion(id="q1", question="One?")])
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="x")])

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed between pointer and sweep")

    with monkeypatch.context() as patch:  # (undo only this: the S3 store's environment stays)
        patch.setattr(compaction, "_sweep", killed)
        with pytest.raises(KeyboardInterrupt):
            writer.publish()
    assert list((store.root / "r1" / "parts").rglob("part-*.parquet"))  # left behind
    writer.publish()
    pointer = json.loads((store.root / "r1" / "tables.json").read_text())
    assert pointer["replaced"].get("responses", 0) == 0 and pointer["rows"]["responses"] == 1
    assert not list((store.root / "r1" / "parts").rglob("part-*.parquet"))


def test_blank_answers_count_as_empty_in_the_summary(store):
    writer = store.create_run(_manifest())
    writer.write_questions([EvalQuestion(id=f"q{i}", question="Q?") for i in range(3)])
    writer.write_responses([EvalResponse(question_id="q0", method="a", answer="\n \t"),
                            EvalResponse(question_id="q1", method="a", answer=""),
                            EvalResponse(question_id="q2", method="a", answer="an answer")])
    writer.publish()
    assert query_df(store, "SELECT n_empty FROM summary_responses")["n_empty"].tolist() == [2]


def test_delete_waits_for_a_compaction_and_nothing_comes_back(store):
    """delete_run takes the run's compaction lock; a compaction that then wakes up finds the run
    gone and recreates nothing (no ghost folder blocking the id)."""
    import threading

    from evalcore.store.compaction import compaction_lock

    writer = store.create_run(_manifest())
    writer.write_questions([EvalQuestion(id="q1", question="One?")])
    run_dir = store.root / "r1"
    with compaction_lock(run_dir):
        deleter = threading.Thread(target=store.delete_run, args=("r1",))
        deleter.start()
        deleter.join(0.3)
        assert deleter.is_alive() and run_dir.exists()  # waits for the compaction to end
    deleter.join(10)
    assert not run_dir.exists()
    writer.publish()  # a writer that still holds the run: nothing to publish, nothing recreated
    assert not run_dir.exists() and store.run_ids() == []


def test_a_damaged_pointer_hides_only_its_own_run(store):
    for rid in ("good", "bad"):
        _fill(store.create_run(_manifest(rid)))
    (store.root / "bad" / "tables.json").write_text("{not json")
    df = query_df(store, "SELECT run_id, count(*) AS n FROM responses GROUP BY run_id")
    assert df.to_dict("records") == [{"run_id": "good", "n": 4}]
    damaged = query_df(store, "SELECT run_id, reason FROM damaged_runs")  # said, not hidden silently
    assert damaged.run_id.tolist() == ["bad"] and "unreadable table pointer" in damaged.reason[0]


def test_a_cache_hit_never_replaces_the_paid_call(store):
    """The same judge request answered again from the cache (cost 0) keeps the row of the call
    that was paid for, so the run's judge cost is not lost by scoring a second metric."""
    from evalcore.schemas import JudgeCall, JudgeId

    judge = JudgeId(provider="anthropic", model="m", prompt_id="p", prompt_version="1")
    writer = store.create_run(_manifest())
    _fill(writer)
    paid = dict(run_id="r1", call_key="k1", judge_id=judge, method="a", question_id="q1", purpose="support",
                request={"x": 1})
    writer.write_judge_calls([JudgeCall(**paid, cost_usd=0.01, input_tokens=100)])
    writer.publish()
    writer.write_judge_calls([JudgeCall(**paid, cost_usd=0.0, cache_hit=True)])
    writer.publish()
    row = query_df(store, "SELECT cost_usd, cache_hit FROM judge_calls").iloc[0]
    assert row.cost_usd == 0.01 and not row.cache_hit
    assert query_df(store, "SELECT judge_cost_usd FROM summary_judges")["judge_cost_usd"].tolist() == [0.01]
    writer.write_judge_calls([JudgeCall(**paid, cost_usd=0.02)])  # a new paid call does replace it
    writer.publish()
    assert query_df(store, "SELECT cost_usd FROM judge_calls")["cost_usd"].tolist() == [0.02]


def test_a_published_table_is_read_in_blocks_through_the_store(store):
    """store/blocks.py: the one way code outside the store (the Ray engine) reads a run's
    published answers in blocks; it knows the pointer and the format, the caller neither."""
    from evalcore.store.blocks import published_table

    writer = store.create_run(_manifest())
    writer.write_questions([EvalQuestion(id="q1", question="One?")])
    assert published_table(store, "r1", "responses") is None  # nothing of it published yet
    _fill(writer)
    answers = published_table(store, "r1", "responses")
    assert answers.rows == 4
    blocks = list(answers.records(3))
    assert [len(b) for b in blocks] == [3, 1]
    got = sorted((r.method, r.question_id, r.answer) for b in blocks for r in map(EvalResponse.model_validate_json, b))
    assert got == sorted((m, q, f"{m}-{q}") for q in ("q1", "q2") for m in ("a", "b"))

    class Reader:  # stands in for ray.data: the store hands it the file and the column
        def read_parquet(self, where, filesystem=None, **options):
            self.seen = (where, filesystem is not None, options)
            return self

        def select_columns(self, columns):
            self.columns = columns
            return self

    reader = answers.ray_dataset(Reader(), num_cpus=0.25)
    assert reader.columns == ["record"] and reader.seen[2] == {"num_cpus": 0.25}
    assert reader.seen[1] == store.remote  # an s3:// store's file comes with its filesystem


def test_a_run_without_judge_calls_has_the_judges_summary_duckdb_gives(store, monkeypatch):
    """Its (empty) judges' summary is not computed at every publish (compaction_derived._no_judge_calls):
    the file holds no row, in the very columns and types DuckDB's own query gives, trials or not;
    the first judge call fills it."""
    import pyarrow.parquet as pq

    from evalcore.schemas import JudgeCall, JudgeId
    from evalcore.store import compaction_derived as compaction
    from evalcore.store.layout import read_pointer_versioned

    monkeypatch.setattr(compaction, "_NO_JUDGE_CALLS", {})
    writer = store.create_run(_manifest())
    _fill(writer)
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="again", trial=1)])
    writer.publish()  # a run with trials: the other SQL
    for trials in (False, True):
        sql = summary_sql("summary_judges", trials=trials)
        con = duckdb.connect()
        for table in ("responses", "metrics", "judge_calls"):
            compaction._define(con, table, None)
        assert compaction._no_judge_calls(con, sql).schema.equals(con.sql(sql).to_arrow_table().schema)
    pointer, _ = read_pointer_versioned(store.run_dir("r1"))
    if not store.remote:
        written = pq.read_table(store.run_dir("r1") / pointer["files"]["summary_judges"])
        assert written.num_rows == 0 and written.schema.equals(compaction._NO_JUDGE_CALLS[
            summary_sql("summary_judges", trials=True)])
    judge = JudgeId(provider="anthropic", model="m", prompt_id="p", prompt_version="1")
    writer.write_judge_calls([JudgeCall(run_id="r1", call_key="k1", judge_id=judge, method="a", question_id="q1",
                                        purpose="support", request={"x": 1}, cost_usd=0.01)])
    writer.publish()
    assert query_df(store, "SELECT n_calls FROM summary_judges WHERE method = 'a'")["n_calls"].tolist() == [1.0]
