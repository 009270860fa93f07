"""The Compare page's pair: its table and its verdict in one call the page caches.

The verdict is verdict.pair_verdict, the one `evalcore compare --json` and the reports print, so
the page cannot say something the terminal does not."""

from __future__ import annotations

import pandas as pd

from evalcore.analysis.comparison.compare import pair_table
from evalcore.analysis.comparison.verdict import PairVerdict, pair_verdict
from evalcore.store import RunStore


def pair_comparison(store: RunStore, base: str, cand: str, tested: tuple[str, ...], base_name: str,
                    cand_name: str) -> tuple[pd.DataFrame, PairVerdict]:
    """The Compare page's table and its verdict (verdict.pair_verdict: the one the terminal and
    the reports print too), in one call the page caches."""
    table = pair_table(store, base, cand, tested)
    said = pair_verdict(store, table, base, cand, base_name, cand_name)
    place = {metric: i for i, metric in enumerate(tested)}  # the sentences in the order the metrics were picked
    lines = said.lines.sort_values("metric", key=lambda m: m.map(place), kind="stable").reset_index(drop=True)
    return table, PairVerdict(lines, said.summary, said.warnings)
