"""What a Phoenix import may hold, what a cursor may be, and what a phoenix:// URL may say
(issue 34, item 6, round 4), against scripted servers on 127.0.0.1.

- a server handing every page a fresh trace and a fresh cursor was never seen as a loop: memory
  grew by gigabytes before the deadline (8 MB a page), or to 1 GB with small spans, well before
  the old span cap. The span pages of one import are bounded together in bytes
  (--phoenix-max-mb) and in spans (--phoenix-max-spans); past either, one line, nothing stored;
- a 70,000-character `next_cursor` crashed ("unexpected InvalidURL"), a 60,000-character one
  paged until the deadline holding every cursor: a cursor is bounded in length and must be
  text a URL can carry;
- `phoenix://999.1.1.1:1/p`, a byte that is not UTF-8, a 70,000-character project crashed as
  "unexpected"; a query, a fragment or a second path segment was silently dropped: every such
  URL is one usage error, for `import` and `export --to` alike, before any request.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError, InputError
from evalcore.store import RunStore
from tests.reliability.servers import Fault, ScriptedServer, ok_json
from tests.traces.test_phoenix_hostile import PROJECT, cursor_of, rest
from tests.traces.test_trace_counting import good_trace

runner = CliRunner()


@pytest.fixture
def server():
    """One server per test: a shared one would record requests an earlier test sent late."""
    srv = ScriptedServer(lambda r: ok_json({"data": []}))
    srv.start()
    yield srv
    srv.stop()


def _serve(server, page_of):
    """Script the span listing: `page_of(n)` is the reply to the n-th GET (1-based)."""
    server.gets = []

    def handler(request):
        server.gets.append(request)
        return page_of(len(server.gets))
    server.on_get = handler


def _root(n: int, answer: str = "an answer") -> dict:
    """The root span of a trace of its own (number n) as Phoenix's REST API lists it."""
    return rest(good_trace(f"{n:032x}", f"{n:016x}"))[0] | {
        "attributes": {"openinference.span.kind": "CHAIN", "input.value": f"q{n}?", "output.value": answer}}


def _url(server, project=PROJECT):
    return server.url.replace("http://", "phoenix://") + f"/{project}"


def _import(root, url, *flags):
    return runner.invoke(app, ["--store", str(root), "import", url, *flags])


def _refused(root, res, *fragments):
    assert res.exit_code != 0 and isinstance(res.exception, EvalcoreError), res.output
    for fragment in fragments:
        assert fragment in str(res.exception), str(res.exception)
    assert not root.exists() or RunStore(root).run_ids() == []
    return res.exception


# --- what an import holds ------------------------------------------------------------------------

def test_fresh_pages_stop_at_the_byte_bound(server, tmp_path):
    """Every page a new trace with a 300 KB answer and a new cursor: no loop, but 1 MB held at most."""
    _serve(server, lambda n: ok_json({"data": [_root(n, "x" * 300_000)], "next_cursor": f"c{n}"}))
    res = _import(tmp_path / "runs", _url(server), "--phoenix-max-mb", "1")
    _refused(tmp_path / "runs", res, "the span pages of this import passed 1 MB together (--phoenix-max-mb",
             "while reading spans, page 4")
    assert len(server.gets) == 4  # three pages held (0.86 MB), the fourth passes the bound


def test_a_page_announcing_more_than_the_budget_left_is_refused_unread(server, tmp_path):
    big = Fault("ok", 200, b"{}", {"Content-Length": str(900_000)})
    _serve(server, lambda n: ok_json({"data": [_root(n, "x" * 300_000)], "next_cursor": "c"}) if n == 1 else big)
    res = _import(tmp_path / "runs", _url(server), "--phoenix-max-mb", "1")
    _refused(tmp_path / "runs", res, "(--phoenix-max-mb", "refused unread (it announced 900,000 bytes)")


def test_fresh_pages_stop_at_the_span_bound(server, tmp_path):
    """100 small fresh spans a page (the report's second case): the span bound stops it."""
    _serve(server, lambda n: ok_json({"data": [_root(n * 1000 + i) for i in range(100)], "next_cursor": f"c{n}"}))
    res = _import(tmp_path / "runs", _url(server), "--phoenix-max-spans", "250")
    _refused(tmp_path / "runs", res, "more than 250 spans (--phoenix-max-spans", "stopped at page 3")
    assert len(server.gets) == 3


