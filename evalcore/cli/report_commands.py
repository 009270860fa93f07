"""`evalcore report`: a comparison as one self-contained HTML file (evalcore.outputs.html_report).

The selections and the metric flags are `evalcore compare`'s (RUN[:METHOD] ..., first =
baseline; --metrics, --seed, --alpha), so the report's numbers are the ones `compare --json`
prints for the same arguments. Plotly (the `app` extra) draws the figures; without it the
command says how to install it, in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from evalcore.cli.context import state
from evalcore.errors import EvalcoreError

APP_HINT = "the HTML report needs plotly: pip install 'evalcore[app]'"


def report_cmd(
    selections: list[str] = typer.Argument(..., help="RUN[:METHOD] ... (first = baseline), as for `evalcore compare`."),
    output: Path = typer.Option(..., "--output", "-o", help="The HTML file to write (e.g. report.html)."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", "-m", help="Comma-separated metrics to test (default: the key metrics scored on both sides, "
                                "as `evalcore compare`)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed for bootstrap and randomization."),
    alpha: str = typer.Option("0.05", "--alpha", metavar="LEVEL",
                              help="Significance level after Holm correction, in (0, 1) (read as `compare` reads it)."),
) -> None:
    """Write a comparison as one self-contained HTML file: verdict, forest plot, metric table with
    CIs and Holm p, distributions, Pareto fronts, failure modes, the questions that regressed most."""
    from evalcore.analysis.comparison.regression_gate import check_alpha

    level = check_alpha(alpha)  # a bad level is refused before anything is read
    try:
        import plotly  # noqa: F401
    except ImportError as exc:
        raise EvalcoreError(APP_HINT) from exc
    from evalcore.outputs.html_report import render
    from evalcore.analysis.report.report_data import report_data

    wanted = [m.strip() for m in (metrics or "").split(",") if m.strip()]
    if output.is_dir():
        raise EvalcoreError(f"--output {output}: is a folder; name the HTML file to write")
    if not output.parent.is_dir():
        raise EvalcoreError(f"--output {output}: no folder {output.parent}")
    data = report_data(state.store(), selections, metrics=wanted or None, seed=seed, alpha=level)
    page = render(data)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(output)  # a reader never sees half a report
    typer.echo(f"wrote {output} ({len(page.encode('utf-8')) / 1e6:.1f} MB)")


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
