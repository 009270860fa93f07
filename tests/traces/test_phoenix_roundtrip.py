"""Against a real Phoenix server: a traced pipeline sends spans over OTLP, `evalcore import
phoenix://...` reads them through arize-phoenix-client, scores go back with `evalcore export --to
phoenix://...`, and Phoenix's own client reads the span annotations: values, reasons, judge,
and no copies after a second export.

One test function runs every check in turn: under `pytest -n 2` a session fixture starts once
per worker that uses it, and the server costs ~10 s of CPU to start, so all of it stays on one
worker."""

from __future__ import annotations

import json
import math
import time

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.store import RunStore
from tests.optional import requires
from tests.traces.phoenix_server import phoenix_url  # noqa: F401  (session fixture)
from tests.traces.pipeline import QUESTIONS, trace_pipeline

pytestmark = pytest.mark.slow
runner = CliRunner()
PROJECT = "rag-demo"
METRICS = "faithfulness,token_f1,latency_ms"


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _wait_for_spans(client, project, n, timeout=30.0):
    """Phoenix ingests OTLP spans in the background: wait until all `n` are queryable."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=1000)
        except Exception:  # noqa: BLE001 - the project appears with its first span
            spans = []
        if len(spans) >= n or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


def test_phoenix_round_trip(phoenix_url, tmp_path):  # noqa: F811
    traced = _traced(phoenix_url)
    check_import_score_export_and_read_back(traced, tmp_path / "a")
    check_span_dataframe_export_reads_like_the_server(traced, tmp_path / "b")
    check_unknown_project_and_foreign_project_export(traced, tmp_path / "c")
    check_export_of_spans_the_server_does_not_have(traced, tmp_path / "d")


def _traced(phoenix_url):
    """Two methods' traces (bm25 and dense, three questions each) sent to the server's OTLP endpoint."""
    requires("phoenix.client", "evalcore[phoenix]")
    requires("opentelemetry.exporter.otlp.proto.http", "the traced pipeline exports over OTLP/HTTP")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from phoenix.client import Client

    for method in ("bm25", "dense"):
        trace_pipeline(OTLPSpanExporter(endpoint=f"{phoenix_url}/v1/traces"), PROJECT, method=method)
    client = Client(base_url=phoenix_url)
    spans = _wait_for_spans(client, PROJECT, 18)
    assert len(spans) == 18, f"Phoenix holds {len(spans)} of the 18 spans sent"
    return phoenix_url, client, spans


def check_import_score_export_and_read_back(traced, tmp_path):
    url, client, spans = traced
    root = tmp_path / "runs"
    tmp_path.mkdir()
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("\n".join(json.dumps({"id": q["id"], "question": q["question"],
                                             "ground_truth": q["answer"]}) for q in QUESTIONS) + "\n")
    phoenix = url.replace("http://", "phoenix://") + "/" + PROJECT
    res = _cli(root, "import", phoenix, "--method-from", "metadata.method", "--dataset", str(dataset))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    store = RunStore(root)
    manifest = store.manifest(run_id)
    assert manifest.methods == ["bm25", "dense"] and manifest.counts["responses"] == 6
    assert manifest.source["project"] == PROJECT

    res = _cli(root, "score", run_id, "--judge", "heuristic", "-m", METRICS, "--no-progress")
    assert res.exit_code == 0, res.output
    from evalcore.analysis.read.trace_scores import trace_metric_values

    stored = trace_metric_values(store, run_id)
    assert set(stored["metric"]) == set(METRICS.split(",")) and len(stored) == 18
    roots = {s["context"]["span_id"] for s in spans if not s.get("parent_id")}
    assert set(stored["span_id"]) == roots

    for _ in range(2):  # the second export must update, not add
        res = _cli(root, "export", run_id, "--to", phoenix)
        assert res.exit_code == 0, res.output
        got = client.spans.get_span_annotations(span_ids=sorted(roots), project_identifier=PROJECT)
        ours = [a for a in got if a["name"].startswith("evalcore.")]
        assert len(ours) == 18, [(a["span_id"], a["name"]) for a in ours]
        assert len({(a["span_id"], a["name"]) for a in ours}) == 18
    by_key = {(a["span_id"], a["name"]): a for a in ours}
    for row in stored.itertuples():
        note = by_key[(row.span_id, f"evalcore.{row.metric}")]
        score = note["result"]["score"]
        assert (score is None) if math.isnan(row.value) else score == pytest.approx(row.value)
        assert note["result"]["explanation"] == (row.reason or None)
        assert note["identifier"] == f"evalcore:{run_id}"
        assert note["metadata"]["evalcore_run"] == run_id and note["metadata"]["question_id"] == row.question_id
        if row.metric == "faithfulness":
            assert note["annotator_kind"] == "LLM" and note["metadata"]["judge"] == row.judge_id
            assert row.judge_id.startswith("heuristic")
        else:
            assert note["annotator_kind"] == "CODE" and "judge" not in note["metadata"]


def check_span_dataframe_export_reads_like_the_server(traced, tmp_path):
    """The file a Phoenix user writes from get_spans_dataframe imports to the same answers."""
    url, client, _ = traced
    root = tmp_path / "runs"
    tmp_path.mkdir()
    frame = client.spans.get_spans_dataframe(project_identifier=PROJECT)
    frame.to_parquet(tmp_path / "spans.parquet")
    from_file = _cli(root, "import", str(tmp_path / "spans.parquet"), "--method-from", "metadata.method")
    from_server = _cli(root, "import", url.replace("http://", "phoenix://") + "/" + PROJECT,
                       "--method-from", "metadata.method")
    assert from_file.exit_code == 0 and from_server.exit_code == 0, from_file.output + from_server.output
    from evalcore.store import query_df as df

    def rounded(value):  # pandas' JSON parsing in the client leaves 0.41000000000000003 for 0.41
        if isinstance(value, float):
            return round(value, 9)
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rounded(v) for v in value]
        return value

    def answers(output):
        run_id = output.stdout.strip().splitlines()[-1]
        rows = df(RunStore(root), "SELECT method, question_id, answer, record FROM responses WHERE run_id = ? "
                  "ORDER BY method, question_id", [run_id], runs=[run_id])
        out = []
        for r in rows.itertuples():
            rec = json.loads(r.record)
            out.append(rounded([r.method, r.question_id, r.answer, rec["retrieved"], rec["token_usage"],
                                rec["raw"]["openinference"]["span_id"], rec["latency_ms"]]))
        return out

    assert answers(from_file) == answers(from_server) and len(answers(from_file)) == 6


def check_unknown_project_and_foreign_project_export(traced, tmp_path):
    url, _, _ = traced
    root = tmp_path / "runs"
    base = url.replace("http://", "phoenix://")
    res = _cli(root, "import", base + "/no-such-project")
    assert isinstance(res.exception, EvalcoreError) and "no-such-project" in str(res.exception)
    run_id = _cli(root, "import", base + "/" + PROJECT, "--method-from", "metadata.method").stdout.split()[-1]
    assert _cli(root, "score", run_id, "-m", "latency_ms", "--no-progress").exit_code == 0
    res = _cli(root, "export", run_id, "--to", base + "/other-project")
    assert isinstance(res.exception, EvalcoreError) and "imported from Phoenix project 'rag-demo'" in str(res.exception)


def check_export_of_spans_the_server_does_not_have(traced, tmp_path):
    """A run from a span file whose traces never reached this server: Phoenix's 404, in one line."""
    import pandas as pd

    from tests.traces.test_trace_files import dataframe_rows

    url, _, _ = traced
    root = tmp_path / "runs"
    tmp_path.mkdir()
    pd.DataFrame(dataframe_rows()).to_parquet(tmp_path / "elsewhere.parquet")
    run_id = _cli(root, "import", str(tmp_path / "elsewhere.parquet")).stdout.split()[-1]
    assert _cli(root, "score", run_id, "-m", "latency_ms", "--no-progress").exit_code == 0
    res = _cli(root, "export", run_id, "--to", url.replace("http://", "phoenix://") + "/" + PROJECT)
    assert isinstance(res.exception, EvalcoreError), res.output
    assert "HTTP 404" in str(res.exception) and "0000000000000001" in str(res.exception)
