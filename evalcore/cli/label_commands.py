"""`evalcore labels import|export` and the `--corrected` tables of `show` and `compare`.

The tables are printed from evalcore.analysis.labels.corrected, the function the pages call, so the CLI
and the dashboard cannot show different corrected numbers (docs/labels.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.errors import EvalcoreError

labels_app = typer.Typer(help="Human labels: import them from a labelling tool, export them.",
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


def _f(x, digits: int = 3) -> str:
    from evalcore.analysis.labels.corrected import num

    return num(x, digits)


def _ci(lo, hi) -> str:
    from evalcore.analysis.labels.corrected import interval

    return interval(lo, hi)


def print_corrected_means(store, run_id: str, as_json: bool = False) -> None:
    """`show RUN --corrected`: judge mean beside the human-corrected one, per method x metric."""
    from evalcore.analysis.labels.corrected import MIN_LABELS, corrected_means, num

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
    from evalcore.analysis.labels.corrected import MIN_LABELS, corrected_compare, num

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
