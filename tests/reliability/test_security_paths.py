"""Run ids from the CLI or the URL cannot escape the store.

A second store (the "victim") sits beside the real one, holding a perfectly valid run, so an
id that escaped would find something to show, export or delete. Every hostile id must be
refused with a clean error (exit code 1, no traceback), and the victim must be untouched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stores(tmp_path):
    """(store root, victim run dir): the store has one example run; the victim has another."""
    cli = CliRunner()
    root, victim_root = tmp_path / "store", tmp_path / "victim"
    for r in (root, victim_root):
        res = cli.invoke(app, ["--store", str(r), "import", "--example"])
        assert res.exit_code == 0, res.output
    (victim_id,) = RunStore(victim_root).run_ids()
    return root, victim_root / victim_id


def hostile_ids(victim: Path) -> list[str]:
    rel = f"../victim/{victim.name}"
    return [rel, f"..%2fvictim%2f{victim.name}", f"%2e%2e/victim/{victim.name}", str(victim),
            str(victim.parent), "..", ".", "../", "..\\victim", f"./../victim/{victim.name}",
            f"{victim.name}/../../victim/{victim.name}", "~", "/etc/passwd", "a\x00b", "_shared",
            ".trash", ".staging", "%252e%252e%252f", "…/victim", "..;/victim"]


def _fingerprint(path: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_size) for p in path.rglob("*"))


@pytest.mark.parametrize("command", ["show", "export", "delete", "resume"])
def test_hostile_run_ids_are_refused_by_every_command(stores, command, tmp_path):
    root, victim = stores
    before = _fingerprint(victim.parent)
    out = tmp_path / "out.csv"
    cli = CliRunner()
    for rid in hostile_ids(victim):
        args = {"show": ["show", rid], "export": ["export", rid, "-o", str(out)],
                "delete": ["delete", rid, "--yes"], "resume": ["run", "--resume", rid, "--no-progress"]}[command]
        res = cli.invoke(app, ["--store", str(root), *args])
        assert res.exit_code != 0, (rid, res.output)
        # a refusal is an EvalcoreError (main() prints it as one line, exit 1), never a crash
        assert isinstance(res.exception, (SystemExit, EvalcoreError)), (rid, repr(res.exception))
        assert "Traceback" not in res.output
        assert not out.exists(), rid
    assert _fingerprint(victim.parent) == before
    assert len(RunStore(root).run_ids()) == 1  # the store's own run is still there too


def test_a_symlinked_run_pointing_outside_is_not_followed_out(stores):
    """A run folder that is a symlink out of the store is refused, not read or deleted."""
    root, victim = stores
    link = root / "linked-run"
    link.symlink_to(victim, target_is_directory=True)
    before = _fingerprint(victim)
    res = CliRunner().invoke(app, ["--store", str(root), "delete", "linked-run", "--yes"])
    assert res.exit_code != 0, res.output
    assert victim.is_dir() and _fingerprint(victim) == before


def test_app_query_params_cannot_reach_outside_the_store(stores, monkeypatch):
    from streamlit.testing.v1 import AppTest


    root, victim = stores
    monkeypatch.setenv("EVALCORE_STORE", str(root))
    for page in ("questions", "annotate", "compare", "charts"):
        for rid in (f"../victim/{victim.name}", str(victim), "..%2f..%2fetc", victim.name):
            at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
            at.switch_page(f"pages/{page}.py")  # the link opened directly: the page's first run
            at.query_params.update({"run": rid, "sys": f"{rid}:basic_search"})
            at.run()
            assert not at.exception, (page, rid, at.exception)
            shown = [str(getattr(e, "value", "")) for e in (*at.selectbox, *at.multiselect)]
            assert shown, (page, rid, "the page drew no run selector: nothing was checked")
            assert not any(victim.name in s or "victim" in s for s in shown), (page, rid, shown)
    shutil.rmtree(root / ".trash", ignore_errors=True)
