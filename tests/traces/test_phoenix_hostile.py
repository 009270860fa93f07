"""Phoenix never hangs, loops or crashes (issue 34, item 6), against scripted servers on 127.0.0.1.

- a server dripping its reply (or stalling before its headers) used to hold `import
  phoenix://...` for ever, httpx's timeout being per read: each request now has a total
  deadline, and so has the import or export as a whole (--phoenix-request-timeout,
  --phoenix-timeout);
- a server repeating a `next_cursor` (the last one or any earlier one) made the import loop
  with memory growing: it stops with one line; a cursor that is not text too;
- replies of the wrong shape at any level ({"data": {...}}, {"data": [1]}, {}, [], a span whose
  context or attributes are of the wrong type, not JSON, nested too deeply) ended as
  "unexpected KeyError/TypeError", exit 1: one `error:` line naming the source, exit 2;
- a reply larger than the cap is refused without being read whole;
- `evalcore export RUN --to phoenix://...` gets the same deadlines and shape checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError, InputError
from evalcore.store import RunStore
from tests.reliability.servers import Fault, ScriptedServer, ok_json
from tests.traces.test_trace_counting import good_trace

runner = CliRunner()
PROJECT = "proj"
FAST = ["--phoenix-request-timeout", "0.5", "--phoenix-timeout", "5"]


def rest(spans):
    """Abstract spans (test_trace_counting) as Phoenix's REST API lists them."""
    return [{"name": "s", "span_kind": s["attributes"]["openinference.span.kind"], "parent_id": s["parent"],
             "start_time": "2026-01-01T00:00:00Z", "end_time": "2026-01-01T00:00:01Z", "status_code": "OK",
             "context": {"trace_id": s["trace"], "span_id": s["span"]}, "attributes": s["attributes"]}
            for s in spans]


def cursor_of(request) -> str | None:
    return (parse_qs(urlsplit(request["path"]).query).get("cursor") or [None])[0]


@pytest.fixture
def server():
    """A server of this test's own (a shared one recorded a request an earlier test's import
    sent before its deadline ended it): `serve_get(fn)` scripts the span listing (and records
    each GET in `gets`), `decide` the annotation POSTs."""
    srv = ScriptedServer(lambda r: ok_json({"data": []})).start()
    srv.gets, srv.requests, srv.streamed = [], [], 0
    srv.decide = lambda r: ok_json({"data": []})

    def serve_get(on_get):
        def handler(request):
            srv.gets.append(request)
            return on_get(request)
        srv.on_get = handler

    srv.serve_get = serve_get
    serve_get(lambda r: ok_json({"data": [], "next_cursor": None}))
    yield srv
    srv.stop()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _import(server, tmp_path, *flags):
    root = tmp_path / "runs"
    res = _cli(root, "import", server.url.replace("http://", "phoenix://") + f"/{PROJECT}", *flags)
    return root, res


def _refused(root, res, *fragments):
    assert res.exit_code != 0 and isinstance(res.exception, EvalcoreError), res.output
    for fragment in fragments:
        assert fragment in str(res.exception), str(res.exception)
    assert not root.exists() or RunStore(root).run_ids() == []  # nothing stored
    return res.exception


def test_pages_are_read_and_spans_across_pages_count_once(server, tmp_path):
    """Two pages; the second repeats a span of the first (counted once, item 5 on the server path)."""
    spans = rest(good_trace())
    pages = {None: {"data": spans[:2], "next_cursor": "c2"}, "c2": {"data": spans[1:], "next_cursor": None}}
    server.serve_get(lambda r: ok_json(pages[cursor_of(r)]))
    root, res = _import(server, tmp_path)
    assert res.exit_code == 0, res.output
    assert "1 span(s) delivered more than once" in res.output
    assert [cursor_of(r) for r in server.gets] == [None, "c2"]
    assert server.gets[0]["headers"]["accept-encoding"] == "identity"
    run_id = res.stdout.strip().splitlines()[-1]
    assert RunStore(root).manifest(run_id).counts["responses"] == 1


def test_the_api_key_goes_as_a_bearer_token_and_nowhere_else(server, tmp_path, monkeypatch):
    monkeypatch.setenv("PHOENIX_API_KEY", "px-CANARY-5e1f")
    server.serve_get(lambda r: ok_json({"data": {"a": 1}}))
    root, res = _import(server, tmp_path)
    assert server.gets[0]["headers"]["authorization"] == "Bearer px-CANARY-5e1f"
    assert isinstance(res.exception, InputError) and "px-CANARY" not in res.output + str(res.exception)


