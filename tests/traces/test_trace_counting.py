"""A trace is counted once: spans delivered twice count once, a conflicting copy is refused,
and spans the root does not reach (cycles, self-parents, missing or foreign parents) are
ignored with a warning, never summed; in every span shape evalcore reads (OTLP JSON lines,
Phoenix's span dataframe as JSONL or Parquet, Phoenix REST spans as JSONL)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import InputError
from evalcore.store import RunStore
from evalcore.traces.spans import Span
from evalcore.traces.trace_import import answers_from_traces
from evalcore.traces.trace_tree import assemble_traces

runner = CliRunner()
T1, T2 = "a" * 32, "b" * 32
ROOT = "1" * 16
SHAPES = ["otlp", "dataframe.jsonl", "dataframe.parquet", "rest"]
HUGE = 999_999


def _span(trace, span_id, parent, kind, **attributes):
    return {"trace": trace, "span": span_id, "parent": parent,
            "attributes": {"openinference.span.kind": kind, **attributes}}


def good_trace(trace=T1, root=ROOT):
    """A root with a retriever (one document) and an LLM (100 + 10 tokens, cost 0.5)."""
    return [_span(trace, root, None, "CHAIN", **{"input.value": f"question of {trace[:4]}?",
                                                 "output.value": "an answer"}),
            _span(trace, root[:8] + "2" * 8, root, "RETRIEVER", **{"retrieval.documents.0.document.id": "d1",
                                                                  "retrieval.documents.0.document.content": "t"}),
            _span(trace, root[:8] + "3" * 8, root, "LLM", **{"llm.token_count.prompt": 100,
                                                            "llm.token_count.completion": 10,
                                                            "llm.cost.total": 0.5})]


def llm(trace, span_id, parent):
    """An LLM span with a huge token count and a document: if it is summed, it shows."""
    return _span(trace, span_id, parent, "LLM", **{"llm.token_count.prompt": HUGE, "llm.cost.total": 100.0})


def _otlp_value(value):
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_otlp_value(v) for v in value]}}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"doubleValue": value}


def render(spans, shape, path):
    """The abstract spans written as a file of one of the shapes, one record per span."""
    if shape == "otlp":
        lines = [{"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [{
            "traceId": s["trace"], "spanId": s["span"], **({"parentSpanId": s["parent"]} if s["parent"] else {}),
            "name": "s", "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
            "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in s["attributes"].items()]}]}]}]}
            for s in spans]
        path = path.with_suffix(".jsonl")
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path
    if shape == "rest":
        path = path.with_suffix(".jsonl")
        path.write_text("".join(json.dumps({"name": "s", "parent_id": s["parent"], "start_time": "2026-01-01T00:00:00Z",
                                            "end_time": "2026-01-01T00:00:01Z", "status_code": "OK",
                                            "context": {"trace_id": s["trace"], "span_id": s["span"]},
                                            "attributes": s["attributes"]}) + "\n" for s in spans))
        return path
    rows = [{"name": "s", "parent_id": s["parent"], "start_time": "2026-01-01T00:00:00+00:00",
             "end_time": "2026-01-01T00:00:01+00:00", "status_code": "OK", "context.span_id": s["span"],
             "context.trace_id": s["trace"], **{f"attributes.{k}": v for k, v in s["attributes"].items()}}
            for s in spans]
    suffix = shape.split(".")[1]
    path = path.with_suffix("." + suffix)
    if suffix == "parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _import(tmp_path, spans, shape):
    root = tmp_path / "runs"
    res = runner.invoke(app, ["--store", str(root), "import", str(render(spans, shape, tmp_path / "spans"))])
    return root, res


def _answers(root, res):
    from evalcore.store import query_df

    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    rows = query_df(RunStore(root), "SELECT record FROM responses WHERE run_id = ? ORDER BY question_id",
                    [run_id], runs=[run_id])
    return [json.loads(r) for r in rows["record"]], RunStore(root).manifest(run_id)


def _counted_once(record):
    assert record["token_usage"]["input_tokens"] == 100 and record["token_usage"]["output_tokens"] == 10
    assert record["token_usage"]["cost_usd"] == pytest.approx(0.5)
    assert [c["chunk_id"] for c in record["retrieved"]] == ["d1"]


@pytest.mark.parametrize("again", ["children", "everything"])
@pytest.mark.parametrize("shape", SHAPES)
def test_spans_delivered_twice_count_once(tmp_path, shape, again):
    """An exporter's retried batch (the children again), or a whole export appended twice."""
    spans = good_trace() + good_trace(T2, "4" * 16)
    repeat = [s for s in spans if s["parent"]] if again == "children" else spans[::-1]
    root, res = _import(tmp_path, spans + repeat, shape)
    records, manifest = _answers(root, res)
    assert len(records) == 2 and manifest.counts["responses"] == 2
    for record in records:
        _counted_once(record)
    assert f"{len(repeat)} span(s) delivered more than once" in res.output
    assert manifest.source["spans_left_out"] == {"repeated": len(repeat)}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_conflicting_copy_of_a_span_is_refused_by_name(tmp_path, shape):
    spans = good_trace()
    changed = json.loads(json.dumps(spans[2]))
    changed["attributes"]["llm.token_count.prompt"] = 101
    root, res = _import(tmp_path, spans + [changed], shape)
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.field == "llm.token_count.prompt"
    assert f"span {'1' * 8}{'3' * 8} of trace {T1}" in str(res.exception) and "different content" in str(res.exception)
    assert not root.exists() or RunStore(root).run_ids() == []


