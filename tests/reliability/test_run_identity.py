"""A run is counted once (issue 34, item 4).

`cp -r <store>/RUN <store>/RUN.bak` made `export RUN` return every row four times, `runs`
count its answers twice and `show` list every metric twice, while `store check` was clean: the
views keyed on the run id read from the data, and the copy's data says RUN.

Now a run is its folder. A folder whose run.json names another run (a copy, a renamed folder,
an edited run.json), whose pointer was written for another folder, or that is a link, is a
damaged run: listed apart, never merged into another run's numbers, refused by writers, named
by `store check`. Readers take each row's run_id from the folder its file lies in, so even a
copy edited to look whole (run.json and pointer both rewritten) counts as itself, once. The
same on object storage (a copied prefix).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import MetricValue
from evalcore.store import RunStore, RunWriter, query_df
from evalcore.store.layout import RunDamaged
from tests.store_trees import is_listing_cache

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _main(root, *args) -> subprocess.CompletedProcess:
    """The real console entry point (its one-line error handling), in a child process."""
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, "--store", str(root), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The example run, scored with token_f1: built once, copied by each test."""
    root = tmp_path_factory.mktemp("template") / "runs"
    res = _cli(root, "import", "--example")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    res = _cli(root, "score", run_id, "-m", "token_f1", "--no-progress")
    assert res.exit_code == 0, res.output
    return root


@pytest.fixture
def store(template, tmp_path) -> RunStore:
    root = tmp_path / "runs"
    shutil.copytree(template, root, symlinks=True)
    return RunStore(root)


def _numbers(store: RunStore) -> dict:
    """What readers count per run: rows of each table, answers in the summary, metric means."""
    out = {}
    for table in ("questions", "responses", "metrics", "metric_wide", "summary_metrics"):
        df = query_df(store, f"SELECT run_id, count(*) AS n FROM {table} GROUP BY run_id")
        out[table] = dict(zip(df.run_id, df.n))
    df = query_df(store, "SELECT run_id, sum(n_responses) AS n FROM summary_responses GROUP BY run_id")
    out["answers"] = dict(zip(df.run_id, df.n))
    df = query_df(store, "SELECT run_id, method, metric, mean FROM summary_metrics ORDER BY ALL")
    out["means"] = sorted(map(tuple, df.itertuples(index=False)))
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not is_listing_cache(p, folder)}


def _damaged(store: RunStore) -> dict[str, str]:
    from evalcore.analysis.read.damage import damaged_runs

    return dict(zip(*[damaged_runs(store)[c] for c in ("run_id", "reason")]))


