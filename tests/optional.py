"""What a test needs but a plain install may lack: skip with the reason, or fail under CI.

A user's clone may have only part of the `[dev]` extra (no Ray, no sentence-transformers), and
its tests should say so and skip. On CI the `[dev]` extra is installed on purpose, so a package
that does not import there is a broken install, and a skip would hide it behind a green run:
under CI=true the same check fails the test instead. Use `requires("pkg")` wherever a test would
otherwise call `pytest.importorskip` (tests/test_optional.py forbids that call in tests/).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def under_ci() -> bool:
    """True when the CI variable says so (CI=true, as GitHub Actions and most CIs set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def skip_or_fail(message: str) -> None:
    """Skip this test (or the whole module, when called at import) with `message`; fail under CI."""
    if under_ci():
        pytest.fail(f"{message} (CI=true: a missing requirement is a failure, not a skip)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def requires(module: str, why: str = "") -> ModuleType:
    """Import and return `module`, or skip (fail under CI=true) naming it and what is missing.

    Works in a test, a fixture, or at module level (`pytrec_eval = requires("pytrec_eval")`).
    Only ImportError counts as missing: a package that is present but raises something else on
    import is a real error and propagates either way.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        detail = f" ({why})" if why else ""
        skip_or_fail(f"`{module}` cannot be imported{detail}: {exc}; install the dev extra: "
                     "pip install -e '.[dev]'")
        raise  # unreachable: skip_or_fail always raises
