"""A full disk during `evalcore import` or `evalcore score` is one line naming the file, exit
code 2, and the store reads exactly as before (it used to be a raw OSError traceback).

The disk is simulated by making pyarrow's Parquet writer fail the way it does on a full
filesystem (errno 28, no file name: measured on a 2 MB tmpfs), so no root or mount is needed.
"""

from __future__ import annotations

import errno
import hashlib
import sys

import pyarrow.parquet as pq
import pytest

from evalcore.cli.main import main
from tests.store_trees import is_listing_cache

PYARROW_FULL = "Error writing bytes to file. Detail: [errno 28] No space left on device"


def _cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["evalcore", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    return done.value.code or 0, out, err


def _files(root) -> dict[str, str]:
    """Every file of the store (lock files aside) and its hash."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock") and not is_listing_cache(p, root)}


def _disk_full(monkeypatch, code: int = errno.ENOSPC) -> None:
    def full(*args, **kwargs):
        raise OSError(code, PYARROW_FULL)

    monkeypatch.setattr(pq, "write_table", full)
    monkeypatch.setattr(pq, "ParquetWriter", full)


@pytest.fixture
def imported(tmp_path, monkeypatch, capsys):
    root = tmp_path / "runs"
    code, out, _ = _cli(monkeypatch, capsys, "--store", str(root), "import", "--example")
    assert code == 0
    return root


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_full_disk_during_import(imported, monkeypatch, capsys):
    before = _files(imported)
    runs_before = _cli(monkeypatch, capsys, "--store", str(imported), "runs", "--json")[1]
    _disk_full(monkeypatch)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(imported), "import", "--example")
    line = _one_error_line(err)
    assert code == 2
    assert line.startswith(f"error: no space left on device while writing {imported}")
    assert "nothing already stored was changed" in line
    monkeypatch.undo()
    assert _files(imported) == before  # no run, no staging folder, no temporary file left
    assert _cli(monkeypatch, capsys, "--store", str(imported), "runs", "--json")[1] == runs_before


def test_full_disk_during_score(imported, monkeypatch, capsys):
    run_id = next(p.name for p in imported.iterdir() if p.name.startswith("example-"))
    shown = _cli(monkeypatch, capsys, "--store", str(imported), "show", run_id)[1]
    _disk_full(monkeypatch)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(imported), "score", run_id, "--metrics", "token_f1")
    line = _one_error_line(err)
    assert code == 2
    assert line.startswith(f"error: no space left on device while writing {imported / run_id}")
    monkeypatch.undo()
    assert _cli(monkeypatch, capsys, "--store", str(imported), "show", run_id)[1] == shown
    assert not list(imported.rglob("*.tmp"))


def test_quota_exceeded_is_one_line_too(imported, monkeypatch, capsys):
    if not hasattr(errno, "EDQUOT"):
        pytest.skip("no EDQUOT on this platform")
    _disk_full(monkeypatch, errno.EDQUOT)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(imported), "import", "--example")
    assert code == 2 and _one_error_line(err).startswith("error: disk quota exceeded while writing")


def test_other_os_errors_are_not_disguised(imported, monkeypatch, capsys):
    """Not a full disk: said as the unexpected error it is (the CLI's safety net), exit 1."""
    _disk_full(monkeypatch, errno.EIO)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(imported), "import", "--example")
    line = _one_error_line(err)
    assert code == 1
    assert line.startswith("error: unexpected OSError: [Errno 5]") and "--debug" in line
    assert "no space" not in line
