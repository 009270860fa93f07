"""The `evalcore` command. Each command group lives in its own module and registers itself
here through COMMAND_MODULES (an explicit list, no import magic)."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from typing import Optional

import typer

from evalcore import __version__
from evalcore.cli.context import state
from evalcore.cli.disk_errors import disk_full_message, is_disk_full, is_not_writable, not_writable_message
from evalcore.errors import EvalcoreError

app = typer.Typer(
    name="evalcore",
    help="Evaluate RAG systems: import or collect answers, score them, compare methods, browse results.\n\n"
         "Runs are kept in a store folder (--store, or EVALCORE_STORE, default ./runs).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Modules exposing register(app). Later features add their module here.
COMMAND_MODULES = [
    "evalcore.cli.store_commands",
    "evalcore.cli.dataset_commands",
    "evalcore.cli.score_commands",  # score, compare
    "evalcore.cli.metric_commands",  # metrics
    "evalcore.cli.trec_commands",  # trec
    "evalcore.cli.judge_commands",  # rejudge
    "evalcore.cli.run_commands",  # run, demo, demo-server
    "evalcore.cli.app_commands",  # app
    "evalcore.cli.label_commands",  # labels import|export (show/compare --corrected print from it too)
]


DEBUG_ENV = "EVALCORE_DEBUG"
_debug = [False]  # set by --debug (or EVALCORE_DEBUG) once the root callback has run


def _version(value: bool) -> None:
    if value:
        typer.echo(f"evalcore {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    store: Optional[str] = typer.Option(
        None, "--store", envvar="EVALCORE_STORE",
        help="Run store: a folder (default ./runs) or s3://bucket/prefix. Also read from EVALCORE_STORE."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", envvar=DEBUG_ENV,
                               help="Show the traceback of an error. Also EVALCORE_DEBUG=1."),
) -> None:
    state.store_root = store
    _debug[0] = debug


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def _debugging() -> bool:
    return _debug[0] or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _fail(message: str, code: int) -> None:
    """One line on stderr (the traceback above it with --debug), then exit `code`."""
    if _debugging():
        traceback.print_exc()
    typer.echo("error: " + " ".join(message.split()), err=True)
    sys.exit(code)


def _unexpected(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"unexpected {type(exc).__name__}{': ' + text if text else ''} (run with --debug for the traceback)"


def main() -> None:
    """Console entry point: one line on stderr for every failure, never a traceback (unless
    --debug). Expected ones (evalcore errors, a full disk, a store that cannot be written)
    exit 2; anything unexpected exits 1 and points at --debug."""
    try:
        app()
    except EvalcoreError as exc:
        _fail(str(exc), 2)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except OSError as exc:
        if is_disk_full(exc):
            _fail(disk_full_message(exc, state.store_root), 2)
        elif is_not_writable(exc):
            _fail(not_writable_message(exc), 2)
        else:
            _fail(_unexpected(exc), 1)
    except Exception as exc:  # noqa: BLE001 - the safety net: any bug is one line, not a traceback
        _fail(_unexpected(exc), 1)


if __name__ == "__main__":
    main()
