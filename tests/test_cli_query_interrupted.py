"""A Ctrl-C that lands in a DuckDB query of the main thread is an interruption, not a bug:
DuckDB takes the signal and raises RuntimeError("Query interrupted"), which the CLI used to
print as "unexpected RuntimeError" with exit 1 (session 15's hostile review); and a live run
stopped that way is recorded cancelled, not failed (its second review: tests/runner/test_opening_publish.py)."""

from __future__ import annotations

import threading

import duckdb
import pytest

from evalcore.cli import main as cli


def _duckdb_interrupted(form: str) -> BaseException:
    """What DuckDB raises when a query is stopped: "sigint" is what DuckDB 2.0.1 raised for a
    Ctrl-C during a query on this machine (RuntimeError "Query interrupted"; a real SIGINT is
    not used here: whether DuckDB notices it mid-query varied from run to run, and a query it
    did not stop ran for minutes); "interrupt" is DuckDB's own, from `interrupt()`."""
    if form == "sigint":
        return RuntimeError("Query interrupted")
    con = duckdb.connect()
    timer = threading.Timer(0.1, con.interrupt)
    timer.start()
    try:
        con.execute("SELECT count(*) FROM range(100000000000) t(x) WHERE x % 7 = 3").fetchall()
    except BaseException as exc:  # noqa: BLE001 - what DuckDB raised is the point
        return exc
    finally:
        timer.join()
        con.close()
    pytest.fail("the query ended before it was interrupted")


@pytest.mark.parametrize("raised", ["sigint", "interrupt", "other"])
def test_ctrl_c_in_a_query_exits_as_interrupted(monkeypatch, capsys, raised):
    exc = _duckdb_interrupted(raised) if raised != "other" else RuntimeError("something else broke")

    def app():
        raise exc

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    if raised != "other":
        assert stop.value.code == 130 and err.strip() == "interrupted"
    else:
        assert stop.value.code == 1 and "unexpected RuntimeError: something else broke" in err



def test_ctrl_c_in_a_command_says_interrupted(monkeypatch, capsys, tmp_path):
    """typer turns a KeyboardInterrupt raised in a command into a bare exit 130 (no word on
    stderr): the entry names it, as it does a Ctrl-C that reaches it directly."""
    from evalcore.analysis.runs import listing_cache

    def stopped(store):
        raise KeyboardInterrupt

    monkeypatch.setattr(listing_cache, "run_listing", stopped)
    monkeypatch.setattr("sys.argv", ["evalcore", "--store", str(tmp_path / "runs"), "runs"])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 130 and capsys.readouterr().err.strip() == "interrupted"


def test_an_exit_130_of_a_command_s_own_is_left_alone(monkeypatch, capsys):
    def app():
        raise SystemExit(130)

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 130 and capsys.readouterr().err == ""