def test_cli_a_copied_run_folder_is_counted_once(store):
    """The issue's case, through the CLI: export, runs, show and store check after `cp -r`."""
    (run_id,) = store.run_ids()
    exported = _cli(store.root, "export", run_id, "--format", "json")
    shown = _cli(store.root, "show", run_id, "--json")
    assert exported.exit_code == 0 and shown.exit_code == 0
    rows = json.loads(exported.stdout)
    metrics = [(m["method"], m["metric"]) for m in json.loads(shown.stdout)["metrics"]]
    assert len(metrics) == len(set(metrics))
    before = _numbers(store)

    copy = f"{run_id}.bak"
    shutil.copytree(store.root / run_id, store.root / copy)
    copied = _files(store.root / copy)

    again = _cli(store.root, "export", run_id, "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout) == rows
    shown_again = _cli(store.root, "show", run_id, "--json")
    assert [(m["method"], m["metric"]) for m in json.loads(shown_again.stdout)["metrics"]] == metrics
    assert _numbers(store) == before
    listed = _cli(store.root, "runs", "--json")
    assert listed.exit_code == 0
    overview = json.loads(listed.stdout)
    assert [r["run_id"] for r in overview] == [run_id]
    assert overview[0]["n_responses"] == before["answers"][run_id]
    assert f"damaged run {copy}" in _cli(store.root, "runs").stdout
    check = _cli(store.root, "store", "check")
    assert check.exit_code == 1, check.output
    assert f"DAMAGED {copy}: run.json says it is run '{run_id}'" in check.stdout and "1 damaged" in check.stdout
    assert f"DAMAGED {run_id}:" not in check.stdout
    for args in (("show", copy), ("export", copy), ("score", copy, "-m", "token_f1")):
        res = _cli(store.root, *args)
        assert isinstance(res.exception, RunDamaged), (args, res.output)
    proc = _main(store.root, "score", copy, "-m", "token_f1")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: run {copy} is damaged: run.json says it is run '{run_id}'")
    assert _files(store.root / copy) == copied  # writers touched nothing


def _copy_as(store: RunStore, run_id: str, new: str, *, manifest: bool = False, pointer: str = "keep") -> Path:
    """Copy a run folder to `new`; with `manifest` its run.json is edited to say `new`; the
    pointer's run_id is kept, rewritten to `new`, or dropped (as an older evalcore wrote it)."""
    folder = store.root / new
    shutil.copytree(store.root / run_id, folder)
    if manifest:
        data = json.loads((folder / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps(data | {"run_id": new}))
    if pointer != "keep":
        data = json.loads((folder / "tables.json").read_text())
        data.pop("run_id", None)
        if pointer == "edit":
            data["run_id"] = new
        (folder / "tables.json").write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("variant", ["copy", "copy-valid-id", "renamed", "edited-run-json", "link"])
def test_a_folder_that_is_not_the_run_it_names_is_damaged_and_counted_nowhere(store, variant):
    (run_id,) = store.run_ids()
    before = _numbers(store)
    other = {"copy": f"{run_id}.bak", "copy-valid-id": "copy-1", "renamed": "renamed-run",
             "edited-run-json": "copy-2", "link": "link-run"}[variant]
    if variant == "renamed":
        os.rename(store.root / run_id, store.root / other)
    elif variant == "link":
        (store.root / other).symlink_to(store.root / run_id, target_is_directory=True)
    else:
        _copy_as(store, run_id, other, manifest=variant == "edited-run-json")
    damaged = _damaged(store)
    assert list(damaged) == [other], damaged
    numbers = _numbers(store)
    if variant == "renamed":  # the run it was is gone; the folder holding it is not that run
        assert all(not counts for key, counts in numbers.items() if key != "means") and not numbers["means"]
    else:
        assert numbers == before
    (check,) = store.check([other])
    assert check.damaged, check.damage
    assert any(w in " ".join(check.damage) for w in ("copied or renamed", "symbolic link")), check.damage
    if variant != "edited-run-json":  # its run.json agrees with its folder; its pointer does not
        with pytest.raises(RunDamaged):
            store.manifest(other)
    with pytest.raises(RunDamaged):
        query_df(store, "SELECT count(*) FROM metrics", runs=[other])
    with pytest.raises(RunDamaged):
        store.open_run(other).publish()
    if variant != "edited-run-json":
        assert [m.run_id for m in store.manifests()] == ([] if variant == "renamed" else [run_id])


@pytest.mark.parametrize("pointer", ["edit", "drop"])
def test_a_copy_edited_to_look_whole_counts_as_itself_once(store, pointer):
    """run.json and the pointer both rewritten to the copy's name (or a pointer from before
    pointers named their run): its rows still carry the original's id. Readers key on the
    folder, so the original's numbers are untouched and the copy counts once, as itself;
    `store check` names the rows, and a writer refuses to merge them."""
    (run_id,) = store.run_ids()
    before = _numbers(store)
    _copy_as(store, run_id, "look-alike", manifest=True, pointer=pointer)
    assert _damaged(store) == {}
    numbers = _numbers(store)
    for table in ("questions", "responses", "metrics", "metric_wide", "summary_metrics", "answers"):
        assert numbers[table] == {run_id: before[table][run_id], "look-alike": before[table][run_id]}, table
    mine = [m for m in numbers["means"] if m[0] == run_id]
    assert mine == before["means"]
    (check,) = store.check(["look-alike"])
    assert any(f"holds rows of run '{run_id}'" in d for d in check.damage), check.damage
    assert not store.check([run_id])[0].damaged
    # refused as `store check` names it (store/run_damage.py), before a writer touches anything
    with pytest.raises(RunDamaged, match=f"holds rows of run '{run_id}'"):
        store.open_run("look-alike")
    writer = RunWriter("look-alike", store.run_dir("look-alike"))
    writer.write_metrics([MetricValue(run_id="look-alike", method="basic_search", question_id="q1", metric="token_f1",
                                      value=0.5, group="lexical")])
    with pytest.raises(RunDamaged, match=f"holds rows of run '{run_id}'"):
        writer.publish()
    assert _numbers(store) == numbers


def test_run_id_comes_from_the_folder_in_every_view(store):
    """Even where the stored column says otherwise (a file of rows put in by hand)."""
    (run_id,) = store.run_ids()
    _copy_as(store, run_id, "look-alike", manifest=True, pointer="edit")
    for table in ("questions", "responses", "metrics", "claims", "context_verdicts", "judge_calls", "metric_wide",
                  "summary_metrics", "summary_responses", "summary_judges", "summary_labels"):
        got = set(query_df(store, f"SELECT DISTINCT run_id FROM {table}").run_id)
        assert got <= {run_id, "look-alike"}, table
        only = query_df(store, f"SELECT DISTINCT run_id FROM {table}", runs=["look-alike"])
        assert set(only.run_id) <= {"look-alike"}, table


def test_s3_a_copied_prefix_is_damaged_and_counted_once(s3_store):
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    from evalcore.store import FORMAT_VERSION, s3

    writer = s3_store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="r1",
                                             evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(3)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(3)])
    writer.write_metrics([MetricValue(run_id="r1", method="a", question_id=f"q{i}", metric="m", value=i / 2,
                                      group="g") for i in range(3)])
    writer.publish()
    before = _numbers(s3_store)
    fs, bucket = s3.filesystem(), s3_store.root.bucket
    for name, run_json in (("r1.bak", None), ("r1-copy", "r1-copy")):
        for key in fs.find(f"{bucket}/runs/r1/"):
            fs.copy(key, key.replace("/runs/r1/", f"/runs/{name}/"))
        if run_json:
            path = s3_store.root / name / "run.json"
            path.write_bytes(json.dumps(json.loads(path.read_bytes()) | {"run_id": run_json}).encode())
    assert _numbers(s3_store) == before
    assert sorted(_damaged(s3_store)) == ["r1-copy", "r1.bak"]
    checks = {c.run_id: c for c in s3_store.check()}
    assert not checks["r1"].damaged and checks["r1.bak"].damaged and checks["r1-copy"].damaged
    with pytest.raises(StoreError):
        s3_store.open_run("r1.bak").publish()
