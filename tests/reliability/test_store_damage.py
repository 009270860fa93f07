"""Damage stays inside its run, and no writer deletes what it cannot account for (issue 22,
items 1 and 2).

- A missing or unreadable tables.json is a damaged run: readers say so in one line, writers
  (compaction, score, resume) refuse it and delete nothing; `store repair` rebuilds the pointer
  from the newest readable generation of each table in data/.
- The compaction sweep removes only files a readable pointer accounts for.
- One unreadable canonical file: every other run reads and renders normally; the damaged run is
  listed as damaged (file named), and its own commands say so in one line, exit non-zero.
- Garbage or 0-byte part files are set aside in quarantine/ with one warning; `store clean` and
  `store check` report them.
The rules that hold on a folder hold on object storage (moto on 127.0.0.1) as well.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, open_db, query_df
from evalcore.store.layout import RunDamaged

runner = CliRunner()


@pytest.fixture(params=["local", "s3"])
def any_store(request, tmp_path):
    if request.param == "s3":
        return request.getfixturevalue("s3_store")
    return RunStore(tmp_path / "runs")


def _run(store: RunStore, run_id: str, rescore: bool = True) -> None:
    """A run of 3 answers, scored once (generation 1), and with `rescore` scored again (2)."""
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(3)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(3)])
    writer.write_metrics([_value(run_id, i, 0.25) for i in range(3)])
    writer.publish()
    if rescore:
        writer.write_metrics([_value(run_id, i, 0.5) for i in range(3)])
        writer.publish()


def _value(run_id: str, i: int, value: float) -> MetricValue:
    return MetricValue(run_id=run_id, method="a", question_id=f"q{i}", metric="m", value=value, group="g")


def _means(store: RunStore, run_id: str) -> tuple[int, float]:
    df = query_df(store, "SELECT count(*) AS n, avg(value) AS v FROM metrics WHERE run_id = ?", [run_id],
                  runs=[run_id])
    return int(df.n[0]), float(df.v[0])


def _data(store: RunStore, run_id: str) -> set[str]:
    return {p.name for p in (store.run_dir(run_id) / "data").iterdir()}


def _pointer(store: RunStore, run_id: str) -> dict:
    return json.loads((store.run_dir(run_id) / "tables.json").read_text())


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def figure(name: str, value) -> None:
    """Hand a measured figure to bench/reliability_campaign.py (when it is the caller)."""
    target = os.environ.get("EVALCORE_CAMPAIGN_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": value}) + "\n")


def _truncate(path, size: int = 100) -> None:
    path.write_bytes(path.read_bytes()[:size])


# ---- item 1: a missing pointer --------------------------------------------------------------
def test_a_missing_pointer_refuses_writers_and_deletes_nothing(any_store):
    store = any_store
    _run(store, "r1")
    before = _data(store, "r1")
    (store.run_dir("r1") / "tables.json").unlink()
    for action in (lambda: store.compact("r1"), lambda: store.open_run("r1"),
                   lambda: query_df(store, "SELECT count(*) FROM metrics", runs=["r1"])):
        with pytest.raises(RunDamaged) as info:
            action()
        assert "tables.json is missing" in str(info.value) and "store repair r1" in str(info.value)
        assert "\n" not in str(info.value)
    assert _data(store, "r1") == before
    # readers of every run leave it out and list it as damaged, instead of showing it empty
    with open_db(store) as con:
        assert con.execute("SELECT run_id FROM runs").fetchall() == []
        assert con.execute("SELECT run_id FROM damaged_runs").fetchall() == [("r1",)]


@pytest.mark.parametrize("text", ["{not json", "{}", '{"files": {}}',
                                  '{"files": {"metrics": "../x"}, "generation": 1}'])
def test_an_unreadable_pointer_is_damage_too(store_local, text):
    store = store_local
    _run(store, "r1")
    before = _data(store, "r1")
    (store.run_dir("r1") / "tables.json").write_text(text)
    with pytest.raises(RunDamaged, match="store repair r1"):
        store.compact("r1")
    assert _data(store, "r1") == before


@pytest.fixture
def store_local(tmp_path):
    return RunStore(tmp_path / "runs")


def test_cli_missing_pointer_reproduction(tmp_path, console):
    """The issue's reproduction: import + score, rm tables.json, score again. Today's answer was
    "has no answers to score" with 12 of 16 files deleted; now one line, and nothing deleted."""
    root = tmp_path / "runs"
    res = _cli(root, "import", "--example")
    run_id = res.stdout.strip().splitlines()[-1]
    assert _cli(root, "score", run_id, "--groups", "lexical", "--no-progress").exit_code == 0
    run_dir = root / run_id
    before = sorted(p.name for p in (run_dir / "data").iterdir())
    (run_dir / "tables.json").unlink()
    for args in (("score", run_id, "--groups", "lexical", "--no-progress"), ("show", run_id),
                 ("export", run_id, "--format", "json")):
        proc = console("--store", root, *args)
        assert proc.returncode != 0, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "damaged" in lines[0] and f"store repair {run_id}" in lines[0], (args, proc.stderr)
    after = sorted(p.name for p in (run_dir / "data").iterdir())
    figure("damage_missing_pointer_data_files", f"{len(before)} before, {len(after)} after score/show/export "
                                                f"of a run without tables.json (each refused in one line)")
    assert after == before
    listed = _cli(root, "runs")
    assert listed.exit_code == 0 and f"damaged run {run_id}" in listed.stdout
    check = _cli(root, "store", "check")
    assert check.exit_code == 1 and f"DAMAGED {run_id}" in check.stdout
    repair = _cli(root, "store", "repair", run_id)
    assert repair.exit_code == 0, repair.output
    assert "rebuilt tables.json" in repair.stdout and "metrics: data/metrics-g" in repair.stdout
    assert _cli(root, "store", "check").exit_code == 0
    shown = _cli(root, "show", run_id, "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["metrics"]
    figure("damage_repair", repair.stdout.strip().splitlines()[0])


def test_repair_rebuilds_from_the_newest_generation(any_store):
    store = any_store
    _run(store, "r1")
    _run(store, "r2")
    expected = _means(store, "r1")
    generation = _pointer(store, "r1")["generation"]
    (store.run_dir("r1") / "tables.json").unlink()
    report = store.repair("r1")
    assert report.needed and report.generation == generation and not report.lost
    assert report.chosen["metrics"].startswith(f"data/metrics-g{generation}-")
    assert _means(store, "r1") == expected == (3, 0.5)
    assert not any(c.damaged for c in store.check())
    assert not store.repair("r2").needed  # a healthy run is left alone


def test_repair_skips_an_unreadable_newest_generation_and_keeps_it(store_local):
    store = store_local
    _run(store, "r1")  # metrics g1 (0.25), retired but still on disk, and g2 (0.5)
    newest = _pointer(store, "r1")["files"]["metrics"]
    _truncate(store.run_dir("r1") / newest)
    (store.run_dir("r1") / "tables.json").unlink()
    report = store.repair("r1")
    assert any(newest in s and "left in place" in s for s in report.skipped)
    assert report.chosen["metrics"].startswith("data/metrics-g1-")
    assert _means(store, "r1") == (3, 0.25)
    assert (store.run_dir("r1") / newest).exists()  # never deleted: no pointer accounts for it
    writer = store.open_run("r1")  # a later write sweeps; the damaged file stays
    writer.write_metrics([_value("r1", 0, 1.0)])
    writer.publish()
    assert (store.run_dir("r1") / newest).exists()
    assert any(newest in s for c in store.check(["r1"]) for s in c.strays)


# ---- the sweep rule ---------------------------------------------------------------------------
def test_the_sweep_deletes_only_what_a_readable_pointer_accounts_for(any_store):
    store = any_store
    _run(store, "r1", rescore=False)
    run_dir = store.run_dir("r1")
    generation = _pointer(store, "r1")["generation"]
    current = run_dir / _pointer(store, "r1")["files"]["metrics"]
    unknown = run_dir / "data" / "metrics-g1-0badc0de.parquet"  # named by no pointer: kept
    leftover = run_dir / "data" / f"metrics-g{generation + 1}-0dead0ff.parquet"  # an unpublished compaction's
    for path in (unknown, leftover):
        path.write_bytes(current.read_bytes())
    writer = store.open_run("r1")
    writer.write_metrics([_value("r1", 0, 1.0)])
    writer.publish()
    assert unknown.exists() and not leftover.exists()
    strays = [s for c in store.check(["r1"]) for s in c.strays]
    assert any(unknown.name in s and "named by no pointer" in s for s in strays)


# ---- item 2: one damaged file ------------------------------------------------------------------
def test_one_truncated_file_stays_inside_its_run(any_store):
    store = any_store
    _run(store, "good")
    _run(store, "bad")
    damaged = _pointer(store, "bad")["files"]["metrics"]
    _truncate(store.run_dir("bad") / damaged)
    assert _means(store, "good") == (3, 0.5)
    df = query_df(store, "SELECT run_id, count(*) AS n FROM metrics GROUP BY run_id")
    assert df.to_dict("records") == [{"run_id": "good", "n": 3}]
    with open_db(store) as con:
        assert [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()] == ["good"]
        row = con.execute("SELECT run_id, file, reason FROM damaged_runs").fetchall()
    assert row[0][:2] == ("bad", damaged) and damaged in row[0][2]
    with pytest.raises(RunDamaged, match=damaged.replace(".", r"\.")):
        _means(store, "bad")
    with pytest.raises(StoreError, match="damaged"):  # a writer refuses it too: nothing rewritten
        writer = store.open_run("bad")
        writer.write_metrics([_value("bad", 0, 1.0)])
        writer.publish()
    assert (store.run_dir("bad") / damaged).exists()
    checks = {c.run_id: c for c in store.check()}
    assert not checks["good"].damaged and any(damaged in d for d in checks["bad"].damage)


def test_cli_one_truncated_file_only_its_own_commands_fail(tmp_path, console):
    root = tmp_path / "runs"
    ids = []
    for name in ("a", "b"):
        res = _cli(root, "import", "--example", "--name", name)
        ids.append(res.stdout.strip().splitlines()[-1])
        assert _cli(root, "score", ids[-1], "--groups", "lexical", "--no-progress").exit_code == 0
    good, bad = ids
    damaged = json.loads((root / bad / "tables.json").read_text())["files"]["metrics"]
    _truncate(root / bad / damaged)
    listed = console("--store", root, "runs")
    assert listed.returncode == 0 and good in listed.stdout
    assert f"damaged run {bad}" in listed.stdout and damaged in listed.stdout
    assert json.loads(_cli(root, "runs", "--json").stdout)[0]["run_id"] == good
    for args in (("show", good), ("export", good, "--format", "json"),
                 ("compare", f"{good}:basic_search", f"{good}:local_search", "--metrics", "token_f1"),
                 ("score", good, "--groups", "lexical", "--no-progress")):
        res = _cli(root, *args)
        assert res.exit_code == 0, (args, res.output[-2000:])
    for args in (("show", bad), ("export", bad, "--format", "json"), ("score", bad, "--no-progress"),
                 ("compare", f"{good}:basic_search", f"{bad}:basic_search", "--metrics", "token_f1")):
        proc = console("--store", root, *args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1, (args, proc.stderr[-2000:])
        assert "damaged" in lines[0] and damaged in lines[0]
    check = _cli(root, "store", "check")
    assert check.exit_code == 1 and f"DAMAGED {bad}: {damaged} is unreadable" in check.stdout
    figure("damage_truncated_file", "healthy run: runs/show/export/compare/score exit 0; damaged run: "
                                    "listed as damaged, show/export/score/compare exit non-zero in one line")
    assert _cli(root, "store", "check", good).exit_code == 0


@pytest.mark.parametrize("where, garbage", [("local", b""), ("local", b"not parquet at all"),
                                            ("local", b"PAR1" + b"\0" * 64 + b"PAR1"), ("s3", b"")])
def test_unreadable_parts_are_set_aside_with_one_warning(request, tmp_path, where, garbage, caplog):
    store = request.getfixturevalue("s3_store") if where == "s3" else RunStore(tmp_path / "runs")
    _run(store, "r1", rescore=False)
    run_dir = store.run_dir("r1")
    writer = store.open_run("r1")
    writer.write_metrics([_value("r1", i, 1.0) for i in range(3)])
    for name in ("part-00000000T000000000000-aaaaaaaa.parquet", "part-99999999T999999999999-bbbbbbbb.parquet"):
        (run_dir / "parts" / "metrics" / name).write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="evalcore.store.health"):
        writer.publish()
    warnings = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert len(warnings) == 1 and "set aside 2 part file(s) it cannot absorb" in warnings[0]
    assert _means(store, "r1") == (3, 1.0)  # the readable part was absorbed
    quarantined = sorted(p.name for p, _ in store.quarantined())
    assert quarantined == ["part-00000000T000000000000-aaaaaaaa.parquet", "part-99999999T999999999999-bbbbbbbb.parquet"]
    assert not list((run_dir / "parts" / "metrics").glob("*.parquet"))
    assert not any(c.damaged for c in store.check())  # set aside: the run reads whole
    assert sum("quarantine/parts/metrics" in s for c in store.check() for s in c.strays) == 2


def test_store_clean_reports_quarantined_parts(tmp_path):
    root = tmp_path / "runs"
    store = RunStore(root)
    _run(store, "r1", rescore=False)
    (store.run_dir("r1") / "parts" / "metrics" / "part-0-x.parquet").write_bytes(b"")
    # a real process (the other CLI checks here call the same entry point in this one)
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    score = subprocess.run([sys.executable, "-c", code, "--store", str(root), "score", "r1", "--no-progress",
                            "--metrics", "token_f1"], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "COLUMNS": "200"})
    assert "set aside 1 part file(s) it cannot absorb" in score.stderr and "Traceback" not in score.stderr
    res = _cli(root, "store", "clean")
    assert res.exit_code == 0 and "quarantined" in res.stdout and "part-0-x.parquet" in res.stdout


def test_runs_page_lists_a_damaged_run_apart(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from evalcore.demo.synthetic import build_store
    from evalcore.store.views import forget_connections

    store = build_store(tmp_path / "runs", n_runs=2, n_questions=8, judge_calls=False)
    good, bad = store.run_ids()
    damaged = _pointer(store, bad)["files"]["metrics"]
    _truncate(store.run_dir(bad) / damaged)
    forget_connections()
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    board = next(d.value for d in at.dataframe if "method" in d.value.columns)
    assert set(board.run_id) == {good}
    assert any(t.value.startswith(f"{bad} (") and damaged in t.value for t in at.text)
    for page in ("questions", "compare", "charts", "annotate"):
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
