"""Shared fixtures. Real evaluation data lives in ../shared/data beside the project.

A user's clone has no ../shared: tests that need it skip with a reason there, but under
CI=true a missing folder is a failure (CI must exercise the real data).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.optional import skip_or_fail

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"


def pytest_configure(config):
    """Tests that Ctrl-C a run or cancel a job send SIGINT to the processes they start. Run in
    the background of a script (`pytest ... &`), pytest itself starts with SIGINT ignored and
    every child would inherit that: give the suite Python's own handler, as at a terminal."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _threads_per_worker() -> None:
    """Under pytest-xdist, torch (and the OpenMP pools of the libraries below it) get this
    worker's share of the cores, not all of them. Why: torch starts one thread per core, and its
    threads wait for each other by spinning; with two workers on two cores, a model in one worker
    fought the other worker for its second core: encoding 600 sentences took 93 s instead of 17 s,
    one at a time 205 s instead of 15 s (two such processes side by side, this machine). Set in the
    environment too, so the CLI, Streamlit and Ray processes a test starts inherit it; a value
    already set is kept. Values are unchanged (a thread count only reorders float sums)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if not os.environ.get("PYTEST_XDIST_WORKER") or workers < 2:
        return
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    os.environ.setdefault("OMP_NUM_THREADS", threads)
    if "torch" in sys.modules:  # imported before this file (a plugin): too late for the variable
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


_threads_per_worker()


def _share_the_component_scan() -> None:
    """Every Streamlit AppTest scans all installed distributions' metadata for v2 components
    (streamlit.components.v2.manifest_scanner), ~0.5 s each on this machine and nearly 5% of the
    suite's CPU, finding the same nothing every time: the installed packages do not change
    during a test session. The first scan in each process is the real one; later AppTests get
    a copy of its result. (`evalcore app` scans once, when its server starts.)"""
    if "streamlit" not in sys.modules:
        return
    import functools

    from streamlit.components.v2 import manifest_scanner

    real = manifest_scanner.scan_component_manifests
    if getattr(real, "shared_by_the_suite", False):
        return
    found: list = []

    @functools.wraps(real)
    def shared(*args, **kwargs):
        if not found:
            found.append(real(*args, **kwargs))
        return list(found[0])

    shared.shared_by_the_suite = True
    manifest_scanner.scan_component_manifests = shared


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _share_the_component_scan()


def _require(path: Path) -> Path:
    if path.exists():
        return path
    skip_or_fail(f"real data not found at {path} (it lives in ../shared/data beside the project)")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ../shared/data; skips (or fails under CI=true) when absent."""
    return _require(SHARED_DATA)


from tests.s3server import s3_endpoint, s3_env, s3_store  # noqa: E402,F401  (fixtures)


@pytest.fixture
def console(capsys, monkeypatch):
    """`evalcore ARGS...` through the console entry point (cli.main.main: its one `error:` line
    and exit code) in this process, printing what a real process prints: evalcore configures no
    logging, so a real process shows warnings through logging's last-resort handler on stderr,
    which pytest's own log handlers would otherwise replace. A child process per command costs
    1-4 s; use one where the process itself is under test (its exit, argv bytes, a terminal).
    `console(*args)` -> SimpleNamespace(returncode, stdout, stderr)."""
    import logging
    from types import SimpleNamespace

    from evalcore.cli.main import main

    def run(*args: str) -> SimpleNamespace:
        monkeypatch.setattr(sys, "argv", ["evalcore", *map(str, args)])
        monkeypatch.setenv("COLUMNS", "200")
        capsys.readouterr()
        logging.getLogger().addHandler(logging.lastResort)
        try:
            main()
            code = 0
        except SystemExit as done:
            code = done.code or 0
        finally:
            logging.getLogger().removeHandler(logging.lastResort)
        out, err = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out, stderr=err)

    return run


@pytest.fixture
def store(tmp_path):
    """An empty run store in a temporary folder."""
    from evalcore.store import RunStore

    return RunStore(tmp_path / "runs")


class StoreAudit:
    """What is on disk for a run, below the views: for exactly-once checks.

    Readers see one row per key because compaction merged duplicates away; a runner that asked
    a question twice would be invisible there. `rows` reads every row of the canonical file and
    of every pending part (no de-duplication); `replaced` is the pointer's count of rows that
    compaction ever superseded by a newer row of the same key (0 for a live run's answers)."""

    @staticmethod
    def rows(store, run_id: str, table: str):
        import json

        import pandas as pd
        import pyarrow.parquet as pq

        run_dir = store.run_dir(run_id)
        pointer = run_dir / "tables.json"
        files = json.loads(pointer.read_text())["files"] if pointer.exists() else {}
        paths = ([run_dir / files[table]] if table in files else []) + sorted(
            (run_dir / "parts" / table).glob("part-*.parquet"))
        frames = [pq.read_table(p).to_pandas() for p in paths]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["method", "question_id"])

    @staticmethod
    def replaced(store, run_id: str, table: str) -> int:
        import json

        pointer = store.run_dir(run_id) / "tables.json"
        return int(json.loads(pointer.read_text()).get("replaced", {}).get(table, 0)) if pointer.exists() else 0


@pytest.fixture
def audit() -> StoreAudit:
    return StoreAudit()


def pytest_collection_modifyitems(config, items):
    """Mark the heavy tier (tests/heavy.py) so the README's command can leave it to `-m heavy`."""
    from tests.heavy import is_heavy

    for item in items:
        if is_heavy(item.nodeid):
            item.add_marker(pytest.mark.heavy)