@pytest.mark.parametrize("fault", [Fault("drip", body=b" " * 100_000, chunk=1, seconds=0.02),
                                   Fault("stall", body=b"{}", seconds=60)], ids=["drip", "stall"])
def test_a_dripping_or_stalled_reply_meets_the_request_deadline(server, tmp_path, fault):
    server.serve_get(lambda r: fault)
    root, res = _import(server, tmp_path, *FAST)
    _refused(root, res, "no complete reply within 0.5 s (--phoenix-request-timeout)", "reading spans, page 1")


def test_the_import_as_a_whole_meets_its_deadline(server, tmp_path):
    """Every page quick, new cursors for ever: the import's own deadline ends it."""
    def endless(request):
        n = int(cursor_of(request) or 0) + 1
        return ok_json({"data": rest(good_trace(f"{n:032x}", f"{n:016x}"))[:1], "next_cursor": str(n)})
    server.serve_get(endless)
    root, res = _import(server, tmp_path, "--phoenix-timeout", "1", "--phoenix-request-timeout", "5")
    _refused(root, res, "not done within 1 s (--phoenix-timeout)")


@pytest.mark.parametrize("cursors", [["a", "a"], ["a", "b", "a"], ["a", "b", "c", "b"]],
                         ids=["last-again", "first-again", "middle-again"])
def test_a_repeated_cursor_stops_the_import(server, tmp_path, cursors):
    order = {None: 0, **{c: i + 1 for i, c in enumerate(cursors[:-1])}}

    def page(request):  # page k: a trace of its own, and the k-th cursor of the script
        k = order[cursor_of(request)]
        return ok_json({"data": rest(good_trace(f"{k + 1:032x}", f"{k + 1:016x}"))[:1], "next_cursor": cursors[k]})
    server.serve_get(page)
    root, res = _import(server, tmp_path)
    exc = _refused(root, res, "the same next cursor as page", "stores nothing")
    assert f"page {len(cursors)} the same next cursor as page {cursors.index(cursors[-1]) + 1}" in str(exc)
    assert len(server.gets) == len(cursors)  # not one page more


def test_new_cursors_for_the_same_spans_stop_the_import(server, tmp_path):
    """A cursor never seen, but a page of spans earlier pages gave: the same loop in disguise."""
    spans = rest(good_trace())
    server.serve_get(lambda r: ok_json({"data": spans, "next_cursor": str(int(cursor_of(r) or 0) + 1)}))
    root, res = _import(server, tmp_path)
    _refused(root, res, "gave page 2 only spans earlier pages gave, and yet another cursor", "stores nothing")
    assert len(server.gets) == 2


@pytest.mark.parametrize("cursor", [7, ["a"], {"c": 1}, True, 1.5])
def test_a_cursor_that_is_not_text_stops_the_import(server, tmp_path, cursor):
    server.serve_get(lambda r: ok_json({"data": rest(good_trace()), "next_cursor": cursor}))
    root, res = _import(server, tmp_path)
    exc = _refused(root, res, "phoenix proj, record page 1, field 'next_cursor'")
    assert isinstance(exc, InputError) and len(server.gets) == 1


SPAN = rest(good_trace())[0]
WRONG = {
    "data-object": {"data": {"a": 1}},
    "data-of-numbers": {"data": [1]},
    "empty-object": {},
    "empty-list": [],
    "text": "spans",
    "null": None,
    "data-text": {"data": "x"},
    "span-null": {"data": [None]},
    "context-number": {"data": [{**SPAN, "context": 5}]},
    "span-id-list": {"data": [{**SPAN, "context": {"trace_id": "a" * 32, "span_id": ["x"]}}]},
    "attributes-list": {"data": [{**SPAN, "attributes": ["input.value"]}]},
    "attributes-text": {"data": [{**SPAN, "attributes": "x"}]},
    "parent-object": {"data": [{**SPAN, "parent_id": {"id": 1}}]},
    "start-time-list": {"data": [{**SPAN, "start_time": [1]}]},
}


@pytest.mark.parametrize("reply", list(WRONG.values()), ids=list(WRONG))
def test_a_reply_of_the_wrong_shape_is_one_input_error(server, tmp_path, reply):
    server.serve_get(lambda r: ok_json(reply))
    root, res = _import(server, tmp_path)
    exc = _refused(root, res)
    assert isinstance(exc, InputError) and exc.file == f"phoenix {PROJECT}", str(exc)


