"""The forest plot's rows say what the verdict says (issue 24, item 1): one row per tested
metric, Δ and CI from the pair table, shaded better / worse / not significant in the metric's
own direction, Holm p and n in the row label, scores on a shared axis, other scales apart."""

from __future__ import annotations

import pandas as pd

from evalcore.analysis.comparison import verdict as V
from evalcore.analysis.comparison.forest import SCORE_PANEL, forest_rows, row_label


def _row(metric, delta, lo, hi, p_holm, n, sd=0.1, span=1.0, hib=True):
    return {"metric": metric, "higher_is_better": hib, "n_pairs": n, "delta": delta, "ci_low": lo, "ci_high": hi,
            "p_holm": p_holm, "sd_diff": sd, "span": span}


TABLE = pd.DataFrame([_row("faithfulness", -0.0318, -0.0681, -0.0035, 0.25, 40),
                      _row("token_f1", 0.2, 0.1, 0.3, 0.001, 40),
                      _row("context_recall", 0.01, -0.02, 0.04, 0.9, 40, sd=0.05),
                      _row("latency_ms", 30.0, 10.0, 50.0, 0.01, 40, hib=False, sd=40, span=900),
                      _row("mrr", 0.1, 0.0, 0.2, float("nan"), 40)])  # not tested: no Holm p


def _rows():
    lines = V.verdict_lines(TABLE, "base", "cand")
    return forest_rows(TABLE, lines).set_index("metric")


def test_one_row_per_tested_metric_with_the_pair_tables_numbers():
    rows = _rows()
    assert list(rows.index) == ["faithfulness", "token_f1", "context_recall", "latency_ms"]
    assert rows.loc["token_f1", ["delta", "ci_low", "ci_high", "p_holm", "n"]].tolist() == [0.2, 0.1, 0.3, 0.001, 40]


def test_shades_follow_the_verdict_in_the_metrics_own_direction():
    rows = _rows()
    assert rows.loc["token_f1", "shade"] == "better"
    # latency went up by 30 ms, significantly: lower is better, so the candidate is worse
    assert rows.loc["latency_ms", "shade"] == "worse"
    # CI excludes 0 but Holm p does not: not significant in the picture, as in the sentence
    assert rows.loc["faithfulness", ["outcome", "shade"]].tolist() == ["not significant", "not significant"]
    assert rows.loc["context_recall", "shade"] == "not significant"


def test_row_label_carries_holm_p_and_n_and_the_direction():
    rows = _rows()
    assert rows.loc["token_f1", "label"] == "token_f1 · Holm p = 0.001 · n = 40"
    assert rows.loc["latency_ms", "label"] == "latency_ms (lower is better) · Holm p = 0.01 · n = 40"
    assert row_label("x", float("nan"), 1, True) == "x · Holm p = – · n = 1"


def test_scores_share_an_axis_and_other_scales_get_their_own():
    rows = _rows()
    assert set(rows.loc[["faithfulness", "token_f1", "context_recall"], "panel"]) == {SCORE_PANEL}
    assert rows.loc["latency_ms", "panel"] == "latency_ms"


def test_no_tested_metric_gives_no_rows():
    assert forest_rows(TABLE, V.verdict_lines(TABLE.iloc[0:0], "a", "b")).empty
