"""The `evalcore` command. Each command group lives in its own module and registers itself
here through COMMAND_MODULES (an explicit list, no import magic)."""

from __future__ import annotations

import importlib
import sys
from typing import Optional

import typer

from evalcore import __version__
from evalcore.cli.context import state
from evalcore.cli.disk_errors import disk_full_message, is_disk_full
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
) -> None:
    state.store_root = store


for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)


def main() -> None:
    """Console entry point: evalcore errors and a full disk become one clear line on stderr and
    exit code 2."""
    try:
        app()
    except EvalcoreError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        typer.echo(f"error: {disk_full_message(exc, state.store_root)}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
