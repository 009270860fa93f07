"""Format upgrades: a store written by format version 1 stays readable; a newer one is refused.

tests/fixtures/store_v1 was written once by tests/fixtures/make_store_v1.py (the shipped
example imported and scored) and is never regenerated; store_v1.expected.json holds what the
generating code read back. Any later change to the layout, the tables or the manifest must
keep this reading identical, or bump FORMAT_VERSION and teach the reader the old format.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.analysis.runs.leaderboard import runs_overview
from evalcore.analysis.read.results import wide_results
from evalcore.store import open_db
from evalcore.schemas import EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = json.loads((FIXTURES / "store_v1.expected.json").read_text(encoding="utf-8"))


def _maker():
    spec = importlib.util.spec_from_file_location("make_store_v1", FIXTURES / "make_store_v1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def v1(tmp_path) -> Path:
    """A private copy of the fixture store (tests may write to it; the fixture stays intact)."""
    root = tmp_path / "store_v1"
    shutil.copytree(FIXTURES / "store_v1", root)
    return root


def _cli(root: Path, *args: str):
    return CliRunner().invoke(app, ["--store", str(root), *args])


def test_fixture_predates_the_marker_and_reads_as_version_1(v1):
    assert not (v1 / "_shared" / "store.json").exists()
    assert RunStore(v1).check_format() == 1
    assert _maker().expected_reading(v1) == EXPECTED


def test_cli_reads_the_v1_store(v1):
    run_id = EXPECTED["run_id"]
    listed = json.loads(_cli(v1, "runs", "--json").stdout)
    assert [r["run_id"] for r in listed] == [run_id]
    assert listed[0]["n_responses"] == EXPECTED["n_responses"]
    shown = _cli(v1, "show", "latest", "--json")
    assert shown.exit_code == 0, shown.output
    means = {f"{m['method']}/{m['metric']}": m["mean"] for m in json.loads(shown.stdout)["metrics"]}
    assert means.keys() == EXPECTED["metric_means"].keys()
    for key, value in EXPECTED["metric_means"].items():
        assert (means[key] is None) if value is None else means[key] == pytest.approx(value, abs=1e-9)
    exported = _cli(v1, "export", run_id, "--format", "csv")
    assert exported.exit_code == 0, exported.output
    df = pd.read_csv(io.StringIO(exported.stdout))
    assert len(df) == EXPECTED["n_responses"] and set(df["question_id"]) == set(EXPECTED["question_ids"])


def test_queries_over_the_v1_store(v1):
    store = RunStore(v1)
    overview = runs_overview(store)
    assert overview["n_questions"].tolist() == [EXPECTED["counts"]["q"]]
    wide = wide_results(store, EXPECTED["run_id"])
    assert len(wide) == EXPECTED["n_responses"] and "token_f1" in wide.columns
    with open_db(store) as con:  # read the old way: parts merged on the fly, summaries computed
        assert con.execute("SELECT count(*) FROM metrics").fetchone()[0] == EXPECTED["counts"]["m"]
        assert con.execute("SELECT count(*) FROM summary_metrics").fetchone()[0] == len(EXPECTED["metric_means"])
    assert not (v1 / EXPECTED["run_id"] / "tables.json").exists()  # reading never writes


def test_first_write_compacts_a_v1_store_and_reads_the_same(v1):
    """The first write to a format-1 store upgrades it: every run compacted into canonical files
    (no part files left), the marker at the current version, and every number read as before."""
    store = RunStore(v1)
    run_dir = v1 / EXPECTED["run_id"]
    assert list(run_dir.glob("metrics/part-*.parquet"))
    writer = store.open_run(EXPECTED["run_id"])  # opening for writing is the first write
    assert json.loads(store.marker_path().read_text()) == {"format_version": FORMAT_VERSION}
    pointer = json.loads((run_dir / "tables.json").read_text())
    legacy = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.glob("*/part-*.parquet"))
    assert legacy and set(legacy) <= set(pointer["retired"])  # kept a while: old readers may hold them
    assert _maker().expected_reading(v1) == EXPECTED
    from evalcore.store import compaction

    compaction.GRACE_S = 0.0  # once the grace time is over, the next compaction removes them
    try:
        store.compact(EXPECTED["run_id"])
    finally:
        compaction.GRACE_S = 600.0
    assert not list(run_dir.glob("*/part-*.parquet")) and not json.loads((run_dir / "tables.json").read_text())["retired"]
    assert _maker().expected_reading(v1) == EXPECTED
    writer.write_responses([EvalResponse(question_id=EXPECTED["question_ids"][0], method="new", answer="x")])
    writer.update_manifest(notes=["touched"])
    writer.publish()
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id="second", name="second", evalcore_version="t")
    with store.staged_run(manifest):
        pass
    assert sorted(store.run_ids()) == sorted([EXPECTED["run_id"], "second"])
    assert len(store.manifest(EXPECTED["run_id"]).notes) == 1
    assert len(run_responses_of(store)) == EXPECTED["n_responses"] + 1


def run_responses_of(store):
    from evalcore.scoring.queries import run_responses

    return run_responses(store, EXPECTED["run_id"])


def test_a_v1_store_upgrades_through_the_cli_and_shows_the_same_means(v1):
    before = json.loads(_cli(v1, "show", "latest", "--json").stdout)["metrics"]
    result = _cli(v1, "score", "latest", "--metrics", "token_f1", "--no-progress")
    assert result.exit_code == 0, result.output
    after = json.loads(_cli(v1, "show", "latest", "--json").stdout)["metrics"]
    assert after == before  # token_f1 re-scored to the same values; nothing else changed
    assert RunStore(v1).check_format() == FORMAT_VERSION


def _newer_marker(root: Path) -> Path:
    marker = root / "_shared" / "store.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"format_version": FORMAT_VERSION + 1}))
    return marker


def test_a_newer_store_is_refused_for_reading_and_writing(v1):
    marker = _newer_marker(v1)
    store = RunStore(v1)
    for action in (store.run_ids, lambda: open_db(store).__enter__(),
                   lambda: store.create_run(RunManifest(format_version=1, run_id="x", name="x", evalcore_version="t"))):
        with pytest.raises(StoreError) as info:
            action()
        assert str(marker) in str(info.value) and "newer" in str(info.value)
    assert sorted(p.name for p in v1.iterdir()) == sorted([EXPECTED["run_id"], "_shared"])


@pytest.mark.parametrize("where", ["marker", "manifest"])
def test_cli_refuses_a_newer_format_in_one_line(v1, where):
    """Through the real console entry point: exit code 2 and one line on stderr naming the file."""
    if where == "marker":
        bad = _newer_marker(v1)
    else:
        bad = v1 / EXPECTED["run_id"] / "run.json"
        data = json.loads(bad.read_text())
        bad.write_text(json.dumps({**data, "format_version": FORMAT_VERSION + 1}))
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    out = subprocess.run([sys.executable, "-c", code, "--store", str(v1), "show", EXPECTED["run_id"]],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "newer" in lines[0], out.stderr


@pytest.mark.parametrize("text", ["{", "[]", '{"format_version": "1"}', '{"format_version": 0}'])
def test_a_damaged_marker_is_a_store_error(v1, text):
    marker = v1 / "_shared" / "store.json"
    marker.parent.mkdir(parents=True)
    marker.write_text(text)
    with pytest.raises(StoreError, match="store.json"):
        RunStore(v1).run_ids()
