"""The run store on S3-compatible object storage (moto's server on 127.0.0.1).

tests/test_store.py and tests/reliability/test_concurrency.py run their whole suites on S3 as
well; here is what only object storage has: the CLI end to end giving the same numbers as a
local store, the dashboard reading a bucket, conditional writes that hold even without the
locks, lease locks, staging sweeps, and one-line errors for a bad bucket, missing credentials
or an unreachable endpoint.
"""

from __future__ import annotations

import json
import threading
from contextlib import nullcontext

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app, main
from evalcore.errors import StoreError
from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore

from tests.s3server import new_bucket

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _manifest(run_id="r1"):
    return RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name="n", evalcore_version="test", methods=["a"])


def _without_ids(rows):
    return [{k: v for k, v in r.items() if k not in ("run_id",)} for r in rows]


def test_cli_import_score_show_compare_export_match_a_local_store(s3_store, tmp_path):
    """Every read command gives the same numbers from a bucket as from a folder."""
    outputs = {}
    for name, root in (("local", tmp_path / "runs"), ("s3", s3_store.root)):
        res = _cli(root, "import", "--example")
        assert res.exit_code == 0, res.output
        run_id = res.stdout.strip().splitlines()[-1]
        assert _cli(root, "score", run_id, "--groups", "lexical", "--no-progress").exit_code == 0
        runs = json.loads(_cli(root, "runs", "--json").stdout)
        shown = json.loads(_cli(root, "show", run_id, "--json").stdout)
        compared = _cli(root, "compare", f"{run_id}:basic_search", f"{run_id}:local_search",
                        "--metrics", "token_f1,squad_em", "--json")
        assert compared.exit_code == 0, compared.output
        exported = json.loads(_cli(root, "export", run_id, "--format", "json").stdout)
        outputs[name] = {
            "runs": [(r["n_questions"], r["n_responses"], r["methods"]) for r in runs],
            "metrics": shown.get("metrics"),
            "compare": json.loads(compared.stdout.replace(run_id, "RUN")),
            "export": _without_ids(exported["rows"]),
        }
        outputs[name]["metrics"] = json.loads(json.dumps(outputs[name]["metrics"]).replace(run_id, "RUN"))
    assert outputs["s3"]["export"] and len(outputs["s3"]["export"]) == 12
    assert outputs["s3"] == outputs["local"]
    # and the run really lives in the bucket: its manifest, pointer and canonical files
    run_id = s3_store.run_ids()[0]
    run_dir = s3_store.root / run_id
    assert (run_dir / "run.json").is_file() and (run_dir / "tables.json").is_file()
    assert {p.name.split("-g")[0] for p in (run_dir / "data").iterdir()} >= {"questions", "responses", "metrics"}
    assert _cli(s3_store.root, "delete", run_id, "--yes").exit_code == 0
    assert s3_store.run_ids() == [] and not run_dir.exists()


def test_dashboard_pages_read_a_bucket(s3_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from evalcore.demo.synthetic import build_store
    from tests.app.conftest import ROOT

    build_store(str(s3_store.root), n_runs=2, n_questions=8, judge_calls=True)
    monkeypatch.setenv("EVALCORE_STORE", str(s3_store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert set(at.dataframe[0].value["run_id"]) >= set(s3_store.run_ids())
    for page in ("questions", "compare", "charts", "annotate"):
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, at.exception)


def test_a_manifest_edit_racing_another_is_not_lost_even_without_the_lock(s3_store, monkeypatch):
    """The lease lock is one guard; the conditional PUT of run.json is the other. With the lock
    switched off, writer B edits run.json between writer A's read and A's write: A's PUT finds
    run.json changed, so A re-reads and re-applies its edit, and both notes survive."""
    from evalcore.store.writer import RunWriter

    s3_store.create_run(_manifest())
    monkeypatch.setattr(RunWriter, "manifest_lock", lambda self: nullcontext())
    a, b = (RunStore(s3_store.root).open_run("r1") for _ in range(2))
    calls = []

    def edit_a(m):
        calls.append(len(m.notes))
        if len(calls) == 1:  # B gets in between A's read and A's write
            b.edit_manifest(lambda mb: {"notes": mb.notes + ["from B"]})
        return {"notes": m.notes + ["from A"]}

    a.edit_manifest(edit_a)
    assert calls == [0, 1]  # A's edit ran again on B's version
    assert a.read_manifest().notes == ["from B", "from A"]


def test_a_compaction_racing_another_loses_no_rows_even_without_the_lock(s3_store, monkeypatch):
    """Compaction A reads the pointer; meanwhile compaction B publishes a part A never saw.
    A's pointer PUT then fails (the pointer changed), A starts over from B's pointer, and the
    rows B published are still there at the end."""
    from evalcore.store import compaction

    monkeypatch.setattr(compaction, "_locked", lambda run_dir: nullcontext())
    writer = s3_store.create_run(_manifest())
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="first")])
    real = compaction._finish_previous
    raced = []

    def finish_then_race(run_dir, pointer):
        done = real(run_dir, pointer)
        if not raced:
            raced.append(True)
            writer.write_responses([EvalResponse(question_id="q2", method="a", answer="written meanwhile")])
            compaction.compact(run_dir)  # B: absorbs (and removes) both parts, publishes
        return done

    monkeypatch.setattr(compaction, "_finish_previous", finish_then_race)
    writer.publish()  # A
    pointer = json.loads((writer.dir / "tables.json").read_text())
    assert raced and pointer["rows"]["responses"] == 2
    from evalcore.store import query_df

    got = query_df(s3_store, "SELECT question_id, answer FROM responses ORDER BY question_id")
    assert got["answer"].tolist() == ["first", "written meanwhile"]