@pytest.mark.parametrize("shape", SHAPES)
def test_spans_the_root_does_not_reach_are_ignored_with_a_warning(tmp_path, shape):
    cycle = [llm(T1, "c" * 16, "d" * 16), llm(T1, "d" * 16, "c" * 16)]
    orphan = [llm(T1, "e" * 16, "9" * 16)]  # its parent is nowhere
    selfish = [llm(T1, "f" * 16, "f" * 16)]
    foreign = [llm(T2, "7" * 16, ROOT)]  # another trace's span claiming T1's root as parent
    root, res = _import(tmp_path, good_trace() + cycle + orphan + selfish + foreign, shape)
    records, manifest = _answers(root, res)
    assert len(records) == 1
    _counted_once(records[0])
    assert "ignored 4 span(s) their trace's root does not reach" in res.output
    assert "ignored 1 trace(s) without a root span" in res.output
    assert manifest.source["spans_left_out"] == {"unreachable": 4, "rootless_traces": 1, "rootless_spans": 1}


def test_a_cycle_under_a_valid_root_adds_nothing_through_the_cli(tmp_path):
    """The reported case: a valid root plus two spans that are each other's parent (OTLP)."""
    import subprocess
    import sys

    path = render(good_trace() + [llm(T1, "c" * 16, "d" * 16), llm(T1, "d" * 16, "c" * 16)], "otlp",
                  tmp_path / "spans")
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "import", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "warning: ignored 2 span(s)" in proc.stderr
    records, _ = _answers(tmp_path / "runs", type("R", (), {"exit_code": 0, "stdout": proc.stdout, "output": ""}))
    _counted_once(records[0])


def _chain(depth):
    """A root, then `depth` spans each the parent of the next, an LLM span at the bottom."""
    spans = [Span(span_id=f"{0:016x}", trace_id=T1, parent_id=None, name="rag", kind="CHAIN", start=None, end=None,
                  status="OK", attributes={"input.value": "q?", "output.value": "a"})]
    for i in range(1, depth + 1):
        spans.append(Span(span_id=f"{i:016x}", trace_id=T1, parent_id=f"{i - 1:016x}", name="step", kind="CHAIN",
                          start=None, end=None, status="OK"))
    spans.append(Span(span_id=f"{depth + 1:016x}", trace_id=T1, parent_id=f"{depth:016x}", name="gen", kind="LLM",
                      start=None, end=None, status="OK", attributes={"llm.token_count.prompt": 7}))
    return spans


def test_a_deep_parent_chain_is_walked_without_recursion():
    spans = _chain(100_000)
    traces = assemble_traces(reversed(spans), "deep.jsonl")  # children before parents, too
    [answer] = answers_from_traces(traces, "deep.jsonl", "m")
    assert answer.token_usage["input_tokens"] == 7 and answer.root.span_id == f"{0:016x}"


def test_a_trace_recorded_below_its_entry_point_keeps_its_root():
    """No span without a parent: the one whose parent is in no trace of the source is the root."""
    spans = _chain(3)
    spans[0].parent_id = "f" * 16  # the remote caller's span, not exported
    [answer] = answers_from_traces(assemble_traces(spans, "part.jsonl"), "part.jsonl", "m")
    assert answer.root.span_id == f"{0:016x}" and answer.token_usage["input_tokens"] == 7


def test_a_source_of_only_rootless_traces_is_refused():
    spans = [Span(span_id="c" * 16, trace_id=T1, parent_id="d" * 16, name="x", kind="LLM", start=None, end=None,
                  status="OK"),
             Span(span_id="d" * 16, trace_id=T1, parent_id="c" * 16, name="y", kind="LLM", start=None, end=None,
                  status="OK")]
    with pytest.raises(InputError, match="no trace has a root span"):
        answers_from_traces(assemble_traces(spans, "cycle.jsonl"), "cycle.jsonl", "m")


# --- ids in one form (round 4): a span written in another letter case, or in base64, is the same span

def _b64(hex_id):
    import base64

    return base64.b64encode(bytes.fromhex(hex_id)).decode()


