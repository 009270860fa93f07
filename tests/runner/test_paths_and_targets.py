"""Field paths, request templates, foreign response shapes and secrets kept out of the store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalcore.runner.config import EvalConfig, load_config
from evalcore.scoring.queries import run_responses
from evalcore.pipeline import run_evaluation
from evalcore.targets import PathError, ResponseMap, TargetSpec, get_path, parse_response, render_body
from evalcore.targets.spec import TargetConfigError

DOC = {"data": {"answer": "yes", "sources": [{"id": "a", "meta": {"path": "x.md", "h": ["T", "S"]}},
                                             {"id": "b", "meta": {}}, {"nope": 1}]},
       "list": [[1, 2], [3]], "dotted.key": 5}


@pytest.mark.parametrize("path, expected", [
    ("data.answer", "yes"),
    ("data.sources[*].id", ["a", "b"]),
    ("data.sources[0].meta.path", "x.md"),
    ("data.sources[-1].nope", 1),
    ("data.sources[5].id", None),
    ("data.missing.deeper", None),
    ("list[*][*]", [1, 2, 3]),
    ("['dotted.key']", 5),
    ("$.data.answer", "yes"),
    ("", DOC),
])
def test_get_path(path, expected):
    assert get_path(DOC, path) == expected


@pytest.mark.parametrize("bad", ["a..b", "a.", "a[x]", ".a", "a[1"])
def test_bad_paths_are_rejected(bad):
    with pytest.raises(PathError):
        get_path(DOC, bad)


def test_render_body_keeps_types_and_substitutes_text():
    body = {"q": "{{question}}", "k": "{{top_k}}", "p": "ask: {{question}} ({{method}})", "n": [1, "{{x}}"]}
    out = render_body(body, {"question": "why?", "top_k": 5, "method": "m", "x": None})
    assert out == {"q": "why?", "k": 5, "p": "ask: why? (m)", "n": [1, None]}
    with pytest.raises(TargetConfigError):
        render_body({"q": "{{nope}}"}, {"question": "q"})


def test_parse_foreign_shape():
    rmap = ResponseMap(answer="data.answer", retrieved="data.sources[*]",
                       chunk_fields={"chunk_id": "id", "rel_path": "meta.path", "heading_path": "meta.h",
                                     "text": "id"},
                       citations="data.sources[*].id", abstained=None, timings=None)
    resp = parse_response(DOC, rmap, "q1", "m")
    assert [c.chunk_id for c in resp.retrieved] == ["a", "b", None]
    assert resp.retrieved[0].heading_path == "T > S" and resp.retrieved[0].rel_path == "x.md"
    assert [c.rank for c in resp.retrieved] == [1, 2, 3]
    assert [c.chunk_id for c in resp.citations] == ["a", "b"]
    assert resp.raw == {"list": [[1, 2], [3]], "dotted.key": 5}


FOREIGN_CONFIG = """
name: foreign
dataset: {dataset}
concurrency: 2
retries: 0
score: false
progress: false
targets:
  acme:
    url: {url}
    headers:
      Authorization: "Bearer ${{EVALCORE_TEST_CANARY}}"
      X-Team: evals
    health_path: /health
    stats_path: null
    query_path: /query
    body: {{question: "{{{{question}}}}", method: "{{{{method}}}}", options: {{k: "{{{{top_k}}}}", lang: "{{{{lang}}}}"}}}}
    response:
      answer: answer
      retrieved: retrieved[*]
      chunk_fields: {{chunk_id: chunk_id, text: text}}
      citations: citations[*]
methods:
  - {{name: first, target: acme, method: alpha, top_k: 3, params: {{lang: en}}}}
  - {{name: second, target: acme, method: beta, params: {{lang: ko}}}}
