"""What the CLI prints from human labels: `show --corrected`, `compare --corrected` and `labels summary`.

Every number comes from evalcore.analysis (corrected, calibration), the functions the pages call,
so the CLI and the dashboard cannot show different numbers; the words of a count ("12 of 50
labels") come from evalcore.analysis.labels.label_counts, one helper for every page and command. Where
the text withholds a number (fewer than 50 labels), `--json` carries null with the row's status.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from evalcore.cli.context import echo_line, state

WIDTH_NOTE = ("width: the labels-alone 95% CI's width over the corrected one's, measured (1.40 = the corrected "
              "interval is 1.4x narrower; 1.00 = the judge did not help, lambda 0)")


def _means_line(r: Any) -> str:
    from evalcore.analysis.labels.corrected import SHOWN, count_text, interval, num

    labelled = f"{r.n_labelled}/{r.N}"
    head = f"  {r.method:<20} {r.metric:<20} {num(r.judge_mean):>7} "
    if r.status not in SHOWN:
        return head + f"{count_text(r.n_labelled, r.N):>27} {labelled:>10}"
    bias = f"{num(r.bias, sign=True)} {interval(r.bias_low, r.bias_high)}"
    return (head + f"{num(r.corrected):>9} {interval(r.ci_low, r.ci_high):>17} {labelled:>10} {bias:>25} "
            f"{num(r.rho, 2):>6} {num(r.width_ratio, 2):>6}")


def _no_sample_line(store, run_id: str) -> str:
    """Why a run has no corrected numbers: no sampled labels yet, or labels that name a random
    sample which fails its checks (they count as hand-picked; `store check` lists every one)."""
    from evalcore.analysis.labels.sample_audit import findings

    found = findings(store, run_id)
    if found:
        return (f"no verified random sample: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
                + "; `evalcore store check` lists them")
    return "no randomly sampled labels in this run yet (Annotate, random sample mode; or `evalcore labels import`)"


def print_corrected_means(store, run_id: str) -> None:
    """`show RUN --corrected`: judge mean beside the human-corrected one, per method x metric."""
    from evalcore.analysis.labels.corrected import ALL_LABELLED, MIN_LABELS, corrected_means

    table = corrected_means(store, run_id)
    if table.empty:
        echo_line("corrected: " + _no_sample_line(store, run_id))
        return
    typer.echo(f"human-corrected means (PPI++ with {MIN_LABELS}+ randomly sampled labels, or every answer of a "
               "smaller population; 95% CI):")
    typer.echo(f"  {'method':<20} {'metric':<20} {'judge':>7} {'corrected':>9} {'95% CI':>17} {'labelled':>10} "
               f"{'judge bias [CI]':>25} {'rho':>6} {'width':>6}")
    for r in table.itertuples(index=False):
        echo_line(_means_line(r))
    typer.echo(WIDTH_NOTE)
    if (table.status == ALL_LABELLED).any():
        typer.echo("n/n labelled: every answer of the population is labelled, so the corrected value is its exact "
                   "human mean; the CI is the labels-alone one, for answers like these")


def corrected_table(store, result, record: dict, metrics: Optional[list[str]], seed: int):
    """`compare --corrected`'s rows: every metric with random labels on both sides (or those of
    `metrics`), the judge side taken from the comparison's own table (`result`, `record`)."""
    from evalcore.analysis.labels.corrected import corrected_compare, main_table_judge

    outcomes = {(row["candidate"], row["metric"]): row["outcome"] or "–" for row in record["metrics"]}
    judged = main_table_judge(result.table, outcomes)
    base = (result.baseline.run_id, result.baseline.method)
    return corrected_compare(store, base, [(c.run_id, c.method) for c in result.candidates], metrics,
                             judged=judged, alpha=result.alpha, seed=seed)


def _delta_line(r: Any) -> str:
    from evalcore.analysis.labels.corrected import APART, SHOWN, delta_shown, interval, num

    tested = " (tested apart: not in the table above)" if r.judge_tested == APART else ""
    left = f"judge {num(r.judge_delta, sign=True)} {interval(r.judge_low, r.judge_high)} {r.judge_verdict}{tested}"
    if r.status not in SHOWN:
        right = f"corrected: {delta_shown(r._asdict())}"
    else:
        right = (f"corrected {delta_shown(r._asdict())} {r.corrected_verdict}"
                 + ("  (verdict changes)" if r.verdict_changes else "")
                 + f"  rho {num(r.rho, 2)}  labels alone {interval(r.classical_low, r.classical_high)}"
                 + f"  width {num(r.width_ratio, 2)}")
    return f"  {r.candidate:<28} {r.metric:<20} {left:<48} {right}  n={r.n_labelled}/{r.N}"


def print_corrected_compare(store, result, record: dict, metrics: Optional[list[str]], seed: int) -> None:
    """`compare A B --corrected`: judge Δ (the table above's) vs corrected Δ, side by side."""
    from evalcore.analysis.labels.corrected import MIN_LABELS

    table = corrected_table(store, result, record, metrics, seed)
    if table.empty:
        typer.echo("corrected: no questions labelled at random on both sides yet")
        return
    typer.echo(f"judge Δ (as in the table above) vs human-corrected Δ (paired PPI++ on per-question differences; "
               f"{MIN_LABELS}+ questions labelled on both sides, or every paired question; unadjusted 95% CI):")
    for r in table.itertuples(index=False):
        echo_line(_delta_line(r))
    typer.echo(WIDTH_NOTE)


def summary_cmd(run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
                as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Judge calibration against randomly sampled labels: kappa, bias, rho and a reading per
    method x metric (the Runs page and Annotate show the same table)."""
    from evalcore.analysis.labels.calibration import summary
    from evalcore.analysis.labels.corrected import interval, num
    from evalcore.cli.context import print_table

    store = state.store()
    run_id = store.resolve(run)
    table = summary(store, run_id, per_method=True)
    if as_json:
        typer.echo(json.dumps({"run_id": run_id, "calibration": json.loads(
            table.to_json(orient="records", double_precision=15, force_ascii=False))}, ensure_ascii=False, indent=2))
        return
    if table.empty:
        echo_line(f"run {run_id}: " + _no_sample_line(store, run_id))
        return
    print_table(f"judge calibration of run {run_id} (randomly sampled labels only)",
                ["method", "metric", "judge", "answers", "items", "kappa [95% CI]", "bias (judge − human) [95% CI]",
                 "rho", "reading"],
                [[r.method, r.metric, r.judge, str(r.n_answers), str(r.n_items),
                  " ".join(x for x in (num(r.kappa, 2), interval(r.kappa_low, r.kappa_high, 2)) if x != "–") or "–",
                  f"{num(r.bias, sign=True)} {interval(r.bias_low, r.bias_high)}", num(r.rho, 2), r.advice]
                 for r in table.itertuples(index=False)])
    typer.echo("reading: trust its mean (no bias detected, kappa >= 0.6) · biased: use corrected (rho >= 0.5) · "
               "weak: rely on labels · too few to say (under 30 sampled answers)")


def register_labels(labels_app: typer.Typer) -> None:
    """The `labels` subcommands that print from labels (beside import/export)."""
    labels_app.command("summary")(summary_cmd)