def test_a_stale_pointer_write_is_refused(s3_store):
    from evalcore.store.fs import Conflict
    from evalcore.store.layout import read_pointer_versioned, write_pointer

    writer = s3_store.create_run(_manifest())
    run_dir = writer.dir
    pointer, token = read_pointer_versioned(run_dir)
    writer.write_questions([EvalQuestion(id="q1", question="Q?")])
    writer.publish()  # a newer pointer
    with pytest.raises(Conflict):
        write_pointer(run_dir, pointer, token)  # what a compactor that lost its lease would do
    assert read_pointer_versioned(run_dir)[0]["generation"] == 1


def test_lease_lock_excludes_and_a_dead_holders_lease_is_taken_over(s3_store):
    from evalcore.store.lease import acquire, holder, lease_lock

    lock = s3_store.root / "lock-test" / ".compact.lock"
    with lease_lock(lock):
        info, _ = holder(lock)
        assert info is not None and info["expires"] > 0
        with pytest.raises(StoreError, match="still locked"):
            acquire(lock, "someone-else", wait_s=0)
    assert holder(lock) == (None, None)  # released
    lock.write_text(json.dumps({"owner": "dead", "expires": 0}))  # a holder that died
    etag = acquire(lock, "me", wait_s=0)
    assert holder(lock)[0]["owner"] == "me" and etag


def test_staging_left_by_a_dead_import_is_swept_and_a_live_one_kept(s3_store):
    from evalcore.store import remote_staging

    s3_store.create_run(_manifest("keep"))
    dead = s3_store.root / ".staging" / "dead-run"
    (dead / "parts" / "questions" / "part-1.parquet").write_bytes(b"x" * 10)
    (dead / ".writer.lock").write_text(json.dumps({"owner": "gone", "expires": 0}))
    live = s3_store.root / ".staging" / "live-run"
    with remote_staging.writer_lease(live):
        (live / "run.json").write_text("{}")
        kept = []
        assert [r.path.name for r in s3_store.clean_staging(dry_run=True)] == ["dead-run"]
        removed = s3_store.clean_staging(kept=kept)
        assert [r.path.name for r in removed] == ["dead-run"] and [k.name for k in kept] == ["live-run"]
    assert not dead.exists() and (live / "run.json").is_file()
    assert s3_store.run_ids() == ["keep"]


def test_embedding_caches_and_app_files_stay_on_this_machine(s3_store, tmp_path):
    local = s3_store.local_shared_dir("embeddings")
    assert str(local).startswith(str(tmp_path / "cache")) and "s3:" not in str(local)
    assert str(s3_store.shared_dir("judge_cache")).startswith("s3://")


@pytest.mark.parametrize("case", ["no bucket", "no credentials", "unreachable"])
def test_errors_are_one_line_naming_the_store(s3_env, monkeypatch, capsys, case, tmp_path):
    from evalcore.store import s3

    bucket = new_bucket(s3_env)
    url = f"s3://{bucket}/runs"
    if case == "no bucket":
        url = "s3://evalcore-no-such-bucket/runs"
        expected = "the bucket does not exist"
    elif case == "no credentials":
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(name)
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws either
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        expected = "no AWS credentials"
    else:
        from tests.s3server import _free_port

        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")  # nobody listens
        expected = "cannot reach the S3 endpoint"
    s3.reset()
    monkeypatch.setattr("sys.argv", ["evalcore", "--store", url, "runs"])
    with pytest.raises(SystemExit) as info:
        main()
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: s3://") and expected in err, err


def test_credentials_in_the_url_are_refused():
    with pytest.raises(StoreError, match="must not carry credentials"):
        RunStore("s3://AKIAXXXX:secret@bucket/runs")
