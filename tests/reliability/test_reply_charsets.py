"""A reply's `charset` never picks the codec evalcore decodes it with (round 3, R3-2).

The target client decoded every reply with the codec its `Content-Type: ...; charset=` named.
`punycode` is worse than quadratic: one 600 KB reply held `evalcore run --timeout 5` for 56 s,
inside the event loop where no deadline could fire, and a 32 MB one would take days;
`charset=foo` failed a valid JSON answer as "unexpected failure... LookupError"; and a reply
honestly sent in ISO-8859-1 was refused as "not valid JSON". Now every reply evalcore reads
(a target's answers, /health, /models/info, /index/stats, the Launch page's offered
methods, embeddings, Phoenix pages, a judge's error bodies) is read as UTF-8/16/32, or as
ISO-8859-1 / windows-1252 when it says so, and any other declared charset is refused in one
line naming it (evalcore/common/reply_charset.py); the request's deadline covers reading the reply.

The hostile body below is valid JSON whose `pad` costs punycode about 0.1 s, so the old code
took it as an answer; every server is on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from evalcore.runner.config import EvalConfig
from evalcore.embeddings.openai_compat import EmbeddingServiceError, OpenAICompatibleBackend
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.common.reply_charset import declared_charsets
from evalcore.pipeline import run_evaluation
from evalcore.schemas import EvalResponse
from evalcore.targets import client as target_client
from evalcore.targets.client import RetryPolicy, TargetClient
from evalcore.targets.offered import offered_methods
from evalcore.targets.spec import TargetSpec

from .servers import Fault, ScriptedServer, api_of, llm_completion, ok_json, rag_answer

SLOW_PAD = "a" * 20_000 + "-" + "b" * 20_000  # punycode's insertions make this about 0.1 s


def _hostile_answer(charset: str) -> Fault:
    body = json.dumps({"answer": "a fine answer", "pad": SLOW_PAD}).encode()
    return Fault("ok", 200, body, {"Content-Type": f"application/json; charset={charset}"})


def _run(store, tmp_path, server: ScriptedServer, **settings):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": f"question {i}?"}) + "\n" for i in range(2)))
    config = EvalConfig(target=TargetSpec(url=server.url), dataset=str(questions), retries=1, backoff=0.01,
                        score=False, progress=False, **settings)
    result = run_evaluation(config, store)
    return result, run_responses(store, result.run_id)


def _serve(decide, on_get=None) -> ScriptedServer:
    return ScriptedServer(decide, on_get=on_get).start()


def _ask(server: ScriptedServer, questions: int = 2) -> list[EvalResponse]:
    """What the target client makes of the server's answers (one retry, as `--retries 1`)."""
    async def main() -> list[EvalResponse]:
        retry = RetryPolicy(retries=1, backoff_s=0.01, max_backoff_s=0.01)
        async with TargetClient(TargetSpec(url=server.url), timeout_s=5.0, retry=retry) as client:
            return [await client.query(f"question {i}?", f"q{i}", "m", "m", 3) for i in range(questions)]

    try:
        return asyncio.run(main())
    finally:
        server.stop()


@pytest.mark.parametrize("charset", ["punycode", "PUNYCODE", '"punycode"', "idna", "utf-7", "shift_jis",
                                     "zlib", "foo", "utf\xe9", "utf-8; charset=punycode"])
def test_a_charset_not_on_the_list_is_one_malformed_error_naming_it(charset):
    server = _serve(lambda r: _hostile_answer(charset))
    responses = _ask(server)
    for response in responses:
        assert response.error_kind == "malformed", response.error
        assert "charset" in response.error and "refused unread" in response.error, response.error
        assert "unexpected" not in response.error and "LookupError" not in response.error
        assert response.answer == ""
    shown = {'"punycode"': "'punycode'", "utf\xe9": "'utf\\xe9'",
             "utf-8; charset=punycode": "2 different charsets ('utf-8', 'punycode')"}
    assert shown.get(charset, f"charset '{charset}'") in responses[0].error, responses[0].error
    assert len(server.requests) == 2  # the same reply would come again: not retried


