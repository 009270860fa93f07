"""`evalcore labels import|export|summary`.

`labels summary` and the `--corrected` tables of `show` and `compare` are printed by
evalcore.cli.corrected_commands, from the analysis functions the pages call (docs/labels.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.errors import EvalcoreError

labels_app = typer.Typer(help="Human labels: import them from a labelling tool, export them, calibrate the judge.",
                         no_args_is_help=True, rich_markup_mode=None)


@labels_app.command("import")
def import_cmd(file: Path = typer.Argument(..., help="CSV or JSONL: run, method, question_id, metric, target, "
                                                     "label, who [, sample_id, inclusion_prob, note, when].")) -> None:
    """Append labels from a file; the whole file is checked first (nothing stored on refusal)."""
    from evalcore.analysis.labels.labels_io import import_labels

    n = import_labels(state.store(), file)
    echo_line(f"imported {n} label{'s' if n != 1 else ''} from {file}")


@labels_app.command("export")
def export_cmd(run: Optional[str] = typer.Option(None, "--run", help="Only this run's labels (default: all)."),
               fmt: str = typer.Option("csv", "--format", "-f", help="csv or jsonl."),
               output: Optional[Path] = typer.Option(None, "--output", "-o", help="Output file (default: stdout).")) -> None:
    """Every stored label, in the fields `labels import` reads."""
    from evalcore.analysis.labels.labels_io import export_text

    if fmt not in ("csv", "jsonl"):
        raise EvalcoreError(f"--format {fmt!r}: choose csv or jsonl")
    store = state.store()
    text = export_text(store, fmt, store.resolve(run) if run else None)
    if output is None:  # through the terminal guard like all output (-o FILE keeps every byte)
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


def register(app: typer.Typer) -> None:
    from evalcore.cli.corrected_commands import register_labels

    register_labels(labels_app)  # `labels summary` (judge calibration)
    app.add_typer(labels_app, name="labels")