@pytest.mark.parametrize("body", [b"<html>busy</html>", b"\xff\xfe{", b"[" * 100_000 + b"]" * 100_000,
                                  b'{"data": [' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"]}"],
                         ids=["html", "not-utf8", "nested-lists", "nested-objects"])
def test_a_reply_that_is_not_json_is_one_input_error(server, tmp_path, body):
    server.serve_get(lambda r: Fault("ok", 200, body))
    root, res = _import(server, tmp_path)
    exc = _refused(root, res, "phoenix proj, record page 1")
    assert isinstance(exc, InputError)


def test_a_span_nested_just_under_the_parsers_limit_is_one_input_error(server, tmp_path):
    """json.loads takes ~900 levels; walking the attributes then must not overflow the stack."""
    deep = 1
    for _ in range(900):
        deep = {"k": deep}
    server.serve_get(lambda r: ok_json({"data": [{**SPAN, "attributes": {**SPAN["attributes"], "deep": deep}}]}))
    root, res = _import(server, tmp_path)
    assert res.exit_code == 0 or isinstance(res.exception, InputError), repr(res.exception)


def test_wrong_shapes_are_one_line_exit_2_in_a_real_process(server, tmp_path):
    """The reported case, outside CliRunner: it ended as 'unexpected TypeError', exit 1."""
    server.serve_get(lambda r: ok_json({"data": {"a": 1}}))
    url = server.url.replace("http://", "phoenix://") + f"/{PROJECT}"
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "import", url],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: phoenix proj, record page 1, field 'data': expected a list of spans, got an object\n"


def test_a_reply_larger_than_the_cap_is_not_read_whole(server, tmp_path, monkeypatch):
    from evalcore.traces import phoenix_http

    monkeypatch.setattr(phoenix_http, "MAX_REPLY_BYTES", 2 ** 20)
    server.serve_get(lambda r: Fault("stream", body=b" " * 65536, total=2 ** 40))  # a body without end
    root, res = _import(server, tmp_path, *FAST)
    _refused(root, res, "sent a reply larger than 1 MB: refused")
    assert server.streamed < 64 * 2 ** 20  # stopped early, not read to the end

    server.serve_get(lambda r: Fault("ok", 200, b"{}", {"Content-Length": str(2 ** 30)}))
    root, res = _import(server, tmp_path, *FAST)
    _refused(root, res, "refused unread (it announced 1,073,741,824 bytes)")


def test_a_compressed_reply_is_refused_unread(server, tmp_path):
    import gzip

    body = gzip.compress(json.dumps({"data": [], "next_cursor": None}).encode())
    server.serve_get(lambda r: Fault("ok", 200, body, {"Content-Encoding": "gzip, gzip"}))
    root, res = _import(server, tmp_path, *FAST)
    _refused(root, res, "Content-Encoding 'gzip, gzip'", "refused unread")


@pytest.mark.parametrize("flags, message", [
    (["--phoenix-timeout", "0"], "--phoenix-timeout must be a positive number"),
    (["--phoenix-request-timeout", "nan"], "--phoenix-request-timeout must be a positive number"),
    (["--phoenix-timeout", "inf"], "--phoenix-timeout must be a positive number"),
    (["--phoenix-timeout", "1e300"], "--phoenix-timeout must be a positive number of seconds up to 1,000,000"),
    (["--phoenix-request-timeout", "-1"], "--phoenix-request-timeout must be a positive number"),
])
def test_deadlines_must_be_positive_and_finite(server, tmp_path, flags, message):
    root, res = _import(server, tmp_path, *flags)
    _refused(root, res, message)
    assert server.gets == []