@pytest.mark.parametrize("charset, body, answer", [
    ("iso-8859-1", '{"answer": "caf\xe9 cr\xe8me"}'.encode("latin-1"), "caf\xe9 cr\xe8me"),
    ('"ISO-8859-1"', '{"answer": "na\xefve"}'.encode("latin-1"), "na\xefve"),
    ("latin1", '{"answer": "\xa35"}'.encode("latin-1"), "\xa35"),
    ("windows-1252", '{"answer": "\u20ac5 \u2013 ok"}'.encode("cp1252"), "\u20ac5 \u2013 ok"),
    ("utf-16", '{"answer": "caf\xe9"}'.encode("utf-16"), "caf\xe9"),
    ("UTF-8", '\ufeff{"answer": "caf\xe9"}'.encode("utf-8"), "caf\xe9"),
    ("utf_8", '{"answer": "caf\xe9"}'.encode("utf-8"), "caf\xe9"),
], ids=["latin-1", "quoted-upper", "latin1", "cp1252", "utf-16-bom", "utf-8-bom", "utf_8"])
def test_a_reply_in_a_listed_charset_is_read(charset, body, answer):
    server = _serve(lambda r: Fault("ok", 200, body, {"Content-Type": f"application/json; charset={charset}"}))
    responses = _ask(server)
    assert [(r.error, r.answer) for r in responses] == [(None, answer)] * 2


def test_an_error_reply_is_quoted_as_utf8_and_still_retried():
    """A 503 naming punycode: the message quotes its body as UTF-8, and 5xx is still retried."""
    body = b"overloaded, try later " + SLOW_PAD.encode()
    server = _serve(lambda r: Fault("ok", 503, body, {"Content-Type": "text/plain; charset=punycode"}))
    responses = _ask(server)
    for response in responses:
        assert response.error_kind == "http" and "HTTP 503: overloaded, try later" in response.error, response.error
    assert len(server.requests) == 4  # retried once each, as any 503


def _metadata(charset_of: dict[str, str], body_of: dict[str, bytes]):
    def on_get(request: dict) -> Fault:
        path = request["path"].split("?")[0]
        charset = charset_of.get(path)
        headers = {"Content-Type": f"application/json; charset={charset}"} if charset else {}
        return Fault("ok", 200, body_of.get(path, b'{"status": "ok"}'), headers)
    return on_get


def test_health_info_and_stats_in_a_charset_not_read_are_notes(store, tmp_path):
    every = {"/health": "punycode", "/models/info": "foo", "/index/stats": "punycode"}
    body = json.dumps({"status": "ok", "llm": "m-1", "pad": SLOW_PAD}).encode()
    server = _serve(lambda r: rag_answer(r["body"]["question"]),
                    on_get=_metadata(every, {path: body for path in every}))
    try:
        result, responses = _run(store, tmp_path, server)
    finally:
        server.stop()
    assert [r.error for r in responses] == [None, None]  # the answers themselves are plain JSON
    info = next(iter(store.manifest(result.run_id).target_info["targets"].values()))
    assert info["health"]["status_code"] == 200
    for key, path in (("health", "/health"), ("models_info", "/models/info"), ("index_stats", "/index/stats")):
        note = info[key]["_not_kept"]
        assert note.startswith(f"GET {path}: the reply declares charset '{every[path]}'"), note
        assert "llm" not in info[key]


def test_models_info_in_latin1_is_read(store, tmp_path):
    body = '{"llm": "mod\xe8le-1"}'.encode("latin-1")
    server = _serve(lambda r: rag_answer(r["body"]["question"]),
                    on_get=_metadata({"/models/info": "iso-8859-1"}, {"/models/info": body}))
    try:
        result, _ = _run(store, tmp_path, server)
    finally:
        server.stop()
    assert store.manifest(result.run_id).target_info["models_info"] == {"llm": "mod\xe8le-1"}


