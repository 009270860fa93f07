"""evalcore: an evaluation workbench for retrieval-augmented generation systems.

`from evalcore import EvalConfig, run_evaluation` runs an evaluation from Python; the heavier
modules load only when first used, so `import evalcore` stays cheap (the pytest plugin and the
CLI import it on every start).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "EvalConfig": ("evalcore.runner.config", "EvalConfig"),
    "run_evaluation": ("evalcore.pipeline", "run_evaluation"),
    "resume_run": ("evalcore.pipeline", "resume_run"),
    "RunStore": ("evalcore.store", "RunStore"),
    "score_run": ("evalcore.scoring.engine", "score_run"),
    "load_questions": ("evalcore.datasets", "load_questions"),
    "import_recorded": ("evalcore.scoring.importer", "import_recorded"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        return getattr(importlib.import_module(module_name), attr)
    raise AttributeError(f"module 'evalcore' has no attribute {name!r}")
