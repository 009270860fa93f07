"""The `evalcore` command. Each command group lives in its own module with a `register(app)`;
COMMANDS names, for every command, the function that imports its module (explicit imports, no
module-name strings).

Why lazily: importing every command module (each pulls in the store, pandas, the scorers...)
cost ~0.8 s before any command ran. A command's module is imported when the command is
looked up, so `evalcore runs --help` imports one module; `evalcore --help` lists them all
(bench/bench_cli_start.py measures it against importing every module first).
"""

from __future__ import annotations

import os
import sys
import traceback
from types import ModuleType
from typing import Callable, Optional

import typer
from typer.core import TyperGroup

from evalcore import __version__
from evalcore.cli.context import state
from evalcore.cli.disk_errors import disk_full_message, is_disk_full, is_not_writable, not_writable_message
from evalcore.cli.flag_errors import guard_flags
from evalcore.errors import EvalcoreError
from evalcore.common.duckdb_interrupt import is_ctrl_c_in_a_query
from evalcore.common.inert_text import install_inert_streams

def _store_commands() -> ModuleType:
    from evalcore.cli import store_commands
    return store_commands


def _transfer_commands() -> ModuleType:
    from evalcore.cli import transfer_commands
    return transfer_commands


def _dataset_commands() -> ModuleType:
    from evalcore.cli import dataset_commands
    return dataset_commands


def _score_commands() -> ModuleType:
    from evalcore.cli import score_commands
    return score_commands


def _metric_commands() -> ModuleType:
    from evalcore.cli import metric_commands
    return metric_commands


def _trec_commands() -> ModuleType:
    from evalcore.cli import trec_commands
    return trec_commands


def _judge_commands() -> ModuleType:
    from evalcore.cli import judge_commands
    return judge_commands


def _run_commands() -> ModuleType:
    from evalcore.cli import run_commands
    return run_commands


def _app_commands() -> ModuleType:
    from evalcore.cli import app_commands
    return app_commands


def _label_commands() -> ModuleType:
    from evalcore.cli import label_commands
    return label_commands


def _report_commands() -> ModuleType:
    from evalcore.cli import report_commands
    return report_commands


# command -> the module that registers it, in the order `evalcore --help` lists them. A new
# command module: a loader above, its commands here (tests/test_cli_vocabulary.py checks that
# every module registers exactly the commands named for it).
COMMANDS: dict[str, Callable[[], ModuleType]] = {
    "import": _transfer_commands, "runs": _store_commands, "show": _store_commands, "export": _transfer_commands,
    "delete": _store_commands, "store": _store_commands,
    "datasets": _dataset_commands, "stats": _dataset_commands,
    "score": _score_commands, "compare": _score_commands,
    "report": _report_commands,  # compare as one self-contained HTML file
    "metrics": _metric_commands,
    "trec": _trec_commands,
    "rejudge": _judge_commands,
    "run": _run_commands, "demo": _run_commands, "demo-server": _run_commands,
    "app": _app_commands,
    "labels": _label_commands,  # labels import|export|summary (show/compare --corrected: corrected_commands)
}


def commands_of(loader: Callable[[], ModuleType]) -> dict[str, object]:
    """The click commands a command module registers (imports it)."""
    sub = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)
    loader().register(sub)
    return dict(typer.main.get_group(sub).commands)


