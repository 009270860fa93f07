"""The layers of docs/architecture.md, enforced on the source (an import-linter in one file).

    schemas -> store -> metrics / judges -> scoring -> analysis -> cli / ui

Checked on every module's imports (module level and inside functions, via the AST):
- the dashboard (evalcore/ui) reads through evalcore.analysis and the store only: it imports no
  metrics, judges, scoring, importer, queries or runner code (one exception: the bounded
  "ask the target" question, evalcore.targets.offered), builds no DuckDB connection, touches no
  path of the store (job records and uploads go through evalcore.store.jobs) and never waits on a
  subprocess or sleeps in a page render;
- the page scripts (pages/, app.py) import evalcore.ui only;
- Streamlit is imported only by evalcore/ui;
- metrics and judges neither read nor write the store (values in, values out: scoring passes a
  composite the stored values and stores what the judges return); the analysis layer never
  writes; nothing but metrics/base.py touches a ScoringContext's private state;
- the store imports nothing above it, and nothing outside it imports its internals (layout, fs,
  compaction...) or reads Parquet (but the dataset loaders, which read users' files);
- the analysis layer imports neither the CLI nor the dashboard, and makes no network call.
A new module lands in these rules by its folder; nothing needs registering.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "evalcore"
ROOT = PKG.parent
PAGE_SCRIPTS = sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]

WRITES = {"write_rows", "write_questions", "write_responses", "write_metrics", "write_judge_calls",
          "write_claims", "write_context_verdicts", "publish", "append_annotations", "create_run",
          "staged_run", "delete_run", "compact", "update_manifest", "edit_manifest", "write_manifest"}


def _modules(folder: str) -> list[Path]:
    base = PKG / folder if folder else PKG
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _calls(path: Path) -> set[str]:
    return {n.func.attr for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _rel(path: Path) -> str:
    return str(path.relative_to(PKG.parent))


def _names(path: Path) -> set[str]:
    """Plain function names called (`sleep(...)`, `open(...)`), beside `_calls`' attributes."""
    return {n.func.id for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _attributes(path: Path) -> set[str]:
    return {n.attr for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Attribute)}


@pytest.mark.parametrize("path", _modules("ui"), ids=_rel)
def test_ui_reads_only_through_analysis_and_store(path):
    allowed = ("evalcore.analysis", "evalcore.store", "evalcore.schemas", "evalcore.ui", "evalcore.errors",
               "evalcore.stats", "evalcore.targets.offered")
    ours = {m for m in _imports(path) if _under(m, "evalcore")}
    bad = sorted(m for m in ours if m != "evalcore" and not _under(m, *allowed) and m != "evalcore.__version__")
    assert not bad, f"{_rel(path)} imports {bad}: pages read through evalcore.analysis"
    assert "duckdb" not in _imports(path), f"{_rel(path)} opens DuckDB itself"
    assert "pyarrow.parquet" not in _imports(path), f"{_rel(path)} reads Parquet itself"


# Path methods and store accessors that reach files in the store (or anywhere): the dashboard
# calls evalcore.store.jobs for its job records and uploads, and analysis for everything else.
STORE_PATHS = {"run_dir", "shared_dir", "local_shared_dir", "annotations_dir", "marker_path"}
FILE_IO = {"read_text", "write_text", "write_bytes", "mkdir", "iterdir", "glob", "rglob", "unlink", "rmdir",
           "touch"}
# What makes a page render wait on a process (or on the clock): a page starts background jobs
# and looks at them (poll, waitpid WNOHANG), it never waits for one.
WAITS = {"sleep", "wait", "communicate", "check_output", "check_call", "wait_for"}


@pytest.mark.parametrize("path", _modules("ui"), ids=_rel)
def test_ui_touches_no_store_path_and_never_waits(path):
    touched = sorted((_calls(path) | _names(path)) & (STORE_PATHS | FILE_IO))
    assert not touched, f"{_rel(path)} calls {touched}: job records and uploads live in evalcore.store.jobs"
    waits = sorted((_calls(path) | _names(path)) & WAITS)
    assert not waits, f"{_rel(path)} calls {waits}: a page render never waits on a process"
    called = {ast.unparse(n.func) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(n, ast.Call)}
    runs = sorted(called & {"subprocess.run", "subprocess.call", "os.system", "os.wait"})
    assert not runs, f"{_rel(path)} calls {runs}: it would wait for a subprocess to end"


@pytest.mark.parametrize("path", PAGE_SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_scripts_import_the_dashboard_only(path):
    """pages/*.py and app.py are the thin wrappers a checkout's Streamlit runs: everything they
    show comes from evalcore.ui (which the rules above hold to analysis)."""
    found = _imports(path)
    bad = sorted(m for m in found if not _under(m, "evalcore.ui") and m != "__future__")
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}: a page script imports evalcore.ui only"


# The app's own job files (ui/jobs.py writes and reads job.json for a launched run): not stored
# run data, so the one dashboard module allowed to use json.
UI_JSON_ALLOWED = {"evalcore/ui/jobs.py"}


@pytest.mark.parametrize("path", _modules("ui"), ids=_rel)
def test_ui_parses_no_stored_format(path):
    """Stored JSON columns (a response's record, a metric's details, a judge request) are parsed
    by the analysis layer, which returns plain values: a page importing json is parsing one."""
    if _rel(path) in UI_JSON_ALLOWED:
        return
    bad = sorted(m for m in _imports(path) if _under(m, "json", "orjson", "ujson"))
    assert not bad, f"{_rel(path)} imports {bad}: parse stored formats in evalcore.analysis"


