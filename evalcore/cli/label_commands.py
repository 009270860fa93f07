"""`evalcore labels import|export|targets|summary`.

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

labels_app = typer.Typer(help="Human labels: import them from a labelling tool, export them, list the next "
                              "answers of a random sample to label, calibrate the judge.",
                         no_args_is_help=True, rich_markup_mode=None)


@labels_app.command("import")
def import_cmd(file: Path = typer.Argument(..., help="CSV or JSONL: run, method, question_id, metric, target, "
                                                     "label, who [, sample_id, inclusion_prob, note, when]; a "
                                                     "pairwise preference: kind=preference, run, method, "
                                                     "other_method [, other_run], question_id, label (A, B or tie), "
                                                     "who."),
               as_hand_picked: bool = typer.Option(False, "--as-hand-picked",
                                                   help="Store every label as hand-picked (sample fields dropped): "
                                                        "counted for agreement, never for estimates."),
               kind: str = typer.Option("label", "--kind", metavar="KIND",
                                        help="What a record without a `kind` column is: label (a metric's item, "
                                             "the default) or preference (which of two systems' answers is "
                                             "better).")) -> None:
    """Append labels from a file; the whole file is checked first (nothing stored on refusal).
    Labels naming a random sample must be the first answers of that seed's order, each with the
    inclusion probability of its place (docs/labels.md); --as-hand-picked imports them as
    hand-picked instead."""
    from evalcore.analysis.labels.labels_io import import_labels
    from evalcore.analysis.labels.preference_io import KINDS

    if kind.casefold() not in KINDS:
        raise EvalcoreError(f"--kind {kind!r}: choose {' or '.join(KINDS)}")
    n = import_labels(state.store(changing=True), file, as_hand_picked, kind.casefold())
    how = " as hand-picked" if as_hand_picked else ""
    echo_line(f"imported {n} label{'s' if n != 1 else ''}{how} from {file}")


@labels_app.command("targets")
def targets_cmd(run: str = typer.Argument(..., help="Run id, unique prefix, name or 'latest'."),
                method: str = typer.Argument(..., help="The method (system) whose answers are labelled."),
                metric: str = typer.Argument(..., help="The metric the labels are for (docs/labels.md)."),
                seed: int = typer.Option(0, "--seed", help="The sample's seed (default 0, the Annotate page's)."),
                n: int = typer.Option(20, "-n", help="How many answers (default 20, the page's batch)."),
                output: Optional[Path] = typer.Option(None, "--output", "-o",
                                                      help="Output file (default: stdout).")) -> None:
    """The next answers of the random sample's order as a CSV template: one row per claim,
    context or answer, numbered as the Annotate page numbers them, with the sample id and
    inclusion probability filled in. Fill in `label` and `who`; `labels import` reads the file as
    it is (rows left empty at the end are "not yet labelled")."""
    from evalcore.analysis.labels import label_units as U
    from evalcore.analysis.labels.label_targets import COLUMNS, template_rows
    from evalcore.common.csv_safety import rows_to_csv
    from evalcore.schemas.ids import match_name
    from evalcore.schemas.labels import sample_id

    if n < 1:
        raise EvalcoreError(f"-n {n}: give how many answers to list, 1 or more")
    try:
        sample_id(seed)
    except ValueError as exc:
        raise EvalcoreError(f"--seed {seed}: {exc}") from exc
    store = state.store()
    run_id = store.resolve(run)
    methods = store.manifest(run_id).methods
    stored = match_name(method, methods)
    if stored is None:
        raise EvalcoreError(f"run {run_id} has no method {method!r} (methods: {', '.join(methods)})")
    if U.answers(store, run_id, stored, metric).empty:
        raise EvalcoreError(f"run {run_id} has no {metric} verdicts to label for method {stored!r} "
                            f"(labellable: {', '.join(U.estimable_metrics(store, run_id)) or 'none'})")
    rows = template_rows(store, run_id, stored, metric, seed, n)
    if not rows:
        echo_line(f"every answer of {run_id}/{stored}/{metric} is labelled in sample {sample_id(seed)}", err=True)
    text = rows_to_csv(rows, COLUMNS)
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {output}", err=True)


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
