"""What `evalcore runs`, `show` and `compare` import: nothing they do not use.

Why a guard and not a timing: start time is mostly imports, and one module-level import in the
wrong place (pandas under the store, ppi-python under a view with no labels, plotly in the
terminal) brings back seconds that no timed test could tell from a busy machine. Each command runs
in a fresh interpreter over a small store, and the modules it must not have imported are checked
in its sys.modules afterwards (bench/bench_cli_start.py measures the time itself).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

# never needed by these commands: plotting, the ppi-python package and what it pulls in
NEVER = ("plotly", "ppi_py", "numba", "statsmodels", "sklearn")
# the store's writing side: reading the store writes nothing (evalcore.store loads it when first named)
WRITING = ("evalcore.store.compaction", "evalcore.store.writer", "evalcore.store.merge",
           "evalcore.store.parquet_write", "evalcore.store.remote_staging", "evalcore.store.local_staging")
# a listing reads no frame, computes no statistic and builds no Arrow table: DuckDB reads the
# files and takes the views' few rows as Python lists, so neither pyarrow nor numpy loads; and
# of the contracts it validates run.json alone (evalcore.schemas loads a model when first named)
CONTRACTS = ("evalcore.schemas.dataset", "evalcore.schemas.response", "evalcore.schemas.results")
# nor the commands that move runs in and out (import, export: Phoenix bounds, export formats)
TRANSFER = ("evalcore.cli.transfer_commands", "evalcore.traces", "evalcore.outputs")
LISTING = (*NEVER, *WRITING, *CONTRACTS, *TRANSFER, "pandas", "scipy", "pyarrow", "numpy")
# show reads frames (pandas) but tests nothing (scipy), labelled or not, and writes nothing
SHOW = (*NEVER, *WRITING, "scipy")

_PROBE = """
import json, sys
watched = {watched}
sys.argv = ["evalcore", *{argv}]
from evalcore.cli.main import main
try:
    main()
    code = 0
except SystemExit as exc:
    code = exc.code or 0
sys.stdout.flush()
print("\\nPROBE " + json.dumps({{"code": code, "imported": sorted(m for m in watched if m in sys.modules)}}))
"""


def _imported(argv: list[str], watched: tuple[str, ...]) -> list[str]:
    """The watched modules a fresh `evalcore ARGV` imported (the command must succeed)."""
    code = _PROBE.format(watched=repr(list(watched)), argv=repr(argv))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    probe = json.loads(proc.stdout.rsplit("PROBE ", 1)[1]) if "PROBE " in proc.stdout else None
    assert probe is not None and probe["code"] == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    return probe["imported"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(store without labels, store with a few randomly sampled labels, run id): one synthetic run
    of two methods; the labelled copy holds 5 sampled answer_class labels per method, enough for
    every corrected estimator to run (an estimate needs 2)."""
    from typer.testing import CliRunner

    from evalcore.analysis.labels import label_sampling as S
    from evalcore.cli.main import app
    from evalcore.demo.synthetic import build_store
    from evalcore.store import query_df

    store = build_store(tmp_path_factory.mktemp("labelled") / "runs", n_runs=1, n_questions=20, n_metrics=4,
                        judge_calls=False)
    plain = tmp_path_factory.mktemp("plain") / "runs"
    shutil.copytree(store.root, plain)  # before any label
    run = store.run_ids()[0]
    rows = []
    for method in ("local_search", "basic_search"):
        judged = query_df(store, "SELECT question_id, label FROM metrics WHERE run_id = ? AND method = ? "
                                 "AND metric = 'answer_class'", [run, method])
        judge = dict(zip(judged.question_id, judged.label))
        order = S.order(list(judge), 0)
        rows += [{"run": run, "method": method, "question_id": q, "metric": "answer_class", "target": "",
                  "label": "wrong" if pos % 2 else judge[q].lower(), "who": "t", "sample_id": "srs:0",
                  "inclusion_prob": S.inclusion_prob(pos, len(order))} for pos, q in enumerate(order[:5])]
    path = tmp_path_factory.mktemp("labels") / "labels.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import", str(path)])
    assert res.exit_code == 0, res.output
    return plain, store.root, run


@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"]], ids=" ".join)
def test_listing_the_runs_imports_no_frames_and_no_statistics(stores, args):
    plain, labelled, _ = stores
    assert _imported(["--store", str(labelled), *args], LISTING) == []


# a store unchanged since its last listing is listed from the saved one (analysis/runs/listing_cache.py):
# no database, no manifest model, no view is needed to print it
SAVED_LISTING = (*LISTING, "duckdb", "evalcore.store.views", "evalcore.store.manifest_file", "evalcore.schemas")


@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"]], ids=" ".join)
def test_listing_an_unchanged_store_loads_neither_duckdb_nor_the_models(stores, args, monkeypatch, tmp_path):
    from evalcore.analysis.runs.listing_cache import CACHE, entry_name, run_listing
    from evalcore.store import RunStore, file_state

    _, labelled, _ = stores
    copy = tmp_path / "runs"
    shutil.copytree(labelled, copy)
    monkeypatch.setattr(file_state, "SETTLE_SECONDS", 0.0)  # a store copied a moment ago may be saved beside
    monkeypatch.setattr(file_state, "FINE_SETTLE_SECONDS", 0.0)
    run_listing(RunStore(copy))
    assert (copy / "_shared" / CACHE / entry_name()).is_file()
    assert _imported(["--store", str(copy), *args], SAVED_LISTING) == []


# --corrected runs the plain command first, then adds the estimates: what it leaves out, so does the plain one

@pytest.mark.parametrize("labels", ["no labels", "labelled"])
def test_show_corrected_imports_neither_ppi_python_nor_plotly(stores, labels):
    plain, labelled, run = stores
    root = plain if labels == "no labels" else labelled
    assert _imported(["--store", str(root), "show", run, "--corrected"], SHOW) == []


def test_compare_corrected_imports_neither_ppi_python_nor_plotly(stores):
    _, labelled, run = stores
    argv = ["--store", str(labelled), "compare", f"{run}:local_search", f"{run}:basic_search", "-m", "answer_class",
            "--corrected"]
    assert _imported(argv, (*NEVER, *WRITING)) == []


def test_the_pytest_plugin_imports_nothing_of_evalcore_until_a_gate_runs():
    """pytest loads evalcore's plugin (the pytest11 entry point) into every session of a user
    with evalcore installed: loading it imports no store, schema or gate module."""
    code = ("import sys; import evalcore.cli.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith('evalcore.') and m.split('.')[1] in "
            "('store', 'schemas', 'outputs', 'analysis', 'pipeline', 'runner')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