def test_the_launch_pages_method_probe_names_a_charset_not_read():
    methods = json.dumps({"methods": {"bm25": {}, "dense": {}}}).encode("latin-1")
    server = _serve(lambda r: rag_answer(""), on_get=_metadata({"/models/info": "punycode"}, {"/models/info": methods}))
    try:
        refused = offered_methods(server.url, timeout_s=2.0)
        server.on_get = _metadata({"/models/info": "latin-1"}, {"/models/info": methods})
        read = offered_methods(server.url, timeout_s=2.0)
    finally:
        server.stop()
    assert refused.methods == [] and "declares charset 'punycode'" in refused.note, refused.note
    assert read.methods == ["bm25", "dense"], read.note


def test_the_deadline_covers_reading_the_reply(monkeypatch):
    """However quick the network, a reply whose decoding or parsing ends past `--timeout` is a
    timeout, retried as one (the clock is moved by the decoder, not waited for)."""
    moved = [0.0]
    real_now, real_source = target_client._now, target_client.json_source

    def slow_source(content, headers):
        moved[0] += 60.0  # this reading "took" a minute
        return real_source(content, headers)

    monkeypatch.setattr(target_client, "_now", lambda: real_now() + moved[0])
    monkeypatch.setattr(target_client, "json_source", slow_source)
    server = _serve(lambda r: rag_answer(r["body"]["question"]))
    responses = _ask(server)
    for response in responses:
        assert response.error_kind == "timeout", response.error
        assert "no answer within 5s (reading the reply included)" in response.error
    assert len(server.requests) == 4  # a timeout is retried


def test_a_run_with_a_punycode_target_ends_at_once(store, tmp_path):
    """The case as reported, through a whole run: every answer one malformed error, asked once."""
    server = _serve(lambda r: _hostile_answer("punycode"))
    try:
        _, responses = _run(store, tmp_path, server, timeout=5.0)
    finally:
        server.stop()
    assert [r.error_kind for r in responses] == ["malformed", "malformed"]
    assert "the reply declares charset 'punycode', which evalcore does not decode" in responses[0].error
    assert len(server.requests) == 2


def test_an_embeddings_reply_in_a_charset_not_read_is_refused_once():
    vectors = {"data": [{"index": 0, "embedding": [0.5, 0.5]}], "pad": SLOW_PAD}
    server = _serve(lambda r: Fault("ok", 200, json.dumps(vectors).encode(),
                                    {"Content-Type": "application/json; charset=punycode"}))
    try:
        backend = OpenAICompatibleBackend("m", server.url, backoff=0.01)
        with pytest.raises(EmbeddingServiceError, match="declares charset 'punycode'.*refused unread"):
            backend.embed(["x"])
        server.decide = lambda r: Fault("ok", 500, b"busy " + SLOW_PAD.encode(),
                                        {"Content-Type": "text/plain; charset=punycode"})
        with pytest.raises(EmbeddingServiceError, match="HTTP 500: busy aaaa"):
            OpenAICompatibleBackend("m", server.url, max_retries=0).embed(["x"])
        backend.close()
    finally:
        server.stop()
    assert len(server.requests) == 2  # the refused one was not asked again


