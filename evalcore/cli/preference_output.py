"""What `compare --corrected` prints from pairwise preference labels: the corrected win rate.

Every number comes from evalcore.analysis.labels.win_rate, the function the Compare page calls.
The judge side of each row is the comparison's own table: the metrics it compared, each giving
the judge's per-question preference (docs/labels.md, "Pairwise preferences"). Where the text
withholds a number (fewer than 50 labels), `--json` carries null with the row's status.
"""

from __future__ import annotations

from typing import Any

import typer

from evalcore.cli.context import echo_line


def preference_table(store: Any, result: Any):
    """The corrected win rate of each candidate over the baseline, per metric of the comparison's
    table, where the pair holds randomly sampled preference labels (rows without a question
    scored on both sides are left out)."""
    from evalcore.analysis.labels.win_rate import win_rates

    metrics: dict[str, list[str]] = {}
    for cand, metric in zip(result.table["candidate"], result.table["metric"]):
        metrics.setdefault(cand, []).append(metric)
    base = (result.baseline.run_id, result.baseline.method)
    table = win_rates(store, base, [(c.run_id, c.method) for c in result.candidates], metrics, alpha=result.alpha)
    return table[table.N > 0].reset_index(drop=True)


def _line(r: Any) -> str:
    from evalcore.analysis.labels.win_rate import SHOWN, interval, judge_shown, num, shown

    left = f"judge {judge_shown(r._asdict())} {r.judge_verdict or ''}".rstrip()
    if r.status not in SHOWN:
        right = f"corrected: {shown(r._asdict())}"
    else:
        right = (f"corrected {shown(r._asdict())} {r.corrected_verdict}"
                 + ("  (verdict changes)" if r.verdict_changes else "")
                 + f"  rho {num(r.rho, 2)}  labels alone {interval(r.classical_low, r.classical_high)}"
                 + f"  width {num(r.width_ratio, 2)}")
    return f"  {r.candidate:<28} {r.metric:<20} {left:<40} {right}  n={r.n_labelled}/{r.N}"


def print_preferences(store: Any, result: Any) -> None:
    """`compare A B --corrected`: the judge's win rate beside the human-corrected one (nothing
    when no pair of the comparison has randomly sampled preference labels)."""
    from evalcore.analysis.labels.win_rate import MIN_LABELS

    table = preference_table(store, result)
    if table.empty:
        return
    typer.echo(f"win rate of the candidate over the baseline (pairwise preferences, ties half): the judge's "
               f"preference by each metric vs human-corrected (PPI++ with {MIN_LABELS}+ questions labelled at "
               "random, or every paired question; unadjusted 95% CI; better/worse: the CI is above/below 0.5):")
    for r in table.itertuples(index=False):
        echo_line(_line(r))


def preference_json(store: Any, result: Any) -> list[dict[str, Any]]:
    """The rows of print_preferences for `compare --json` (null where the text withholds)."""
    import json

    return json.loads(preference_table(store, result).to_json(orient="records", double_precision=15,
                                                              force_ascii=False))