class LazyCommands(TyperGroup):
    """The root group: lists COMMANDS, imports a command's module only when it is looked up."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> object:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            for name, command in commands_of(COMMANDS[cmd_name]).items():
                self.commands.setdefault(name, command)
        command = super().get_command(ctx, cmd_name)
        # a flag value a settings model refuses: one `error:` line naming the flag (cli/flag_errors.py)
        return guard_flags(command) if command is not None else None


def load_all() -> None:
    """Import every command module now (the eager start: bench/bench_cli_start.py's baseline)."""
    for loader in dict.fromkeys(COMMANDS.values()):
        loader()


app = typer.Typer(
    name="evalcore",
    cls=LazyCommands,
    help="Evaluate RAG systems: import or collect answers, score them, compare methods, browse results.\n\n"
         "Runs are kept in a store folder (--store, or EVALCORE_STORE, default ./runs).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # click.echo strips escape sequences itself when the stream is not a terminal, before the
    # guard sees them, so `error: g\x1b[2J.jsonl` printed as `error: g.jsonl` (a name that is not
    # the file's). With color on, click strips nothing and the guard shows every escape. Set for
    # the root context, so every command's context (and a usage error's) inherits it.
    context_settings={"color": True},
)

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
    install_inert_streams()  # again here: a test runner swaps the streams after main() ran
    state.store_root = store
    state.changing = False
    _debug[0] = debug


_OUTERMOST: list[typer.Context] = []


def _guard_output() -> None:
    """Every write to stdout and stderr passes the terminal guard (evalcore.common.inert_text), and click
    never strips escape sequences before it does. Inside a command every context has color on
    (the app's context_settings); an echo outside any command (main's one error line, printed
    after the command's context closed) finds this outermost context, color on, entered once
    before the first command and never left (so it stays at the bottom of click's stack)."""
    install_inert_streams()
    if not _OUTERMOST:
        _OUTERMOST.append(typer.Context(TyperGroup(name="evalcore"), color=True).__enter__())


def _debugging() -> bool:
    return _debug[0] or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _fail(message: str, code: int) -> None:
    """One line on stderr (the traceback above it with --debug), then exit `code`."""
    if _debugging():
        traceback.print_exc()
    typer.echo("error: " + " ".join(message.split()), err=True)
    sys.exit(code)


def _from_ctrl_c(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among what led to `exc` (typer raises its Exit(130) from one)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _unexpected(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"unexpected {type(exc).__name__}{': ' + text if text else ''} (run with --debug for the traceback)"


def main() -> None:
    """Console entry point: one line on stderr for every failure, never a traceback (unless
    --debug). Expected ones (evalcore errors, a full disk, a store that cannot be written)
    exit 2; anything unexpected exits 1 and points at --debug. Everything written to stdout and
    stderr passes the terminal guard (evalcore.common.inert_text): names and text from the data can
    show their control characters, never send them."""
    _guard_output()
    try:
        app()
    except SystemExit as done:
        if done.code == 130 and _from_ctrl_c(done):  # typer ends a Ctrl-C in a command with a bare exit 130
            typer.echo("interrupted", err=True)
        raise
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
        if is_ctrl_c_in_a_query(exc):  # the user stopped the command: not a bug
            typer.echo("interrupted", err=True)
            sys.exit(130)
        _fail(_unexpected(exc), 1)


def _save_listing() -> None:
    """After a command that changed the store: the listing the next `evalcore runs` prints,
    computed here where DuckDB and the models are loaded already (listing_cache.save_after_write).
    A Ctrl-C during it ends the process as the command's own end would have."""
    from evalcore.analysis.runs.listing_cache import save_after_write

    try:
        save_after_write(state.store())
    except KeyboardInterrupt:
        pass


def run() -> None:
    """The console script and `python -m evalcore`: `main()`, then the end of the process. A
    command that used an s3:// store leaves without the interpreter's teardown, which native
    reader threads could otherwise abort (evalcore.store.end_process says why); `main()` alone
    stays an ordinary function that raises SystemExit (tests call it in-process)."""
    try:
        main()
        code: object = 0
    except SystemExit as done:
        code = done.code
    if "evalcore.store" not in sys.modules:  # no store opened (--help): nothing to wait for
        sys.exit(code)
    if state.changing and code in (0, None, 1):  # done (1: a run whose every answer failed), not stopped
        _save_listing()
    from evalcore.store import end_process

    end_process(code)


if __name__ == "__main__":
    run()
