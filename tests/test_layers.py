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
- the analysis layer imports neither the CLI nor the dashboard, and makes no network call;
- judges, embeddings, metrics, datasets and targets write, move, delete or lock no file
  themselves (the judge and embedding caches go through RunStore.shared_cache); a
  ScoringContext holds only what metrics read; no module uses another's private members.
Every folder has one rule (ALLOWED: the folders it may import); a new module lands in its
folder's rule, and a new folder must be given one.
"""

from __future__ import annotations

import ast
from functools import lru_cache
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


@lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """Each module parsed once per test process (about 1,300 checks read the same 300 files)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(found)


@lru_cache(maxsize=None)
def _calls(path: Path) -> set[str]:
    return {n.func.attr for n in ast.walk(_tree(path))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _rel(path: Path) -> str:
    return str(path.relative_to(PKG.parent))


@lru_cache(maxsize=None)
def _names(path: Path) -> set[str]:
    """Plain function names called (`sleep(...)`, `open(...)`), beside `_calls`' attributes."""
    return {n.func.id for n in ast.walk(_tree(path))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


@lru_cache(maxsize=None)
def _attributes(path: Path) -> set[str]:
    return {n.attr for n in ast.walk(_tree(path)) if isinstance(n, ast.Attribute)}


@pytest.mark.parametrize("path", _modules("ui"), ids=_rel)
def test_ui_reads_only_through_analysis_and_store(path):
    """Which folders a page may import is ALLOWED["ui"] (below); here, what it must not open itself."""
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
    called = {ast.unparse(n.func) for n in ast.walk(_tree(path))
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


# Each folder of evalcore (one layer of docs/architecture.md each) and the folders it may import,
# besides itself, evalcore.errors and the package root. Read from the bottom: every folder named on
# the right stands lower in the picture (test_the_folders_stand_in_one_order proves no arrow runs back
# up), and a new module lands in its folder's rule without being named anywhere.
BASE = {"common", "schemas", "stats"}
ALLOWED: dict[str, set[str]] = {
    "common": set(),  # bounded parsing and inert text: the foundation
    "schemas": {"common"},
    "stats": {"common"},
    "store": BASE,
    "targets": BASE,
    "datasets": BASE,
    "embeddings": BASE,
    "judges": BASE | {"embeddings"},  # the client, cache, backends and task definitions; never a metric
    "metrics": BASE | {"embeddings", "judges"},
    "traces": BASE | {"store", "datasets"},  # spans in; scores out is evalcore/outputs/phoenix_scores.py
    "scoring": BASE | {"store", "datasets", "embeddings", "judges", "metrics"},
    "runner": BASE | {"store", "targets", "datasets", "metrics"},
    "scale": BASE | {"store", "datasets", "embeddings", "judges", "metrics", "scoring", "runner"},
    "pipeline": BASE | {"store", "targets", "datasets", "metrics", "scoring", "runner", "scale"},
    "analysis": BASE | {"store", "datasets", "metrics", "judges"},  # reads; computes every number people read
    "outputs": BASE | {"store", "analysis", "traces"},  # renders analysis for people and tools
    "demo": BASE | {"store", "metrics", "scoring", "runner", "pipeline", "analysis"},
    "ui": BASE | {"store", "analysis", "outputs", "targets.offered"},  # pages read through analysis
    "cli": BASE | {"store", "targets", "datasets", "embeddings", "judges", "metrics", "traces", "scoring",
                   "runner", "scale", "pipeline", "analysis", "outputs", "demo"},
}
ROOT_MODULES = {"__init__.py", "__main__.py", "errors.py"}


def _folder_of(module: str) -> str | None:
    """`evalcore.scoring.engine` -> "scoring"; None for the root (evalcore, evalcore.errors)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PKG / parts[1]).is_dir() else None


def test_every_folder_and_root_module_has_a_rule():
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert folders == set(ALLOWED), f"folders without a rule: {sorted(folders - set(ALLOWED))}; " \
                                    f"rules without a folder: {sorted(set(ALLOWED) - folders)}"
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name not in ROOT_MODULES)
    assert not loose, f"modules outside every layer's folder: {loose}"


def test_the_folders_stand_in_one_order():
    """The allowed arrows form no circle, so the folders can be drawn floor above floor."""
    done: set[str] = set()

    def visit(folder: str, path: tuple[str, ...]) -> None:
        assert folder not in path, f"allowed arrows run in a circle: {' -> '.join(path + (folder,))}"
        if folder in done:
            return
        for below in ALLOWED[folder]:
            visit(below.split(".")[0], path + (folder,))
        done.add(folder)

    for folder in ALLOWED:
        visit(folder, ())


@pytest.mark.parametrize("path", _modules(""), ids=_rel)
def test_a_module_imports_only_the_folders_below_it(path):
    own = path.relative_to(PKG).parts
    if len(own) == 1:  # the package root: __init__ names lazily, __main__ starts the CLI
        allowed = {"cli"} if own[0] == "__main__.py" else set()
        home = None
    else:
        home = own[0]
        allowed = ALLOWED[home]
    bad = []
    for module in _imports(path):
        folder = _folder_of(module)
        if not _under(module, "evalcore") or folder in (None, home):
            continue
        named = module.split(".", 1)[1]
        if folder not in allowed and not any(_under(named, a) for a in allowed if "." in a):
            bad.append(module)
    assert not bad, f"{_rel(path)} imports {sorted(set(bad))}: {home or 'the root'} may import {sorted(allowed)}"


@pytest.mark.parametrize("path", _modules("metrics") + _modules("judges"), ids=_rel)
def test_metrics_and_judges_never_write(path):
    """Values in, values out: a composite gets the run's stored values from scoring
    (ScoringContext.stored_metrics), a judge the answers it judges; scoring stores what they return."""
    writes = _calls(path) & WRITES
    assert not writes, f"{_rel(path)} calls {sorted(writes)}: metrics and judges return, scoring writes"


@pytest.mark.parametrize("path", _modules("analysis"), ids=_rel)
def test_analysis_computes_and_never_writes_except_annotations(path):
    network = sorted(m for m in _imports(path) if _under(m, "httpx", "socket", "urllib.request", "requests",
                                                          "aiohttp"))
    assert not network, f"{_rel(path)} imports {network}: network calls live in evalcore/targets"
    writes = _calls(path) & WRITES
    if path.name in ("annotations.py", "labels_io.py"):  # a person's verdict is appended, never overwritten
        writes -= {"append_annotations"}
    assert not writes, f"{_rel(path)} calls {sorted(writes)}"


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


# What writes, moves, deletes or locks a file: the store's caches and services get a folder of the
# store as a store/shared_cache.SharedCache and do all of that through it (the judge cache and the
# embedding caches once each had an atomic-write scheme of their own beside the store's).
FILE_WRITES = {"os.replace", "os.rename", "os.fsync", "os.unlink", "os.remove", "os.mkdir", "os.makedirs",
               "os.rmdir", "shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copyfile", "shutil.copytree",
               "fcntl.flock", "fcntl.lockf"}
PATH_WRITES = {"mkdir", "unlink", "rmdir", "touch", "write_bytes", "write_text", "rename", "symlink_to"}
WRITE_HELPERS = {"write_new", "open_file", "open_regular", "write_atomic", "write_atomic_bytes", "NamedTemporaryFile",
                 "mkstemp", "mkdtemp"}
WRITE_MODES = ("w", "a", "x", "+")


def _file_writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        last = name.rsplit(".", 1)[-1]
        if name in FILE_WRITES or (isinstance(node.func, ast.Attribute) and last in PATH_WRITES) \
                or last in WRITE_HELPERS:
            found.append(name)
        elif last == "open":
            modes = [a for a in node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            found += [f"{name}(mode={m.value!r})" for m in modes if any(c in m.value for c in WRITE_MODES)]
    return found


@pytest.mark.parametrize("path", _modules("judges") + _modules("embeddings") + _modules("metrics")
                         + _modules("datasets") + _modules("targets"), ids=_rel)
def test_caches_and_services_write_no_file_themselves(path):
    """Only the store writes into the store: the judge and embedding caches write their entries
    and part files through the area the store hands them (RunStore.shared_cache), and the
    layers beside them (inputs, services, metrics) write no file at all."""
    writes = sorted(set(_file_writes(path)))
    assert not writes, f"{_rel(path)} writes files itself ({writes}): go through store/shared_cache.py"


@pytest.mark.parametrize("path", [p for p in _modules("") if _rel(p) != "evalcore/metrics/base.py"], ids=_rel)
def test_nothing_reaches_into_a_scoring_context(path):
    """ScoringContext's resources are its own: others use resource(), built(), kept() and adopt()."""
    assert "_resources" not in _attributes(path), f"{_rel(path)} reads ScoringContext._resources"


def test_a_scoring_context_holds_only_what_metrics_read():
    """Every field of ScoringContext is read by a metric or a judge (`ctx.<field>`), or by the
    context's own methods: scoring hands a metric what it computes from and keeps the rest, such
    as the RunWriter it writes through (`ScoringContext.writer` was read by no metric)."""
    import dataclasses

    from evalcore.metrics.base import ScoringContext

    readers = _modules("metrics") + _modules("judges") + _modules("embeddings")
    read = {node.attr for path in readers for node in ast.walk(_tree(path))
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name) and node.value.id in ("ctx", "context", "self")}
    unread = sorted(f.name for f in dataclasses.fields(ScoringContext) if f.name not in read)
    assert not unread, f"ScoringContext fields no metric or judge reads: {unread}"


STORE_INTERNALS = ("layout", "fs", "compaction", "merge", "health", "lease", "s3", "summary", "remote_staging",
                   "views", "pointer_rules", "run_links")


@pytest.mark.parametrize("path", [p for p in _modules("") if not _rel(p).startswith("evalcore/store/")], ids=_rel)
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


@pytest.mark.parametrize("path", _modules(""), ids=_rel)
def test_no_module_takes_another_modules_private_names(path):
    """A `_name` is its module's own: what two modules share is public and documented (the Ray
    engine once imported ten private names of the local scoring engine and repeated its loop;
    both now call scoring/chunk.py). Aliasing a module to a private local name is fine."""
    tree = _tree(path)
    modules: set[str] = set()
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _under(node.module, "evalcore"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    bad.append(f"{node.module}.{alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names if _under(a.name, "evalcore"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{node.value.id}.{node.attr}")
    assert not bad, f"{_rel(path)} takes private names of other modules: {sorted(set(bad))}"


@lru_cache(maxsize=None)
def _private_members() -> dict[str, frozenset[Path]]:
    """Each `_name` a class of evalcore defines (a method or an annotated field), and the modules
    defining one of that name."""
    found: dict[str, set[Path]] = {}
    for path in _modules(""):
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            for member in node.body:
                name = member.name if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                    member.target.id if isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name) \
                    else ""
                if name.startswith("_") and not name.startswith("__"):
                    found.setdefault(name, set()).add(path)
    return {name: frozenset(paths) for name, paths in found.items()}


@pytest.mark.parametrize("path", _modules(""), ids=_rel)
def test_no_module_reaches_into_another_modules_objects(path):
    """An object's `_method` is its class's own: the run writer once read run.json through the
    RunStore's private `_read_manifest_at` / `_parse_manifest`, and remote staging called its
    `_mark`. What two modules share is a public function (store/manifest_file.py) or is passed in."""
    private = _private_members()
    bad = sorted({ast.unparse(node) for node in ast.walk(_tree(path))
                  if isinstance(node, ast.Attribute) and node.attr in private and path not in private[node.attr]
                  and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))})
    assert not bad, f"{_rel(path)} uses private members of other modules' classes: {bad}"
