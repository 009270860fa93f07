"""Shared fixtures. Real evaluation data lives in ../shared/data beside the project.

A user's clone has no ../shared: tests that need it skip with a reason there, but under
CI=true a missing folder is a failure (CI must exercise the real data).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"


def _require(path: Path) -> Path:
    if path.exists():
        return path
    message = f"real data not found at {path} (it lives in ../shared/data beside the project)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data; skips (or fails under CI=true) when absent."""
    return _require(SHARED_DATA)


@pytest.fixture
def store(tmp_path):
    """An empty run store in a temporary folder."""
    from evalcore.store import RunStore

    return RunStore(tmp_path / "runs")
