"""`evalcore import` of OpenInference span export files: Phoenix's span dataframe (Parquet,
JSONL), OTLP JSON lines; one trace -> one answer; bad spans refused by span id and attribute,
with nothing stored."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError, InputError
from evalcore.store import RunStore
from tests.traces.pipeline import QUESTIONS, otlp_json_lines

runner = CliRunner()
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _responses(root, run_id):
    from evalcore.store import query_df as df

    return df(RunStore(root), "SELECT question_id, method, answer, latency_ms, record FROM responses "
              "WHERE run_id = ? ORDER BY question_id", [run_id], runs=[run_id])


def dataframe_rows(method="dense", break_doc_score=False, drop=None):
    """Spans as rows of Phoenix's span dataframe (its real column names and nesting, as
    get_spans_dataframe returns them from a Phoenix 20 server)."""
    rows = []
    for n, item in enumerate(QUESTIONS):
        trace, root = f"{n:032x}", f"{n + 1:016x}"
        start = T0 + timedelta(seconds=n)
        rows.append({"name": "rag", "span_kind": "CHAIN", "parent_id": None, "start_time": start,
                     "end_time": start + timedelta(milliseconds=250), "status_code": "OK",
                     "context.span_id": root, "context.trace_id": trace,
                     "attributes.input.value": item["question"], "attributes.output.value": item["answer"],
                     "attributes.metadata": {"method": method, "question_id": item["id"]}})
        docs = [{"document.id": d, "document.content": t, "document.score": s} for d, t, s in item["docs"]]
        if break_doc_score and n == 1:
            docs[0]["document.score"] = "high"
        rows.append({"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": root,
                     "start_time": start, "end_time": start, "status_code": "OK",
                     "context.span_id": f"{n + 1:08x}aaaaaaaa", "context.trace_id": trace,
                     "attributes.retrieval.documents": docs})
        rows.append({"name": "generate", "span_kind": "LLM", "parent_id": root,
                     "start_time": start, "end_time": start, "status_code": "OK",
                     "context.span_id": f"{n + 1:08x}bbbbbbbb", "context.trace_id": trace,
                     "attributes.llm.token_count.prompt": 120.0, "attributes.llm.token_count.completion": 15.0,
                     "attributes.llm.cost.total": 0.0005, "attributes.llm.model_name": "tiny-llm"})
    if drop:
        for row in rows:
            if row["span_kind"] == "CHAIN" and row["context.span_id"] == f"{2:016x}":
                row.pop(drop)
    return rows


def _write(rows, path, date_format="iso"):
    df = pd.DataFrame(rows)
    if path.suffix == ".parquet":
        df.to_parquet(path)
    else:  # to_json's times: ISO text, or epoch milliseconds (its old default)
        df.to_json(path, orient="records", lines=True, date_format=date_format)
    return path


@pytest.mark.filterwarnings("ignore:'epoch' date format is deprecated")
@pytest.mark.parametrize("suffix, date_format", [(".parquet", None), (".jsonl", "iso"), (".jsonl", "epoch")])
def test_phoenix_span_dataframe_file_is_one_answer_per_trace(tmp_path, suffix, date_format):
    root = tmp_path / "runs"
    path = _write(dataframe_rows(), tmp_path / f"spans{suffix}", date_format)
    res = _cli(root, "import", str(path), "--method-from", "metadata.method")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    rows = _responses(root, run_id)
    assert len(rows) == 3 and set(rows["method"]) == {"dense"}
    by_answer = {r.answer: json.loads(r.record) for r in rows.itertuples()}
    first = by_answer[QUESTIONS[0]["answer"]]
    assert [(c["rank"], c["chunk_id"], c["score"]) for c in first["retrieved"]] == [(1, "d1", 0.92), (2, "d2", 0.41)]
    assert first["retrieved"][0]["text"] == QUESTIONS[0]["docs"][0][1]
    assert first["token_usage"] == {"input_tokens": 120, "output_tokens": 15, "model": "tiny-llm", "cost_usd": 0.0005}
    assert first["latency_ms"] == pytest.approx(250.0)
    assert first["raw"]["openinference"] == {"trace_id": f"{0:032x}", "span_id": f"{1:016x}"}


def test_ground_truth_joins_on_question_text_or_id_attribute(tmp_path):
    root = tmp_path / "runs"
    path = _write(dataframe_rows(), tmp_path / "spans.parquet")
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text("\n".join(json.dumps({"id": f"gold-{q['id']}", "question": q["question"],
                                             "ground_truth": f"truth {q['id']}"}) for q in QUESTIONS[:2]) + "\n")
    res = _cli(root, "import", str(path), "--dataset", str(dataset))
    assert res.exit_code == 0, res.output
    assert "2 of 3 traces matched" in res.output
    run_id = res.stdout.strip().splitlines()[-1]
    assert sorted(_responses(root, run_id)["question_id"])[:2] == ["gold-q1", "gold-q2"]

    by_id = tmp_path / "by_id.jsonl"
    by_id.write_text("\n".join(json.dumps({"id": q["id"], "question": q["question"], "ground_truth": "x"})
                               for q in QUESTIONS) + "\n")
    res = _cli(root, "import", str(path), "--dataset", str(by_id), "--id-from", "metadata.question_id")
    assert res.exit_code == 0, res.output
    assert list(_responses(root, res.stdout.strip().splitlines()[-1])["question_id"]) == ["q1", "q2", "q3"]


def test_default_method_is_the_project_and_otlp_ids_hex_or_base64(tmp_path):
    root = tmp_path / "runs"
    for hex_ids in (True, False):
        path = tmp_path / f"otlp-{hex_ids}.jsonl"
        path.write_text("\n".join(otlp_json_lines("shop-assistant", hex_ids=hex_ids)) + "\n")
        res = _cli(root, "import", str(path))
        assert res.exit_code == 0, res.output
        rows = _responses(root, res.stdout.strip().splitlines()[-1])
        assert set(rows["method"]) == {"shop-assistant"} and len(rows) == 3
        record = json.loads(rows["record"][0])
        ids = record["raw"]["openinference"]
        assert len(ids["trace_id"]) == 32 and len(ids["span_id"]) == 16 and ids["project"] == "shop-assistant"
        assert int(ids["span_id"], 16) and record["token_usage"]["input_tokens"] == 120
        assert [c["chunk_id"] for c in record["retrieved"]] in (["d1", "d2"], ["d3"], ["d4", "d5"])


def _refused(tmp_path, rows, *args, suffix=".parquet"):
    root = tmp_path / "runs"
    path = _write(rows, tmp_path / f"spans{suffix}")
    res = _cli(root, "import", str(path), *args)
    assert res.exit_code != 0
    assert isinstance(res.exception, InputError), res.output
    assert RunStore(root).run_ids() == [] if root.exists() else True  # nothing stored
    return res.exception


def test_missing_answer_names_the_span_and_attribute(tmp_path):
    exc = _refused(tmp_path, dataframe_rows(drop="attributes.output.value"))
    assert exc.field == "output.value" and f"span {2:016x}" in str(exc.record)
    assert "has no attribute 'output.value'" in str(exc)


def test_missing_method_attribute_names_the_span(tmp_path):
    exc = _refused(tmp_path, dataframe_rows(), "--method-from", "metadata.variant")
    assert exc.field == "metadata.variant" and "span 0000000000000001" in str(exc.record)
    assert "metadata.method" in str(exc)  # the attributes it has are listed


def test_bad_document_score_names_the_attribute(tmp_path):
    exc = _refused(tmp_path, dataframe_rows(break_doc_score=True), suffix=".jsonl")
    assert exc.field == "retrieval.documents.0.document.score" and "aaaaaaaa" in str(exc.record)


def test_two_roots_in_one_trace_and_repeated_question_are_refused(tmp_path):
    rows = dataframe_rows()
    rows[3]["context.trace_id"] = rows[0]["context.trace_id"]  # q2's root joins q1's trace
    exc = _refused(tmp_path, [r for r in rows if r["context.trace_id"] == rows[0]["context.trace_id"]])
    assert "2 root spans" in str(exc)
    again = dataframe_rows() + [{**r, "context.trace_id": "f" * 32,
                                 "context.span_id": "f" + r["context.span_id"][1:],
                                 "parent_id": ("f" + r["parent_id"][1:]) if r["parent_id"] else None}
                                for r in dataframe_rows()[:3]]
    exc = _refused(tmp_path, again)
    assert "second answer" in str(exc) and "--method-from" in str(exc)


def test_refusal_keeps_existing_runs(tmp_path):
    root = tmp_path / "runs"
    good = _write(dataframe_rows(), tmp_path / "good.parquet")
    assert _cli(root, "import", str(good)).exit_code == 0
    before = RunStore(root).run_ids()
    bad = _write(dataframe_rows(drop="attributes.input.value"), tmp_path / "bad.parquet")
    res = _cli(root, "import", str(bad))
    assert isinstance(res.exception, InputError) and res.exception.field == "input.value"
    assert RunStore(root).run_ids() == before


def test_method_from_on_a_recorded_answers_file_is_refused(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    res = _cli(tmp_path / "runs", "import", str(path), "--method-from", "metadata.method")
    assert isinstance(res.exception, EvalcoreError) and "not a span export" in str(res.exception)


def test_export_of_a_run_without_traces_is_refused(tmp_path):
    root = tmp_path / "runs"
    run_id = _cli(root, "import", "--example").stdout.strip().splitlines()[-1]
    assert _cli(root, "score", run_id, "-m", "latency_ms,is_empty", "--no-progress").exit_code == 0
    res = _cli(root, "export", run_id, "--to", "phoenix://127.0.0.1:9/proj")
    assert isinstance(res.exception, EvalcoreError) and "did not come from traces" in str(res.exception)


@pytest.mark.parametrize("url, message", [
    ("phoenix://127.0.0.1:6006", "PROJECT"),
    ("phoenix://127.0.0.1:6006/a/b", "one project name"),
    ("phoenix://user:secret@127.0.0.1:6006/p", "PHOENIX_API_KEY"),
])
def test_bad_phoenix_urls(url, message):
    from evalcore.traces.phoenix import parse_url

    with pytest.raises(EvalcoreError, match=message):
        parse_url(url)


def test_parse_url():
    from evalcore.traces.phoenix import parse_url

    target = parse_url("phoenix://127.0.0.1:6006/my-project")
    assert (target.base_url, target.project) == ("http://127.0.0.1:6006", "my-project")
    assert parse_url("phoenixs://127.0.0.1/p").base_url == "https://127.0.0.1"


def test_without_the_client_a_one_line_install_hint(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "phoenix.client", None)  # as if arize-phoenix-client were absent
    res = _cli(tmp_path / "runs", "import", "phoenix://127.0.0.1:9/proj")
    assert isinstance(res.exception, EvalcoreError)
    assert str(res.exception) == "Phoenix needs arize-phoenix-client: pip install 'evalcore[phoenix]'"


def test_id_attribute_missing_from_the_dataset_is_refused(tmp_path):
    dataset = tmp_path / "questions.jsonl"
    dataset.write_text(json.dumps({"id": "q1", "question": QUESTIONS[0]["question"]}) + "\n")
    exc = _refused(tmp_path, dataframe_rows(), "--dataset", str(dataset), "--id-from", "metadata.question_id")
    assert exc.field == "metadata.question_id" and "'q2' is not in the dataset" in str(exc)
    assert f"span {2:016x}" in str(exc.record)


def test_failed_root_span_is_a_failed_answer(tmp_path):
    root = tmp_path / "runs"
    rows = dataframe_rows()
    rows[3].pop("attributes.output.value")
    rows[3].update(status_code="ERROR", status_message="upstream timeout")
    res = _cli(root, "import", str(_write(rows, tmp_path / "spans.parquet")))
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    assert RunStore(root).manifest(run_id).counts["errors"] == 1
    records = [json.loads(r) for r in _responses(root, run_id)["record"]]
    assert [r["error"] for r in records if r["error"]] == ["upstream timeout"]


def test_export_to_phoenix_takes_no_file_options(tmp_path):
    res = _cli(tmp_path / "runs", "export", "latest", "--to", "phoenix://127.0.0.1:9/p", "-o", str(tmp_path / "x"))
    assert isinstance(res.exception, EvalcoreError) and "no --format or --output" in str(res.exception)


def test_a_bad_span_is_one_line_on_stderr(tmp_path):
    import subprocess
    import sys

    path = _write(dataframe_rows(drop="attributes.output.value"), tmp_path / "spans.parquet")
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "import", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"error: {path}, record 4 (span 0000000000000002)")
    assert "field 'output.value'" in proc.stderr