def test_a_reply_of_too_many_json_values_is_refused_unparsed(server, tmp_path):
    """6 MB of empty lists would take ~400 MB as Python objects: counted first (ten records' worth
    of values, evalcore/common/value_budget.py), never parsed."""
    _serve(server, lambda n: Fault("ok", 200, b'{"data": [' + b"[]," * 2_000_000 + b"[]]}"))
    exc = _refused(tmp_path / "runs", _import(tmp_path / "runs", _url(server)),
                   "phoenix proj, record page 1", "the reply holds more than")
    assert isinstance(exc, InputError)


def test_a_project_within_the_bounds_imports(server, tmp_path):
    pages = {1: {"data": [_root(1)], "next_cursor": "c" * 2048}, 2: {"data": [_root(2)], "next_cursor": None}}
    _serve(server, lambda n: ok_json(pages[n]))
    res = _import(tmp_path / "runs", _url(server), "--phoenix-max-spans", "2", "--phoenix-max-mb", "0.01")
    assert res.exit_code == 0, res.output
    assert cursor_of(server.gets[1]) == "c" * 2048  # a cursor at the bound goes back as it came


@pytest.mark.parametrize("flags, message", [
    (["--phoenix-max-mb", "0"], "--phoenix-max-mb must be a positive number"),
    (["--phoenix-max-mb", "nan"], "--phoenix-max-mb must be a positive number"),
    (["--phoenix-max-mb", "1e300"], "--phoenix-max-mb must be a positive number of MB up to 1,000,000"),
    (["--phoenix-max-spans", "0"], "--phoenix-max-spans must be a whole number from 1"),
    (["--phoenix-max-spans", "-5"], "--phoenix-max-spans must be a whole number from 1"),
])
def test_bounds_must_be_positive(server, tmp_path, flags, message):
    _serve(server, lambda n: ok_json({"data": []}))
    _refused(tmp_path / "runs", _import(tmp_path / "runs", _url(server), *flags), message)
    assert server.gets == []