def _judge_outcome(provider: str, server: ScriptedServer, store, monkeypatch):
    from evalcore.judges import make_judge
    from evalcore.judges.client import JudgeTask

    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    spec = "anthropic:claude-haiku-4-5" if provider == "anthropic" else f"openai:gpt-4o-mini@{server.url}/v1"
    try:
        judge = make_judge(spec, store=store, timeout=5.0, max_attempts=2, backoff_base=0.01)
        return judge.run_many([JudgeTask("answer_class", {"question": "q?", "ground_truth": "a", "answer": "a"},
                                         "r", "m", "q1")])[0]
    finally:
        server.stop()


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_judge_error_body_is_never_decoded_with_the_named_codec(store, monkeypatch, provider):
    """The SDKs quote an error body through httpx's `.text`: its codec is pinned first."""
    server = _serve(lambda r: Fault("ok", 400, b"bad request: model unknown " + SLOW_PAD.encode(),
                                    {"Content-Type": "text/plain; charset=punycode"}))
    out = _judge_outcome(provider, server, store, monkeypatch)
    assert out.error and "HTTP 400: bad request: model unknown aaa" in out.error, out.error


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_judge_reply_that_is_not_utf8_json_is_one_error_not_a_crash(store, monkeypatch, provider):
    """The SDKs parse a reply as UTF-8 JSON whatever its charset: a latin-1 one raised a bare
    UnicodeDecodeError through the whole scoring; now it is that call's error, asked once."""
    def decide(request: dict) -> Fault:
        reply = llm_completion(api_of(request["path"]), "m", '{"label": "CORRECT", "reason": "caf\xe9"}')
        body = json.dumps(json.loads(reply.body), ensure_ascii=False).encode("latin-1")
        return Fault("ok", 200, body, {"Content-Type": "application/json; charset=iso-8859-1"})

    server = _serve(decide)
    out = _judge_outcome(provider, server, store, monkeypatch)
    assert out.error and "the judge reply is not JSON in UTF-8 (UnicodeDecodeError" in out.error, out.error
    assert len(server.requests) == 1  # it would come again: not retried


def test_a_phoenix_page_in_a_charset_not_read_is_one_line_and_latin1_is_read(tmp_path):
    from typer.testing import CliRunner

    from evalcore.cli.main import app
    from evalcore.errors import InputError
    from evalcore.store import RunStore
    from tests.traces.test_phoenix_hostile import rest
    from tests.traces.test_trace_counting import good_trace

    spans = rest(good_trace())
    spans[0]["attributes"]["input.value"] = "o\xf9 est le caf\xe9?"
    spans[0]["attributes"]["output.value"] = "\xe0 c\xf4t\xe9"
    page = json.dumps({"data": spans, "next_cursor": None}, ensure_ascii=False).encode("latin-1")
    charset = ["punycode"]

    def on_get(request: dict) -> Fault:
        return Fault("ok", 200, page, {"Content-Type": f"application/json; charset={charset[0]}"})

    server = _serve(lambda r: ok_json({"data": []}), on_get=on_get)
    source = server.url.replace("http://", "phoenix://") + "/proj"
    try:
        refused = CliRunner().invoke(app, ["--store", str(tmp_path / "a"), "import", source])
        charset[0] = "iso-8859-1"
        read = CliRunner().invoke(app, ["--store", str(tmp_path / "b"), "import", source])
    finally:
        server.stop()
    assert isinstance(refused.exception, InputError), refused.output
    assert "declares charset 'punycode'" in str(refused.exception) and "page 1" in str(refused.exception)
    assert read.exit_code == 0, read.output
    run_id = read.stdout.strip().splitlines()[-1]
    store = RunStore(tmp_path / "b")
    assert run_questions(store, run_id)[0].question == "o\xf9 est le caf\xe9?"
    assert run_responses(store, run_id)[0].answer == "\xe0 c\xf4t\xe9"


@pytest.mark.parametrize("header, found", [
    ("application/json", []),
    ("application/json; charset=utf-8", ["utf-8"]),
    ('application/json;charset="ISO-8859-1"', ["ISO-8859-1"]),
    ('application/json; charset="a\\"b"', ['a"b']),
    ("application/json; CHARSET = utf-8 ; q=1", ["utf-8"]),
    ("application/json, application/json; charset=foo", ["foo"]),
    ("application/json; charset*=utf-8''latin1", ["utf-8''latin1"]),
    ("application/json; charset=", []),
])
def test_the_charset_parameters_are_read_as_sent(header, found):
    assert declared_charsets(header) == found