"""


def test_target_config_with_env_headers_never_stores_the_secret(faulty, question_file, store, tmp_path,
                                                                 monkeypatch):
    canary = "canary-" + os.urandom(8).hex()
    monkeypatch.setenv("EVALCORE_TEST_CANARY", canary)
    qfile = question_file(["plain a", "plain b", "BROKEN c"])
    cfg_file = tmp_path / "eval.yaml"
    cfg_file.write_text(FOREIGN_CONFIG.format(dataset=qfile, url=faulty.url), encoding="utf-8")
    config = load_config(cfg_file)
    result = run_evaluation(config, store)
    assert result.status == "complete"
    assert {h.get("Authorization") for h in faulty.headers_seen} == {f"Bearer {canary}"}
    assert {r.method for r in run_responses(store, result.run_id)} == {"first", "second"}
    assert faulty.calls[("plain a", "alpha")] == 1 and faulty.calls[("plain a", "beta")] == 1
    leaked = [p for p in Path(store.root).rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
    assert leaked == []
    snapshot = store.manifest(result.run_id).config
    assert snapshot["targets"]["acme"]["headers"]["Authorization"] == "Bearer ${EVALCORE_TEST_CANARY}"


def test_missing_env_var_is_a_clear_error(question_file, monkeypatch):
    monkeypatch.delenv("EVALCORE_TEST_UNSET", raising=False)
    spec = TargetSpec(url="http://127.0.0.1:9", headers={"X-Key": "${EVALCORE_TEST_UNSET}"})
    with pytest.raises(TargetConfigError, match="EVALCORE_TEST_UNSET"):
        spec.resolved_headers()


def test_literal_secret_headers_are_redacted_in_the_snapshot(question_file):
    config = EvalConfig(target={"url": "http://user:pw@127.0.0.1:9", "headers": {"Authorization": "Bearer s3cr3t"}},
                        dataset=str(question_file(["a"])))
    text = json.dumps(config.snapshot())
    assert "s3cr3t" not in text and "pw@" not in text


def test_the_worked_config_in_docs_is_valid(tmp_path, monkeypatch):
    """docs/targets.md's example must load: a doc that drifts from the code is a bug."""
    import re

    import yaml

    docs = Path(__file__).resolve().parents[2] / "docs" / "targets.md"
    block = re.search(r"```yaml\n(# eval\.yaml\n.*?)```", docs.read_text(encoding="utf-8"), re.S).group(1)
    data = yaml.safe_load(block)
    (tmp_path / "questions.yaml").write_text("questions: [{id: a, question: q}]", encoding="utf-8")
    cfg_file = tmp_path / "eval.yaml"
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    config = load_config(cfg_file)
    assert [m.name for m in config.methods] == ["hybrid", "hybrid-k10", "dense"]
    spec = config.targets["acme"]
    monkeypatch.setenv("ACME_RAG_TOKEN", "t0ken")
    assert spec.resolved_headers()["Authorization"] == "Bearer t0ken"
    reply = {"data": {"answer": "A", "sources": [{"id": "c1", "content": "x", "relevance": 0.5,
                                                  "meta": {"file": "f.md", "headings": ["H", "S"]}}],
                      "cited": [{"source_id": "c1"}], "no_answer": False},
             "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "debug": {"timings": {"total_ms": 5}}}
    resp = parse_response(reply, spec.response, "a", "hybrid")
    assert resp.retrieved[0].heading_path == "H > S" and resp.citations[0].chunk_id == "c1"
    assert resp.token_usage.input_tokens == 10 and resp.timings == {"total_ms": 5.0}
    body = render_body(spec.body, {"question": "q", "method": "hybrid", "top_k": 5, "lang": "en"})
    assert body == {"query": "q", "options": {"mode": "hybrid", "k": 5, "language": "en"}}


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/a\x01b", "http://127.0.0.1:9/a\tb", "http://127.0.0.1:9/a\nb",
                                 "http://127.0.0.1:9/a\x7fb", "http://127.0.0.1:9/a\x85b", "http://127.0.0.1:99999/",
                                 "http://127.0.0.1:abc/", "http://[::1/"])
def test_a_target_url_the_client_would_refuse_or_rewrite_is_refused_when_read(url):
    """A control character (tab and newline included: a client drops them, so another URL would be
    asked), a port out of range or an unparsable host is a settings error, never a mid-run crash."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="target url"):
        TargetSpec(url=url)
    with pytest.raises(ValidationError, match="endpoint"):
        TargetSpec(url="http://127.0.0.1:9", query_path="/query\x01")


@pytest.mark.parametrize("field,value", [("timeout", float("inf")), ("timeout", float("nan")), ("timeout", 1e9),
                                         ("backoff", float("inf")), ("flush_seconds", float("inf")),
                                         ("max_response_mb", float("inf"))])
def test_time_and_size_settings_are_finite_and_bounded(field, value):
    """`--timeout inf` waited forever; every float setting of a run is finite and bounded."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=field):
        EvalConfig(target="http://127.0.0.1:9", **{field: value})
