"""No import cycles among evalcore's modules (issue 26, item 4).

Why: a cycle makes what a module holds depend on which side was imported first (a registry
filled "at the bottom of the file", a name missing while the other module is half
initialised), and it ties two modules into one that cannot be understood or moved alone.

The graph is read from the source (the AST), like tests/test_layers.py: every `import` and
`from ... import`, at module level, inside functions (a deferred import still ties the two
modules together) and under `if TYPE_CHECKING:` (never run, but a type named from the other
module ties the two as much: the RunStore and its writer once imported each other that way,
the writer calling the store's private manifest reader). `from pkg import name` is an import of
the submodule `pkg.name` when there is one, else of `pkg` itself.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parents[1] / "evalcore"

# Cycles through deferred (in-function) imports that are still to be untied, each with where it is
# tracked: none left. The test fails when a new cycle appears, and when a listed one is gone.
KNOWN: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(tree: ast.AST) -> list[ast.AST]:
    """Every import statement anywhere in the module, `if TYPE_CHECKING:` blocks included."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph() -> nx.DiGraph:
    mods = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                           for a in node.names]
            else:
                targets = []
            graph.add_edges_from((name, t) for t in targets if t in mods and t != name)
    return graph


def test_no_import_cycles_among_evalcore_modules():
    cycles = [frozenset(c) for c in nx.simple_cycles(import_graph())]
    new = sorted(sorted(c) for c in set(cycles) - KNOWN)
    assert not new, f"import cycles: {new} (move the shared part into a module both import)"
    gone = sorted(sorted(c) for c in KNOWN - set(cycles))
    assert not gone, f"no longer cycles, drop them from KNOWN: {gone}"


def test_the_graph_sees_a_cycle(tmp_path):
    """The checker itself: two modules importing each other (one inside a function) are found."""
    graph = import_graph()
    assert graph.has_edge("evalcore.judges.tasks", "evalcore.judges.task_library")
    assert not graph.has_edge("evalcore.judges.task_library", "evalcore.judges.tasks")
    graph.add_edge("evalcore.judges.task_library", "evalcore.judges.tasks")
    assert any(set(c) == {"evalcore.judges.tasks", "evalcore.judges.task_library"} for c in nx.simple_cycles(graph))


def test_the_graph_sees_imports_made_for_type_checking_only(tmp_path, monkeypatch):
    """An import under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`, or in a function) is an
    edge like any other: a cycle through one is found."""
    package = tmp_path / "evalcore"
    (package / "store").mkdir(parents=True)
    for name in ("__init__.py", "store/__init__.py"):
        (package / name).write_text("")
    (package / "store" / "writer.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evalcore.store.runstore import RunStore\n")
    (package / "store" / "runstore.py").write_text(
        "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    pass\n"
        "def open_run():\n    from evalcore.store.writer import RunWriter\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", package)
    cycles = [set(c) for c in nx.simple_cycles(import_graph())]
    assert {"evalcore.store.writer", "evalcore.store.runstore"} in cycles