def test_bound_flags_only_with_phoenix(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    res = _import(tmp_path / "runs", str(path), "--phoenix-max-mb", "5")
    assert isinstance(res.exception, EvalcoreError) and "apply to phoenix:// sources only" in str(res.exception)


HOLD = """
import runpy, sys
import evalcore.cli.main, evalcore.cli.transfer_commands, evalcore.scoring.importer, evalcore.traces.trace_import
import evalcore.traces.phoenix, evalcore.store, httpx, phoenix.client, pandas, pyarrow, duckdb

def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024

sys.argv = ["evalcore", *sys.argv[1:]]
before = hwm()
try:
    runpy.run_module("evalcore", run_name="__main__", alter_sys=True)
finally:
    print("grew", hwm() - before, file=sys.__stdout__, flush=True)
"""


def test_fresh_big_pages_in_bounded_memory_in_a_real_process(server, tmp_path):
    """The reported case (a new trace with a big answer per page) in a child process: it stops at
    the bound with one line, exit 2, and its peak memory grows by about the bound, not without end."""
    answer = "x" * 2 ** 20
    _serve(server, lambda n: ok_json({"data": [_root(n, answer)], "next_cursor": f"c{n}"}))
    proc = subprocess.run([sys.executable, "-c", HOLD, "--store", str(tmp_path / "runs"), "import", _url(server),
                           "--phoenix-max-mb", "16", "--phoenix-timeout", "120"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: Phoenix at") and "(--phoenix-max-mb" in proc.stderr
    assert len(server.gets) == 16  # fifteen 1 MB pages held, the sixteenth passes 16 MB
    grew = int(proc.stdout.split("grew")[-1])
    assert grew < 16 + 64, proc.stdout  # the pages held, one page in flight, the run's own work


# --- cursors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cursor, message", [
    ("c" * 70_000, "a cursor of 70,000 characters, past the bound of 2,048"),
    ("c" * 2049, "a cursor of 2,049 characters, past the bound of 2,048"),
    ("\ud800c", "a cursor that is not valid text"),
], ids=["70000", "2049", "surrogate"])
def test_a_cursor_that_cannot_be_sent_back_stops_the_import(server, tmp_path, cursor, message):
    _serve(server, lambda n: ok_json({"data": [_root(n)], "next_cursor": cursor}))
    res = _import(tmp_path / "runs", _url(server))
    exc = _refused(tmp_path / "runs", res, "phoenix proj, record page 1, field 'next_cursor'", message)
    assert isinstance(exc, InputError) and len(server.gets) == 1


# --- URLs ----------------------------------------------------------------------------------------

BAD_URLS = {
    "ipv4-999": ("phoenix://999.1.1.1:1/proj", "neither an IP address nor a host name"),
    "digits-only": ("phoenix://1.2.3:1/proj", "neither an IP address nor a host name"),
    "space-in-host": ("phoenix://ex ample:1/proj", "neither an IP address nor a host name"),
    "ipv6-unclosed": ("phoenix://[::1:1/proj", "Invalid IPv6 URL"),
    "not-utf8": ("phoenix://127.0.0.1:1/\udcff", "a byte that is not UTF-8"),
    "escape-not-utf8": ("phoenix://127.0.0.1:1/p%ff", "a %-escape that is not UTF-8"),
    "long-project": ("phoenix://127.0.0.1:1/" + "p" * 70_000, "a project name of 70,000 characters"),
    "query": ("phoenix://127.0.0.1:1/proj?x=1", "a query or fragment"),
    "empty-query": ("phoenix://127.0.0.1:1/proj?", "a query or fragment"),
    "fragment": ("phoenix://127.0.0.1:1/proj#top", "a query or fragment"),
    "trailing-slash": ("phoenix://127.0.0.1:1/proj/", "more than one path segment"),
    "double-slash": ("phoenix://127.0.0.1:1//proj", "more than one path segment"),
    "escaped-slash": ("phoenix://127.0.0.1:1/a%2Fb", "more than one path segment"),
    "control": ("phoenix://127.0.0.1:1/p\x1b[2J", "a control character"),
    "escaped-control": ("phoenix://127.0.0.1:1/p%1b", "a control character"),
    "port-0": ("phoenix://127.0.0.1:0/proj", "port 0"),
    "port-big": ("phoenix://127.0.0.1:70000/proj", "Port out of range"),
    "no-project": ("phoenix://127.0.0.1:1/", "no project name"),
    "blank-project": ("phoenix://127.0.0.1:1/%20", "only spaces"),
    "dot-dot": ("phoenix://127.0.0.1:1/%2E%2E", "a path step"),
}


@pytest.mark.parametrize("command", ["import", "export"])
@pytest.mark.parametrize("url, message", list(BAD_URLS.values()), ids=list(BAD_URLS))
def test_a_malformed_phoenix_url_is_one_usage_error(tmp_path, command, url, message):
    args = ["import", url] if command == "import" else ["export", "latest", "--to", url]
    res = runner.invoke(app, ["--store", str(tmp_path / "runs"), *args])
    assert type(res.exception) is EvalcoreError, repr(res.exception)  # exit 2, one line, no request sent
    assert message in str(res.exception) and "expected phoenix://HOST:PORT/PROJECT" in str(res.exception)


@pytest.mark.parametrize("url, base, project", [
    ("phoenix://localhost:6006/my%20project", "http://localhost:6006", "my project"),
    ("phoenixs://[::1]:443/p", "https://[::1]:443", "p"),
    ("PHOENIX://Phoenix.Example.org:1/Shop_Assistant-2", "http://phoenix.example.org:1", "Shop_Assistant-2"),
    ("phoenix://127.0.0.1:6006/café", "http://127.0.0.1:6006", "café"),
])
def test_plain_urls_still_read(url, base, project):
    from evalcore.traces.phoenix import parse_url

    target = parse_url(url)
    assert (target.base_url, target.project) == (base, project)


def test_a_url_with_a_byte_that_is_not_utf8_is_one_line_in_a_real_process(tmp_path):
    """The reported case: the command line's \\xff reached httpx as a lone surrogate and ended as
    'unexpected UnicodeEncodeError', exit 1."""
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "import",
                           b"phoenix://127.0.0.1:1/\xff"], capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert "a byte that is not UTF-8" in err


# --- numbers in a page ---------------------------------------------------------------------------

def test_a_page_with_an_impossible_token_count_is_one_input_error(server, tmp_path):
    spans = rest(good_trace())
    spans[2]["attributes"]["llm.token_count.prompt"] = 10**19
    _serve(server, lambda n: ok_json({"data": spans}))
    exc = _refused(tmp_path / "runs", _import(tmp_path / "runs", _url(server)), "past the bound")
    assert isinstance(exc, InputError) and exc.field == "llm.token_count.prompt" and f"span {spans[2]['context']['span_id']}" in str(exc)
