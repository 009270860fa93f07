"""The store commands end to end through the real CLI app (import, runs, show, export, delete, stats)."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app, main

runner = CliRunner()


def _cli(store_root, *args):
    return runner.invoke(app, ["--store", str(store_root), *args])


def test_example_import_export_every_format(tmp_path):
    root = tmp_path / "runs"
    res = _cli(root, "import", "--example")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    listed = json.loads(_cli(root, "runs", "--json").stdout)
    assert [r["run_id"] for r in listed] == [run_id] and listed[0]["n_responses"] == 12
    shown = json.loads(_cli(root, "show", "latest", "--json").stdout)
    assert shown["manifest"]["methods"] == ["basic_search", "local_search"]

    csv_out = tmp_path / "out.csv"
    assert _cli(root, "export", run_id, "--format", "csv", "-o", str(csv_out)).exit_code == 0
    df = pd.read_csv(csv_out)
    assert len(df) == 12 and {"question", "ground_truth", "answer", "method"} <= set(df.columns)
    js = json.loads(_cli(root, "export", "latest", "--format", "json").stdout)
    assert js["run_id"] == run_id and len(js["rows"]) == 12
    md = _cli(root, "export", "latest", "--format", "md").stdout
    assert md.count("\n| ex-") == 12
    pq_out = tmp_path / "out.parquet"
    assert _cli(root, "export", "latest", "--format", "parquet", "-o", str(pq_out)).exit_code == 0
    assert len(pd.read_parquet(pq_out)) == 12
    assert _cli(root, "delete", run_id, "--yes").exit_code == 0
    assert json.loads(_cli(root, "runs", "--json").stdout) == []


def test_markdown_export_neutralises_untrusted_text(tmp_path):
    root = tmp_path / "runs"
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"question_id": "q", "method": "m", "question": "Q?",
                               "answer": "evil | <img src=x onerror=alert(1)>\n# heading"}) + "\n")
    assert _cli(root, "import", str(src)).exit_code == 0
    md = _cli(root, "export", "latest", "--format", "md").stdout
    assert "<img" not in md and "\\|" in md and "\n# heading" not in md


def test_errors_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q", "method": "m", "question": "Q?", "answer": "a", "latency_ms": -4}\n')
    monkeypatch.setattr("sys.argv", ["evalcore", "--store", str(tmp_path / "runs"), "import", str(bad)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, record 1, field 'latency_ms'" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists() or [p.name for p in (tmp_path / "runs").iterdir()] in ([], [".staging"])


def test_unknown_run_and_bad_format(tmp_path, capsys, monkeypatch):
    for argv, needle in ((["show", "nope"], "no run"), (["export", "../x"], "invalid run id")):
        monkeypatch.setattr("sys.argv", ["evalcore", "--store", str(tmp_path), *argv])
        with pytest.raises(SystemExit):
            main()
        assert needle in capsys.readouterr().err


def test_stats_and_datasets_on_shipped_example(tmp_path):
    from evalcore.cli.transfer_commands import example_files

    _, questions = example_files()
    res = runner.invoke(app, ["stats", str(questions), "--json"])
    assert res.exit_code == 0, res.output
    stats = json.loads(res.stdout)
    assert stats["n_questions"] == 6 and stats["unanswerable"] == 1
    assert stats["by_category"]["single_hop"] == 2
    assert "native" in runner.invoke(app, ["datasets"]).stdout


def test_show_reports_indexing_coverage(tmp_path):
    from evalcore.schemas import RunManifest
    from evalcore.store import FORMAT_VERSION, RunStore

    root = tmp_path / "runs"
    store = RunStore(root)
    store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="live1", name="live1", kind="live",
                                 evalcore_version="t", target_info={"index_stats": {
                                     "docs_processed": 10, "zero_chunk_docs": 1, "chunks": 30}}))
    shown = json.loads(_cli(root, "show", "live1", "--json").stdout)
    assert shown["indexing_coverage"]["default"]["zero_chunk_rate"] == 0.1
    assert "indexing coverage (default)" in _cli(root, "show", "live1").stdout


def test_runs_warns_about_an_unreadable_run(tmp_path):
    root = tmp_path / "runs"
    assert _cli(root, "import", "--example").exit_code == 0
    broken = root / "broken-run"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    res = _cli(root, "runs", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 1
    assert "warning: skipped a run" in res.stderr and "broken-run" in res.stderr
