"""A Ctrl-C that lands in a DuckDB query of the main thread is an interruption, not a bug:
DuckDB takes the signal and raises RuntimeError("Query interrupted"), which the CLI used to
print as "unexpected RuntimeError" with exit 1 (session 15's hostile review)."""

from __future__ import annotations

import os
import signal
import threading

import duckdb
import pytest

from evalcore.cli import main as cli


def _duckdb_interrupted() -> BaseException:
    """The exception DuckDB really raises when Ctrl-C comes during a query."""
    con = duckdb.connect()
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        con.execute("SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3").fetchall()
    except BaseException as exc:  # noqa: BLE001 - what DuckDB raised is the point
        return exc
    finally:
        timer.cancel()
        timer.join()
        con.close()
    pytest.fail("the query ended before the Ctrl-C")


@pytest.mark.parametrize("raised", ["duckdb", "other"])
def test_ctrl_c_in_a_query_exits_as_interrupted(monkeypatch, capsys, raised):
    exc = _duckdb_interrupted() if raised == "duckdb" else RuntimeError("something else broke")

    def app():
        raise exc

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    if raised == "duckdb":
        assert stop.value.code == 130 and err.strip() == "interrupted"
    else:
        assert stop.value.code == 1 and "unexpected RuntimeError: something else broke" in err