def test_deadline_flags_only_with_phoenix(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    res = _cli(tmp_path / "runs", "import", str(path), "--phoenix-timeout", "5")
    assert isinstance(res.exception, EvalcoreError) and "phoenix:// sources only" in str(res.exception)
    res = _cli(tmp_path / "runs", "export", "latest", "--phoenix-request-timeout", "5")
    assert isinstance(res.exception, EvalcoreError) and "phoenix:// exports (--to) only" in str(res.exception)


# --- export --to phoenix:// ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def scored_run(tmp_path_factory):
    """A store holding a run imported from a span file and scored (latency_ms), for exports."""
    from tests.traces.test_trace_files import dataframe_rows

    base = tmp_path_factory.mktemp("scored")
    pd.DataFrame(dataframe_rows()).to_parquet(base / "spans.parquet")
    res = _cli(base / "runs", "import", str(base / "spans.parquet"))
    run_id = res.stdout.split()[-1]
    assert _cli(base / "runs", "score", run_id, "-m", "latency_ms", "--no-progress").exit_code == 0
    return base / "runs", run_id


def _export(server, scored_run, *flags):
    root, run_id = scored_run
    return _cli(root, "export", run_id, "--to", server.url.replace("http://", "phoenix://") + f"/{PROJECT}", *flags)


def _receipt(request):
    return ok_json({"data": [{"id": f"SpanAnnotation:{i}"} for i, _ in enumerate(request["body"]["data"])]})


def test_export_sends_and_checks_the_receipt(server, scored_run):
    server.decide = _receipt
    res = _export(server, scored_run)
    assert res.exit_code == 0, res.output
    assert "logged 3 span annotations" in res.output
    [request] = server.requests
    assert request["path"].endswith("/v1/span_annotations?sync=true") and len(request["body"]["data"]) == 3


@pytest.mark.parametrize("fault", [Fault("drip", body=b" " * 100_000, chunk=1, seconds=0.02),
                                   Fault("stall", body=b"{}", seconds=60)], ids=["drip", "stall"])
def test_export_meets_the_request_deadline(server, scored_run, fault):
    server.decide = lambda r: fault
    res = _export(server, scored_run, *FAST)
    assert isinstance(res.exception, EvalcoreError), res.output
    assert "no complete reply within 0.5 s (--phoenix-request-timeout) while sending span annotations" \
        in str(res.exception)


def test_export_meets_its_whole_deadline(server, scored_run, monkeypatch):
    from evalcore.outputs import phoenix_scores

    monkeypatch.setattr(phoenix_scores, "BATCH", 1)  # three requests, each slower than a third of the whole
    server.decide = lambda r: Fault("stall", body=json.dumps({"data": [{"id": "x"}]}).encode(), seconds=0.4)
    res = _export(server, scored_run, "--phoenix-timeout", "1", "--phoenix-request-timeout", "5")
    assert isinstance(res.exception, EvalcoreError), res.output
    assert "not done within 1 s (--phoenix-timeout)" in str(res.exception)
    assert "sent before this; exporting again resends them all" in str(res.exception)


EXPORT_WRONG = {"empty-object": {}, "empty-list": [], "data-object": {"data": {"id": "x"}},
                "data-of-numbers": {"data": [1, 2, 3]}, "id-number": {"data": [{"id": 1}] * 3},
                "too-few": {"data": [{"id": "x"}]}, "null": None}


@pytest.mark.parametrize("reply", list(EXPORT_WRONG.values()), ids=list(EXPORT_WRONG))
def test_export_reply_of_the_wrong_shape_is_one_input_error(server, scored_run, reply):
    server.decide = lambda r: ok_json(reply)
    res = _export(server, scored_run)
    assert isinstance(res.exception, InputError), res.output
    assert str(res.exception).startswith("phoenix proj, record reply to annotation batch 1")


def test_export_wrong_shape_is_one_line_exit_2_in_a_real_process(server, scored_run):
    root, run_id = scored_run
    server.decide = lambda r: ok_json({"data": {"id": "x"}})
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(root), "export", run_id, "--to",
                           server.url.replace("http://", "phoenix://") + f"/{PROJECT}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: phoenix proj, record reply to annotation batch 1, field 'data'")


# --- any reply, fuzzed ---------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)),
    max_leaves=10)


def _mutations():
    """A valid page with one value somewhere replaced by any JSON value."""
    page = {"data": rest(good_trace()), "next_cursor": None}

    def paths(value, prefix=()):
        yield prefix
        if isinstance(value, dict):
            for k, v in value.items():
                yield from paths(v, prefix + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                yield from paths(v, prefix + (i,))

    return page, list(paths(page))


PAGE, PATHS = _mutations()


@settings(max_examples=200, deadline=None)
@given(where=st.sampled_from(PATHS), value=json_values)
def test_any_page_reads_or_is_an_input_error(where, value):
    from evalcore.traces.phoenix import page_items, page_spans
    from evalcore.traces.trace_import import _pair, answers_from_traces
    from evalcore.traces.trace_tree import assemble_traces

    page = json.loads(json.dumps(PAGE))
    if where:
        holder = page
        for key in where[:-1]:
            holder = holder[key]
        holder[where[-1]] = value
    else:
        page = value
    try:
        items, _ = page_items(page, "phoenix p", 1)
        traces = assemble_traces(page_spans(items, "phoenix p", 1, "p"), "phoenix p")
        for answer in answers_from_traces(traces, "phoenix p", "m"):
            _pair(answer, "phoenix p", {}, {}, "p", None)
    except InputError as exc:
        assert exc.file == "phoenix p"
