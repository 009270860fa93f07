"""Commands about question sets: datasets, stats; and the `--on-duplicate` option that every
command reading a question file (stats, run, import) shares."""

from __future__ import annotations

import json
import warnings
from contextlib import contextmanager
from enum import Enum
from typing import Iterator, Optional

import typer

from evalcore.cli.context import echo_line
from evalcore.errors import DuplicateIdsDropped


class OnDuplicate(str, Enum):
    """`--on-duplicate` values. The CLI spells keep-first with a dash like its other flags;
    `mode` is the loaders' (and run configs') spelling."""

    error = "error"
    keep_first = "keep-first"

    @property
    def mode(self) -> str:
        return self.value.replace("-", "_")


ON_DUPLICATE_HELP = ("A repeated question id in the question file: error (the default) stops; keep-first "
                     "keeps the first copy and drops the later ones, printing one warning per dropped record.")


@contextmanager
def print_dropped_duplicates() -> Iterator[None]:
    """Print every DuplicateIdsDropped warning raised inside as `warning: ...` lines on stderr,
    one per dropped record, as it happens.

    Python's own display adds a source path and line meant for developers; stdout stays
    clean for the JSON and run ids that scripts read. Other warnings are shown as usual.
    """
    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(message, DuplicateIdsDropped):
            for text in message.lines():
                echo_line(f"warning: {text}", err=True)
        else:
            default(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", DuplicateIdsDropped)
        default = warnings.showwarning
        warnings.showwarning = show
        yield


def datasets_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the question formats evalcore reads (and the public sets it can fetch by name)."""
    from evalcore.datasets import FORMATS

    from evalcore.datasets.registry import PUBLIC_SETS

    if as_json:
        typer.echo(json.dumps({"formats": {k: v.description for k, v in FORMATS.items()},
                               "public": {k: v.description for k, v in PUBLIC_SETS.items()}}, indent=2))
        return
    typer.echo("File formats (use with --dataset FILE; detected automatically):")
    for fmt in FORMATS.values():
        typer.echo(f"  {fmt.name:<16} {fmt.description}")
    if PUBLIC_SETS:
        typer.echo("\nPublic sets by name (need `pip install evalcore[datasets]` and network):")
        for item in PUBLIC_SETS.values():
            typer.echo(f"  {item.name:<16} {item.description}")


def stats_cmd(
    dataset: str = typer.Argument(..., help="A question file (any supported format)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Force a format (see `evalcore datasets`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    on_duplicate: OnDuplicate = typer.Option(OnDuplicate.error, "--on-duplicate", help=ON_DUPLICATE_HELP),
) -> None:
    """Count questions by category, type, difficulty, answerability and gold annotations."""
    from evalcore.datasets import load_questions
    from evalcore.datasets.stats import dataset_stats

    with print_dropped_duplicates():
        questions = load_questions(dataset, fmt, on_duplicate=on_duplicate.mode)
    stats = dataset_stats(questions)
    if as_json:
        typer.echo(json.dumps(stats, ensure_ascii=False, indent=2))
        return
    for key, value in stats.items():
        if isinstance(value, dict):
            echo_line(f"{key}:")
            for k, v in value.items():
                echo_line(f"  {k:<28} {v}")
        else:
            echo_line(f"{key:<30} {value}")


def register(app: typer.Typer) -> None:
    app.command("datasets")(datasets_cmd)
    app.command("stats")(stats_cmd)
