"""Secrets never reach disk, logs, manifests, exports or the UI.

One full run with canaries: a target config whose header takes a canary secret from an
environment variable, scoring with an openai judge whose OPENAI_API_KEY is a canary (both
against scripted servers on 127.0.0.1), `evalcore show` and `evalcore export` in every
format, and every app page rendered via AppTest. Then EVERYTHING written (every file under
the temporary folder, Parquet decoded too), every log record and every CLI/page output is
searched for the canaries. The servers must have received the canaries: otherwise the
search would prove nothing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.outputs.export import FORMATS
from evalcore.store import RunStore
from evalcore.ui.entry import PAGES as ENTRY_PAGES

from .servers import Fault, ScriptedServer, api_of, llm_completion, rag_answer

ROOT = Path(__file__).resolve().parents[2]
HEADER_CANARY = "hdr-CANARY-91c2e7aa"
KEY_CANARY = "sk-CANARY-openai-4d1f0b"
AWS_KEY_CANARY = "AKIACANARY7E1D0B2C9F"
AWS_SECRET_CANARY = "aws-secret-CANARY-0c4b9e77d1"
AWS_TOKEN_CANARY = "aws-session-CANARY-5a8f3e"
PAGES = [module for module, _, _ in ENTRY_PAGES]  # the one page list: evalcore.ui.entry.PAGES


def _judge_reply(request: dict) -> Fault:
    """A well-behaved judge for the tasks used here (answer_class and faithfulness)."""
    body = request["body"]
    system = body["messages"][0]["content"]
    if "rewrite texts as lists" in system:
        out = {"answer_claims": ["The answer restates the question."], "ground_truth_statements": ["x"]}
    elif "check statements against" in system:
        out = {"claims": [{"i": 1, "verdict": 1, "context": 1, "reason": "stated"}],
               "statements": [{"i": 1, "verdict": 0, "context": None, "reason": "absent"}]}
    else:
        out = {"label": "CORRECT", "reason": "same fact"}
    return llm_completion(api_of(request["path"]), body.get("model", "m"), json.dumps(out))


def everything_in_bucket(store) -> str:
    """Every object of an s3:// store as text, Parquet decoded too."""
    import io

    chunks = []
    for path, _ in store.root.walk_files():
        data = path.read_bytes()
        chunks.append(data.decode("utf-8", "replace"))
        if path.suffix == ".parquet":
            chunks.append(json.dumps(pq.read_table(io.BytesIO(data)).to_pylist(), default=str))
    return "\n".join(chunks)


def everything_written(root: Path) -> str:
    """Every file under `root` as text: raw bytes and, for Parquet, the decoded rows."""
    chunks = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        chunks.append(path.read_bytes().decode("utf-8", "replace"))
        if path.suffix == ".parquet":
            chunks.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
    return "\n".join(chunks)


def app_text(at) -> str:
    """Every rendered element's protobuf, as text (dataframes included as Arrow bytes)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def render_pages(store_root: Path, run_id: str, monkeypatch) -> str:
    from streamlit.testing.v1 import AppTest


    monkeypatch.setenv("EVALCORE_STORE", str(store_root))
    texts = []
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()
        if page != "runs":
            at.switch_page(f"pages/{page}.py")
            at.query_params.update({"run": run_id})
            at.run()
        assert not at.exception, (page, at.exception)
        texts.append(app_text(at))
    return "\n".join(texts)


@pytest.fixture
def servers():
    rag = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    llm = ScriptedServer(_judge_reply, key=lambda r: r["path"]).start()
    yield rag, llm
    rag.stop()
    llm.stop()


@pytest.fixture(params=["local", "s3"])
def store_root(request, tmp_path, monkeypatch):
    """A local store, or one on S3-compatible storage whose credentials are canaries too."""
    if request.param == "local":
        return tmp_path / "runs"
    from evalcore.store import s3

    root = request.getfixturevalue("s3_store").root  # its bucket made with the test credentials
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_CANARY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_CANARY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_TOKEN_CANARY)
    s3.reset()
    return str(root)


def test_canaries_never_leave_memory(servers, tmp_path, monkeypatch, caplog, store_root):
    rag, llm = servers
    monkeypatch.setenv("RAG_TOKEN_FOR_TEST", HEADER_CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_CANARY)
    monkeypatch.setenv("OPENAI_LOG", "debug")
    caplog.set_level(logging.DEBUG)
    work = tmp_path / "work"
    work.mkdir()
    (work / "q.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": f"question {i}?", "ground_truth": f"answer to question {i}?"}) + "\n"
        for i in range(3)))
    (work / "eval.yaml").write_text(f"""
name: canary
dataset: q.jsonl
targets:
  rag:
    url: {rag.url}
    headers:
      Authorization: "Bearer ${{RAG_TOKEN_FOR_TEST}}"
      X-Api-Key: "${{RAG_TOKEN_FOR_TEST}}"
methods: [{{name: alpha, target: rag}}]
concurrency: 2
metrics: [answer_class, faithfulness, token_f1]
judge: "openai:gpt-4o-mini@{llm.url}/v1"
progress: false
""")
    root = store_root
    cli = CliRunner()
    outputs = []
    res = cli.invoke(app, ["--store", str(root), "run", "--config", str(work / "eval.yaml")])
    outputs.append(res.output)
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    # the canaries did go out, to the servers that needed them
    assert all(r["headers"].get("x-api-key") == HEADER_CANARY for r in rag.requests)
    assert any(r["headers"].get("authorization") == f"Bearer {KEY_CANARY}" for r in llm.requests)
    for args in (["show", run_id], ["show", run_id, "--json"], ["runs", "--json"]):
        res = cli.invoke(app, ["--store", str(root), *args])
        assert res.exit_code == 0, res.output
        outputs.append(res.output)
    exports = tmp_path / "exports"
    exports.mkdir()
    for fmt in FORMATS:
        res = cli.invoke(app, ["--store", str(root), "export", run_id, "-f", fmt, "-o", str(exports / f"x.{fmt}")])
        assert res.exit_code == 0, res.output
        if fmt != "parquet":
            outputs.append(cli.invoke(app, ["--store", str(root), "export", run_id, "-f", fmt]).output)
    pages = render_pages(root, run_id, monkeypatch)
    assert run_id in pages  # the pages did render this run
    written = everything_written(tmp_path)
    store = RunStore(root)
    if store.remote:  # the bucket too, and the credentials did sign every request
        import boto3

        assert boto3.Session().get_credentials().secret_key == AWS_SECRET_CANARY
        written += everything_in_bucket(store)
        outputs.append(cli.invoke(app, ["--store", str(root).replace("s3://", "s3://no-such-"), "runs"]).output)
    assert "judge_calls" in written and "question 1?" in written  # scoring and export did write
    haystacks = {"files": written, "logs": caplog.text, "cli": "\n".join(outputs), "pages": pages}
    for where, text in haystacks.items():
        for canary in (HEADER_CANARY, KEY_CANARY, AWS_KEY_CANARY, AWS_SECRET_CANARY, AWS_TOKEN_CANARY, "CANARY"):
            assert canary not in text, f"{canary!r} found in {where}"
    manifest = json.loads((store.root / run_id / "run.json").read_text())
    headers = manifest["config"]["targets"]["rag"]["headers"]
    assert headers["X-Api-Key"] == "${RAG_TOKEN_FOR_TEST}"  # the template, never the value
