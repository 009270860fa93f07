"""The layers of docs/architecture.md, enforced on the source (an import-linter in one file).

    schemas -> store -> metrics / judges -> scoring -> analysis -> cli / ui

Checked on every module's imports (module level and inside functions, via the AST):
- the dashboard (evalcore/ui) reads through evalcore.analysis and the store only: it imports no
  metrics, judges, scoring, importer, queries or runner code, and builds no DuckDB connection;
- Streamlit is imported only by evalcore/ui;
- metrics, judges (but the spot-check command) and the analysis layer never write to the store: no writer methods are called there,
  and metrics import nothing that writes (store, scoring);
- the store imports nothing above it;
- the analysis layer imports neither the CLI nor the dashboard.
A new module lands in these rules by its folder; nothing needs registering.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "evalcore"

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


@pytest.mark.parametrize("path", _modules("ui"), ids=_rel)
def test_ui_reads_only_through_analysis_and_store(path):
    allowed = ("evalcore.analysis", "evalcore.store", "evalcore.schemas", "evalcore.ui", "evalcore.errors",
               "evalcore.stats")
    ours = {m for m in _imports(path) if _under(m, "evalcore")}
    bad = sorted(m for m in ours if m != "evalcore" and not _under(m, *allowed) and m != "evalcore.__version__")
    assert not bad, f"{_rel(path)} imports {bad}: pages read through evalcore.analysis"
    assert "duckdb" not in _imports(path), f"{_rel(path)} opens DuckDB itself"
    assert "pyarrow.parquet" not in _imports(path), f"{_rel(path)} reads Parquet itself"


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


@pytest.mark.parametrize("path", _modules("judges"), ids=_rel)
def test_judges_never_write(path):
    """Judged metrics return claims, verdicts and values; scoring stores them and the calls.
    The spot-check command (reliability.py) is a command of its own and stores its results."""
    if path.name == "reliability.py":
        return
    writes = _calls(path) & WRITES
    assert not writes, f"{_rel(path)} calls {sorted(writes)}: judges return, scoring writes"


@pytest.mark.parametrize("path", _modules("analysis"), ids=_rel)
def test_analysis_computes_and_never_writes_except_annotations(path):
    bad = sorted(m for m in _imports(path) if _under(m, "evalcore.ui", "evalcore.cli", "evalcore.scoring",
                                                      "evalcore.importer", "evalcore.runner"))
    assert not bad, f"{_rel(path)} imports {bad}"
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