@pytest.mark.parametrize("spell", [str.upper, _b64], ids=["uppercase", "base64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_an_id_spelt_another_way_is_the_same_span(tmp_path, shape, spell):
    """The LLM span again with its ids spelt another way counted twice (200/20 tokens, cost 1.0,
    no warning); a child naming its parent spelt another way was unreachable."""
    from evalcore.traces.spans import read_span_file

    spans = good_trace()
    again = json.loads(json.dumps(spans[2]))
    again["span"], again["trace"] = spell(again["span"]), spell(again["trace"])
    spans[1]["parent"] = spell(spans[1]["parent"])  # the retriever names its parent spelt so
    path = str(render(spans + [again], shape, tmp_path / "spans"))
    traces = assemble_traces(read_span_file(path), path)
    assert (traces.repeated_spans, traces.unreachable_spans) == (1, 0)
    [answer] = answers_from_traces(traces, path, "m")
    assert (answer.trace_id, answer.root.span_id) == (T1, ROOT)
    assert (answer.token_usage["input_tokens"], answer.token_usage["output_tokens"]) == (100, 10)
    assert answer.token_usage["cost_usd"] == pytest.approx(0.5) and [d["chunk_id"] for d in answer.retrieved] == ["d1"]


def test_the_reported_uppercase_copy_counts_once_through_the_cli(tmp_path):
    spans = good_trace()
    again = dict(spans[2], span=spans[2]["span"].upper())
    root, res = _import(tmp_path, spans + [again], "rest")
    records, manifest = _answers(root, res)
    _counted_once(records[0])
    assert "1 span(s) delivered more than once" in res.output and manifest.source["spans_left_out"] == {"repeated": 1}


@pytest.mark.parametrize("bad", ["1" * 15, "g" * 16, "1" * 16 + "1", "span-one", "0x" + "1" * 14])
@pytest.mark.parametrize("shape", SHAPES)
def test_an_id_that_is_no_span_id_is_refused_by_field(tmp_path, shape, bad):
    spans = good_trace()
    spans[2]["span"] = bad
    root, res = _import(tmp_path, spans, shape)
    assert isinstance(res.exception, InputError), res.output
    assert "not a span id: expected 16 hex digits (8 bytes) or their base64" in str(res.exception)
    assert res.exception.field in ("spanId", "context.span_id")
    assert not root.exists() or RunStore(root).run_ids() == []


# --- one model call counted once when LLM spans nest (round 4, F11) ------------------------------

def _nested(trace=T1):
    """A root; a framework's LLM span; under it the SDK instrumentor's LLM span of the same call."""
    root, outer, inner = ROOT, ROOT[:8] + "5" * 8, ROOT[:8] + "6" * 8
    counts = {"llm.token_count.prompt": 100, "llm.token_count.completion": 10, "llm.cost.total": 0.5}
    return [_span(trace, root, None, "CHAIN", **{"input.value": "q?", "output.value": "a"}),
            _span(trace, ROOT[:8] + "2" * 8, root, "RETRIEVER", **{"retrieval.documents.0.document.id": "d1",
                                                                  "retrieval.documents.0.document.content": "t"}),
            _span(trace, outer, root, "LLM", **counts),
            _span(trace, ROOT[:8] + "7" * 8, outer, "CHAIN"),  # a step between the two
            _span(trace, inner, ROOT[:8] + "7" * 8, "LLM", **counts, **{"llm.model_name": "m-1"})]


@pytest.mark.parametrize("shape", SHAPES)
def test_an_llm_span_under_another_llm_span_counts_once(tmp_path, shape):
    root, res = _import(tmp_path, _nested(), shape)
    records, manifest = _answers(root, res)
    _counted_once(records[0])
    assert "1 LLM span(s) wrap an LLM span reporting the same tokens or cost" in res.output
    assert manifest.source["llm_spans_nested"] == 1


def _usage_of(spans):
    traces = assemble_traces([Span(span_id=s["span"], trace_id=s["trace"], parent_id=s["parent"], name="s",
                                   kind=s["attributes"]["openinference.span.kind"], start=None, end=None,
                                   status="OK", attributes=s["attributes"]) for s in spans], "t.jsonl")
    [answer] = answers_from_traces(traces, "t.jsonl", "m")
    return answer.token_usage


def test_each_count_comes_from_the_innermost_span_that_reports_it():
    """The SDK span counts tokens but no cost; the framework span around it prices the call:
    tokens from the inner span, cost from the outer one."""
    spans = _nested()
    del spans[4]["attributes"]["llm.cost.total"]
    spans[2]["attributes"].update({"llm.token_count.prompt": 999, "llm.cost.total": 0.7})
    assert _usage_of(spans) == {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.7, "model": "m-1"}


def test_two_calls_under_one_agent_span_are_summed_and_its_total_is_not():
    spans = _nested()
    spans[2]["attributes"].update({"llm.token_count.prompt": 200, "llm.token_count.completion": 20,
                                   "llm.cost.total": 1.0})  # the agent's total of the two calls below
    second = dict(spans[4], span=ROOT[:8] + "8" * 8, attributes=dict(spans[4]["attributes"]))
    usage = _usage_of(spans + [second])
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (200, 20, 1.0)


def test_sibling_llm_spans_are_still_summed():
    spans = good_trace()
    spans.append(_span(T1, ROOT[:8] + "9" * 8, ROOT, "LLM", **{"llm.token_count.prompt": 1, "llm.cost.total": 0.25}))
    usage = _usage_of(spans)
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (101, 10, 0.75)
