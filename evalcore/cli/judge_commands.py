"""`evalcore rejudge RUN --judge J`: score a run's judged metrics again with another judge.

Why a separate command: judge verdicts are the part of a run most worth revisiting (a better
judge model, a new prompt version) and the answers, contexts and full judge requests are all
in the store, so re-judging needs no target. The new values replace the old ones in the
run when it is published (the store counts the replaced rows), and the command prints, per
metric, the old and new means and how often the two judges disagree.
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.errors import EvalcoreError


def rejudge_cmd(
    run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
    judge: str = typer.Option(..., "--judge", "-j",
                              help="heuristic | anthropic:MODEL | openai:MODEL[@BASE_URL]."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", "-m", help="Comma-separated judged metrics (default: the judged metrics the run has)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only estimate calls, tokens and cost."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    repeats: Optional[int] = typer.Option(None, "--repeats", metavar="K",
                                          help="Ask each verdict K times per answer (independent samples; the "
                                               "value is their mean, each is stored). Default 1."),
) -> None:
    """Re-score judged metrics with JUDGE; prints old vs new mean and disagreement per metric."""
    from evalcore.analysis.labels.rejudge import judged_values, rejudge_summary
    from evalcore.metrics.judged.specs import SPECS
    from evalcore.scoring.engine import score_run

    store = state.store(changing=not dry_run)
    run_id = store.resolve(run)
    judged = {s.name for s in SPECS}
    old = judged_values(store, run_id, sorted(judged))
    if metrics:
        names = [m.strip() for m in metrics.split(",") if m.strip()]
        unknown = sorted(set(names) - judged)
        if unknown:
            raise EvalcoreError(f"not judged metrics: {', '.join(unknown)} (choose from {', '.join(sorted(judged))})")
    else:
        names = sorted(set(old["metric"]))
        if not names:
            raise EvalcoreError(f"run {run_id} has no judged values; name metrics with --metrics")
    options: dict = {"judge": judge}
    if repeats is not None:
        from evalcore.metrics.options import check_options

        options = check_options({**options, "judge_repeats": repeats}, "--repeats")
    report = score_run(store, run_id, metrics=names, options=options, dry_run=dry_run, progress=False)
    if dry_run:
        typer.echo(json.dumps(report.estimate, indent=2, default=str))
        return
    new = judged_values(store, run_id, names, judged_only=False)
    summary: dict = rejudge_summary(old, new, names)
    if report.errors:
        summary["_errors"] = report.errors
    if as_json:
        typer.echo(json.dumps({"run_id": run_id, "judge": judge, "judge_repeats": options.get("judge_repeats", 1),
                               "metrics": summary}, indent=2, default=str))
        return
    typer.echo(f"re-judged {run_id} with {judge}" + (f", {repeats} verdicts per answer" if repeats else ""))

    def fmt(v) -> str:
        return "   -  " if v is None else f"{v:7.3f}"

    for name in names:
        s = summary[name]
        echo_line(f"  {name:<26} old {fmt(s['old_mean'])}  new {fmt(s['new_mean'])}  "
                   f"disagree {fmt(s['disagreement_rate'])}  kappa {fmt(s['kappa'])}  (n={s['n_paired']})")
    for name, err in report.errors.items():
        echo_line(f"  error in {name}: {err}", err=True)


def register(app: typer.Typer) -> None:
    app.command("rejudge")(rejudge_cmd)
