"""`evalcore rejudge RUN --judge J`: score a run's judged metrics again with another judge.

Why a separate command: judge verdicts are the part of a run most worth revisiting (a better
judge model, a new prompt version) and the answers, contexts and full judge requests are all
in the store, so re-judging needs no target. The new values replace the old ones in the
run when it is published (the store counts the replaced rows), and the command prints, per
metric, the old and new means and how often the two judges disagree.
"""

from __future__ import annotations

import json
import math
from typing import Optional

import typer

from evalcore.cli.context import state
from evalcore.errors import EvalcoreError


def rejudge_cmd(
    run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
    judge: str = typer.Option(..., "--judge", "-j",
                              help="heuristic | anthropic:MODEL | openai:MODEL[@BASE_URL]."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", "-m", help="Comma-separated judged metrics (default: the judged metrics the run has)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only estimate calls, tokens and cost."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Re-score judged metrics with JUDGE; prints old vs new mean and disagreement per metric."""
    from evalcore.judges.reliability import category, disagree
    from evalcore.stats.agreement import cohen_kappa
    from evalcore.metrics.judged import SPECS
    from evalcore.queries import query_df
    from evalcore.scoring import score_run

    store = state.store()
    run_id = store.resolve(run)
    judged = {s.name for s in SPECS}
    old = query_df(store, "SELECT method, question_id, metric, value FROM metrics "
                          "WHERE run_id = ? AND judge_id IS NOT NULL", [run_id])
    old = old[old["metric"].isin(list(judged))]
    if metrics:
        names = [m.strip() for m in metrics.split(",") if m.strip()]
        unknown = sorted(set(names) - judged)
        if unknown:
            raise EvalcoreError(f"not judged metrics: {', '.join(unknown)} (choose from {', '.join(sorted(judged))})")
    else:
        names = sorted(set(old["metric"]))
        if not names:
            raise EvalcoreError(f"run {run_id} has no judged values; name metrics with --metrics")
    report = score_run(store, run_id, metrics=names, options={"judge": judge}, dry_run=dry_run, progress=False)
    if dry_run:
        typer.echo(json.dumps(report.estimate, indent=2, default=str))
        return
    new = query_df(store, "SELECT method, question_id, metric, value FROM metrics WHERE run_id = ?", [run_id])
    new = new[new["metric"].isin(names)]
    before = {(r.method, r.question_id, r.metric): r.value for r in old.itertuples(index=False)}
    summary = {}
    for name in names:
        rows = new[new["metric"] == name]
        pairs = [(before[(r.method, r.question_id, name)], r.value) for r in rows.itertuples(index=False)
                 if (r.method, r.question_id, name) in before]
        pairs = [(a, b) for a, b in pairs if not (math.isnan(a) or math.isnan(b))]
        vals = [v for v in rows["value"] if not math.isnan(v)]
        summary[name] = {
            "new_mean": sum(vals) / len(vals) if vals else None,
            "old_mean": (sum(a for a, _ in pairs) / len(pairs)) if pairs else None,
            "n_paired": len(pairs),
            "disagreement_rate": (sum(disagree(name, a, b) for a, b in pairs) / len(pairs)) if pairs else None,
            "kappa": cohen_kappa([category(name, a) for a, _ in pairs], [category(name, b) for _, b in pairs]),
        }
    if report.errors:
        summary["_errors"] = report.errors
    if as_json:
        typer.echo(json.dumps({"run_id": run_id, "judge": judge, "metrics": summary}, indent=2, default=str))
        return
    typer.echo(f"re-judged {run_id} with {judge}")

    def fmt(v) -> str:
        return "   -  " if v is None else f"{v:7.3f}"

    for name in names:
        s = summary[name]
        typer.echo(f"  {name:<26} old {fmt(s['old_mean'])}  new {fmt(s['new_mean'])}  "
                   f"disagree {fmt(s['disagreement_rate'])}  kappa {fmt(s['kappa'])}  (n={s['n_paired']})")
    for name, err in report.errors.items():
        typer.echo(f"  error in {name}: {err}", err=True)


def register(app: typer.Typer) -> None:
    app.command("rejudge")(rejudge_cmd)