@pytest.mark.parametrize("path", [p for p in _modules("") if not _under(_rel(p).replace("/", "."), "evalcore.ui")],
                         ids=_rel)
def test_streamlit_only_in_the_dashboard(path):
    assert not any(_under(m, "streamlit") for m in _imports(path)), f"{_rel(path)} imports streamlit"


@pytest.mark.parametrize("path", _modules("metrics"), ids=_rel)
def test_metrics_never_write(path):
    bad = sorted(m for m in _imports(path) if _under(m, "evalcore.store", "evalcore.scoring", "evalcore.importer"))
    assert not bad, f"{_rel(path)} imports {bad}: metrics return values; scoring writes them"
    assert not (_calls(path) & WRITES), f"{_rel(path)} calls {sorted(_calls(path) & WRITES)}"


@pytest.mark.parametrize("path", _modules("metrics") + _modules("judges") + _modules("embeddings"), ids=_rel)
def test_metrics_and_judges_read_no_store(path):
    """Values in, values out: a composite gets the run's stored values from scoring
    (ScoringContext.stored_metrics), a judge the answers it judges; neither queries the store."""
    bad = sorted(m for m in _imports(path) if _under(m, "evalcore.store", "evalcore.queries", "evalcore.scoring",
                                                      "evalcore.importer", "evalcore.runner", "evalcore.analysis",
                                                      "evalcore.spot_check"))
    assert not bad, f"{_rel(path)} imports {bad}: scoring reads the store and passes values in"


@pytest.mark.parametrize("path", _modules("judges"), ids=_rel)
def test_judges_never_write(path):
    """Judged metrics return claims, verdicts and values; scoring stores them and the calls.
    The spot check (evalcore/spot_check.py, scoring's layer) stores its second judge's results."""
    writes = _calls(path) & WRITES
    assert not writes, f"{_rel(path)} calls {sorted(writes)}: judges return, scoring writes"


@pytest.mark.parametrize("path", _modules("analysis"), ids=_rel)
def test_analysis_computes_and_never_writes_except_annotations(path):
    bad = sorted(m for m in _imports(path) if _under(m, "evalcore.ui", "evalcore.cli", "evalcore.scoring",
                                                      "evalcore.importer", "evalcore.runner"))
    assert not bad, f"{_rel(path)} imports {bad}"
    network = sorted(m for m in _imports(path) if _under(m, "evalcore.targets", "httpx", "socket", "urllib.request",
                                                          "requests", "aiohttp"))
    assert not network, f"{_rel(path)} imports {network}: network calls live in evalcore/targets"
    writes = _calls(path) & WRITES
    if path.name == "annotations.py":  # a person's verdict is appended (never overwrites anything)
        writes -= {"append_annotations"}
    assert not writes, f"{_rel(path)} calls {sorted(writes)}"


@pytest.mark.parametrize("path", _modules("store"), ids=_rel)
def test_store_imports_nothing_above_it(path):
    above = ("evalcore.metrics", "evalcore.judges", "evalcore.scoring", "evalcore.analysis", "evalcore.ui",
             "evalcore.cli", "evalcore.runner", "evalcore.importer", "evalcore.queries")
    bad = sorted(m for m in _imports(path) if _under(m, *above))
    assert not bad, f"{_rel(path)} imports {bad}"


def test_only_the_store_knows_the_layout():
    """Folder and file names of the layout appear in store/ only (and in nothing that globs)."""
    offenders = []
    for path in _modules(""):
        rel = _rel(path)
        if rel.startswith("evalcore/store/"):
            continue
        text = path.read_text(encoding="utf-8")
        needles = ["tables.json", "parts/", "part-*.parquet", ".run.json.lock"]
        if rel.startswith(("evalcore/analysis/", "evalcore/ui/")):
            needles += ["read_parquet", "duckdb.connect"]  # they read views, never files
        offenders += [f"{rel}: {n}" for n in needles if n in text]
    assert not offenders, offenders


@pytest.mark.parametrize("path", [p for p in _modules("") if _rel(p) != "evalcore/metrics/base.py"], ids=_rel)
def test_nothing_reaches_into_a_scoring_context(path):
    """ScoringContext's resources are its own: others use resource(), built(), kept() and adopt()."""
    assert "_resources" not in _attributes(path), f"{_rel(path)} reads ScoringContext._resources"


STORE_INTERNALS = ("layout", "fs", "compaction", "merge", "health", "lease", "s3", "summary", "remote_staging",
                   "views", "pointer_rules", "run_links")
STORE_SIDE = ("evalcore/store/", "evalcore/tables.py", "evalcore/staging.py")


@pytest.mark.parametrize("path", [p for p in _modules("") if not _rel(p).startswith(STORE_SIDE)], ids=_rel)
def test_only_the_store_uses_its_internals_and_reads_parquet(path):
    """Outside the store, runs are read through its public functions (RunStore, open_db,
    store.blocks for a published table read in blocks); Parquet is read only by the store and by
    the dataset loaders (users' own question files)."""
    internals = tuple(f"evalcore.store.{name}" for name in STORE_INTERNALS)
    bad = sorted(m for m in _imports(path) if _under(m, *internals))
    assert not bad, f"{_rel(path)} imports the store's internals {bad}"
    if not _rel(path).startswith("evalcore/datasets/"):
        assert not any(_under(m, "pyarrow.parquet") for m in _imports(path)), f"{_rel(path)} reads Parquet itself"
        assert "read_parquet" not in _calls(path), f"{_rel(path)} reads Parquet itself"
