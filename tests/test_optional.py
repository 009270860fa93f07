"""The rule for missing test requirements (tests/optional.py): skip with the reason on a
user's machine, fail under CI=true, so a broken `[dev]` install cannot pass as green skips."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.optional import requires, skip_or_fail, under_ci

TESTS = Path(__file__).resolve().parent
MISSING = "evalcore_no_such_package_for_tests"


@pytest.fixture
def broken_package(tmp_path, monkeypatch) -> str:
    """A package that is installed but does not import (a dependency of it is missing), as a
    half-done `pip install` leaves it."""
    root = tmp_path / "site"
    (root / "evalcore_broken_pkg").mkdir(parents=True)
    (root / "evalcore_broken_pkg" / "__init__.py").write_text(f"import {MISSING}\n")
    monkeypatch.syspath_prepend(str(root))
    return "evalcore_broken_pkg"


@pytest.mark.parametrize("value, expected", [("true", True), ("TRUE", True), ("1", True), ("yes", True),
                                             ("", False), ("false", False), ("0", False)])
def test_under_ci_reads_the_ci_variable(monkeypatch, value, expected):
    monkeypatch.setenv("CI", value)
    assert under_ci() is expected


def test_without_ci_a_missing_package_skips_with_its_name(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"`{MISSING}` cannot be imported \\(why it is needed\\)"):
        requires(MISSING, "why it is needed")


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_package_fails(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=f"`{MISSING}` cannot be imported.*CI=true"):
        requires(MISSING)


def test_a_package_that_is_there_but_does_not_import_is_missing_too(monkeypatch, broken_package):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=f"`{broken_package}` cannot be imported.*{MISSING}"):
        requires(broken_package)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=broken_package):
        requires(broken_package)


def test_a_package_that_imports_is_returned(monkeypatch):
    monkeypatch.setenv("CI", "true")
    import json.decoder

    assert requires("json.decoder") is json.decoder


def _run_pytest(folder: Path, ci: str | None) -> subprocess.CompletedProcess:
    """pytest on `folder` in a child, with pytest's own plugins only: what is tested is how pytest
    itself treats a skip or a failure at a module's import; the installed plugins (hypothesis,
    xdist, coverage, anyio...) took 3.7 s of each child's 4 s to load."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:evalcore", "-p", "no:phoenix",
                           str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_module_level_requirement_skips_or_fails_the_whole_module(tmp_path):
    """At import time (`mod = requires(...)` at the top of a test file): outside CI the module's
    tests are skipped, under CI the run fails with an error instead of skipping them."""
    shutil.copy(TESTS / "optional.py", tmp_path / "optional.py")  # `tests` may name another package there
    (tmp_path / "test_needs_missing.py").write_text(
        f'from optional import requires\n\nlib = requires("{MISSING}")\n\n\n'
        "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    pass\n")
    outside = _run_pytest(tmp_path, None)
    assert outside.returncode == 0 and "1 passed, 1 skipped" in outside.stdout, outside.stdout
    assert f"`{MISSING}` cannot be imported" in outside.stdout
    ci = _run_pytest(tmp_path, "true")
    assert ci.returncode != 0 and "1 error" in ci.stdout and "skipped" not in ci.stdout, ci.stdout
    assert f"`{MISSING}` cannot be imported" in ci.stdout and "CI=true" in ci.stdout


def test_skip_or_fail_is_the_shared_data_rule_too(monkeypatch, tmp_path):
    """tests/conftest.py's real-data check goes through the same function."""
    from tests.conftest import _require

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="real data not found"):
        _require(tmp_path / "absent")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="real data not found"):
        _require(tmp_path / "absent")
    with pytest.raises(pytest.fail.Exception, match="some reason"):
        skip_or_fail("some reason")


def test_no_test_skips_on_a_missing_package_by_itself():
    """`pytest.importorskip` and `skipif(find_spec(...) is None)` skip even under CI: every test
    goes through `requires` instead."""
    pattern = re.compile(r"importorskip\(|skipif\([^)]*find_spec\(")  # [^)] spans lines
    offenders = [str(path.relative_to(TESTS.parent)) for path in sorted(TESTS.rglob("*.py"))
                 if path.name not in {"optional.py", "test_optional.py"}
                 and pattern.search(path.read_text(encoding="utf-8"))]
    assert not offenders, f"use tests.optional.requires instead: {offenders}"
