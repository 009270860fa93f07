"""`evalcore labels import|export|targets` and the `--corrected` tables of `show` and `compare`.

The tables are printed from evalcore.analysis.corrected, the function the pages call, so the CLI
and the dashboard cannot show different corrected numbers (docs/labels.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.errors import EvalcoreError

labels_app = typer.Typer(help="Human labels: import them from a labelling tool, export them, list the next "
                              "answers of a random sample to label.",
                         no_args_is_help=True, rich_markup_mode=None)


@labels_app.command("import")
def import_cmd(file: Path = typer.Argument(..., help="CSV or JSONL: run, method, question_id, metric, target, "
                                                     "label, who [, sample_id, inclusion_prob, note, when]."),
               as_hand_picked: bool = typer.Option(False, "--as-hand-picked",
                                                   help="Store every label as hand-picked (sample fields dropped): "
                                                        "counted for agreement, never for estimates.")) -> None:
    """Append labels from a file; the whole file is checked first (nothing stored on refusal).
    Labels naming a random sample must be the first answers of that seed's order, each with the
    inclusion probability of its place (docs/labels.md); --as-hand-picked imports them as
    hand-picked instead."""
    from evalcore.labels_io import import_labels

    n = import_labels(state.store(), file, as_hand_picked)
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
    from evalcore.analysis import label_units as U
    from evalcore.analysis.label_targets import COLUMNS, template_rows
    from evalcore.schemas.csv_safety import rows_to_csv
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
    from evalcore.labels_io import export_text

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


def _f(x, digits: int = 3) -> str:
    from evalcore.analysis.corrected import num

    return num(x, digits)


def _ci(lo, hi) -> str:
    from evalcore.analysis.corrected import interval

    return interval(lo, hi)


def print_corrected_means(store, run_id: str, as_json: bool = False) -> None:
    """`show RUN --corrected`: judge mean beside the human-corrected one, per method x metric."""
    from evalcore.analysis.corrected import MIN_LABELS, corrected_means, num

    table = corrected_means(store, run_id)
    if as_json:
        typer.echo(table.to_json(orient="records", force_ascii=False, double_precision=15))
        return
    if table.empty:
        typer.echo("corrected: no randomly sampled labels in this run yet (Annotate, random sample mode; "
                   "or `evalcore labels import`)")
        return
    typer.echo(f"human-corrected means (PPI++ with {MIN_LABELS}+ randomly sampled labels; 95% CI):")
    typer.echo(f"  {'method':<20} {'metric':<20} {'judge':>7} {'corrected':>9} {'95% CI':>17} {'labelled':>10} "
               f"{'judge bias [CI]':>25} {'rho':>6} {'width':>6}")
    for r in table.itertuples(index=False):
        labelled = f"{r.n_labelled}/{r.N}"
        if r.status != "ok":
            echo_line(f"  {r.method:<20} {r.metric:<20} {_f(r.judge_mean):>7} "
                       f"{f'{r.n_labelled} of {MIN_LABELS} labels':>27} {labelled:>10}")
            continue
        bias = f"{num(r.bias, sign=True)} {_ci(r.bias_low, r.bias_high)}"
        echo_line(f"  {r.method:<20} {r.metric:<20} {_f(r.judge_mean):>7} {_f(r.corrected):>9} "
                   f"{_ci(r.ci_low, r.ci_high):>17} {labelled:>10} {bias:>25} {_f(r.rho, 2):>6} "
                   f"{_f(r.implied_width_ratio, 2):>6}")
    typer.echo("width: PPI++ width relative to labels alone implied by rho (about sqrt(1 - rho^2))")


def print_corrected_compare(store, sels: list, metrics: list[str] | None) -> None:
    """`compare A B --corrected`: judge Δ vs corrected Δ with CIs and verdicts, side by side.
    `sels`: the comparison's selections, baseline first."""
    from evalcore.analysis.corrected import MIN_LABELS, corrected_compare, num

    table = corrected_compare(store, (sels[0].run_id, sels[0].method), [(s.run_id, s.method) for s in sels[1:]],
                              metrics)
    if table.empty:
        typer.echo("corrected: no questions labelled at random on both sides yet")
        return
    typer.echo(f"judge Δ vs human-corrected Δ (paired PPI++ on per-question differences; {MIN_LABELS}+ "
               "questions labelled on both sides; unadjusted 95% CI):")
    for r in table.itertuples(index=False):
        left = f"judge {num(r.judge_delta, sign=True)} {_ci(r.judge_low, r.judge_high)} {r.judge_verdict}"
        if r.status != "ok":
            right = f"corrected: {r.n_labelled} of {MIN_LABELS} labels"
        else:
            right = (f"corrected {num(r.corrected_delta, sign=True)} {_ci(r.ci_low, r.ci_high)} {r.corrected_verdict}"
                     + ("  (verdict changes)" if r.verdict_changes else ""))
        echo_line(f"  {r.candidate:<28} {r.metric:<20} {left:<48} {right}  n={r.n_labelled}/{r.N}")


def register(app: typer.Typer) -> None:
    app.add_typer(labels_app, name="labels")
