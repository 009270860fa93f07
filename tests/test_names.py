"""One name, one meaning: a module's name says what it is, wherever it is imported.

Why: a reader who met `matching.py` as gold-passage matching (metrics/) took the offline
judge's word matching (judges/offline/) for the same thing; `cache.py` was a store cache in
judges/ and embeddings/ and the pages' memo of analysis calls in ui/; `common` was both the
package evalcore.common and, in six pages, an alias of ui/safe_widgets. Now the offline judge's
rules are judges/offline/lexical_verdicts.py, the pages' memo is ui/cached_reads.py, and
safe_widgets is imported as `widgets` (or by its own name).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "evalcore"

# A basename two or more modules share: allowed where it means one thing in each folder, and
# this table says which folders and what. A new module under a shared basename needs its folder
# here (or another name).
SHARED_BASENAMES = {
    "base.py": (("judges", "metrics"), "the base interface of its package (Judge; MetricSpec)"),
    "cache.py": (("embeddings", "judges"), "a shared cache kept in the store's _shared/ (embeddings; judge replies)"),
    "client.py": (("judges", "targets"), "the client of a remote service (the judge's model; the RAG target)"),
    "compare.py": (("analysis/comparison", "ui"), "the Compare question: analysis computes it, ui renders it"),
    "engine.py": (("runner", "scoring"), "the loop that drives its folder's work (asking; scoring)"),
    "jobs.py": (("store", "ui"), "the dashboard's background jobs (their records; starting and showing them)"),
    "progress.py": (("analysis/runs", "runner"), "how far a run has got (the counts; the live bar)"),
    "registry.py": (("datasets", "metrics"), "the explicit registry of its package (question formats; metrics)"),
    "results.py": (("analysis/read", "schemas"), "a run's results (the flat export table; the stored records)"),
    "retrieval.py": (("metrics", "traces"), "retrieved contexts (their scores; reading them from spans)"),
    "repeats.py": (("scoring", "stats"), "a judge's repeated verdicts of one answer (asking and storing them; their statistics)"),
}


def _modules() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if p.name not in ("__init__.py", "__main__.py")]


def test_a_shared_module_basename_means_one_thing():
    seen: dict[str, list[str]] = {}
    for path in _modules():
        seen.setdefault(path.name, []).append(str(path.parent.relative_to(PKG)))
    shared = {name: tuple(folders) for name, folders in seen.items() if len(folders) > 1}
    unexplained = {name: folders for name, folders in shared.items()
                   if folders != SHARED_BASENAMES.get(name, ((), ""))[0]}
    assert not unexplained, f"one basename in several folders, meaning is not written down: {unexplained}"
    stale = set(SHARED_BASENAMES) - set(shared)
    assert not stale, f"no longer shared, drop from SHARED_BASENAMES: {stale}"


def _imports(paths: list[Path], pattern: str):
    """(path, import node) of every import in the files where `pattern` is found (the others
    cannot bind the name: parsing only these keeps the test fast)."""
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if re.search(pattern, text, re.MULTILINE):
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    yield path, node


def test_safe_widgets_is_imported_as_widgets_or_by_its_name():
    wrong = []
    sources = [*_modules(), *sorted((PKG.parent / "pages").glob("*.py")), PKG.parent / "app.py"]
    for path, node in _imports(sources, "safe_widgets"):
        full = [(f"{node.module}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name, a.asname)
                for a in node.names]
        wrong += [f"{path.relative_to(PKG.parent)}:{node.lineno} as {asname}" for name, asname in full
                  if name == "evalcore.ui.safe_widgets" and asname not in (None, "widgets")]
    assert not wrong, f"safe_widgets under another name: {wrong}"


def test_no_module_binds_the_name_of_the_common_package_to_something_else():
    """`common` is evalcore/common/ (small helpers): no import binds that name to another module."""
    wrong = []
    binds_common = r"\b(as|import)\s+common\b|^\s*common,?\s*$|,\s*common\s*[,)\n]"
    for path, node in _imports(_modules(), binds_common):
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            full = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
            if bound == "common" and full != "evalcore.common":
                wrong.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {full} as common")
    assert not wrong, wrong
