"""Compare reads metric_wide (one row per answer) and gives the numbers the long metric rows give.

Every figure of a paired comparison — each metric's paired n, means, Δ and improved / regressed /
unchanged / missing counts, the tested metrics' pairs in question_id order (the seeded bootstrap
draws from them), the changed-question lists and counts, `compare`'s table — is checked here
against a reference computed in pandas straight from the long `metrics` rows, on a synthetic
store and on a run holding the edge cases: a metric scored on one side only, NaN values with
reasons, a metric that is NaN everywhere, questions answered by one side only, and a metric
name with quotes and an `@`.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from evalcore.analysis.comparison import compare as C
from evalcore.analysis.read.catalog import direction
from evalcore.analysis.comparison.compare import EPS
from evalcore.analysis.comparison.compare import tested_rows as statistics_of  # not a test (its name starts with "test")
from evalcore.demo.synthetic import build_store
from evalcore.errors import EvalcoreError
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df

ODD = 'it\'s "odd"@5'  # quotes and an @: a name, never SQL
EDGE = "edge"
DELTA_COLUMNS = ["metric", "n_pairs", "mean_a", "mean_b", "delta", "unchanged", "missing", "higher_is_better",
                 "improved", "regressed"]


def _edge_run(store: RunStore) -> None:
    """Methods a and b: q1 answered by a only, q8 by b only; token_f1 with ties, latency_ms
    (lower is better), faithfulness NaN (with a reason) on some questions, exact_match on a
    only, groundedness NaN everywhere, ODD on both."""
    qids = [f"q{i}" for i in range(1, 9)]
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=EDGE, name=EDGE,
                                          evalcore_version="test", methods=["a", "b"]))
    writer.write_questions([EvalQuestion(id=q, question=f"question {q}?", category="c") for q in qids])
    answered = {"a": qids[:7], "b": qids[1:]}
    writer.write_responses([EvalResponse(question_id=q, method=m, answer="x", latency_ms=1.0)
                            for m, qs in answered.items() for q in qs])
    rows = []
    for m, qs in answered.items():
        for i, q in enumerate(qs):
            base = dict(run_id=EDGE, method=m, question_id=q, group="lexical")
            shift = 0.25 if m == "b" and i % 3 else 0.0
            rows.append(MetricValue(metric="token_f1", value=0.1 * (i % 4) + shift, **base))
            rows.append(MetricValue(metric="latency_ms", value=100.0 - 10 * shift * i, **base))
            rows.append(MetricValue(metric=ODD, value=float((i + (m == "b")) % 2), **base))
            nan = (m == "a" and i in (1, 4)) or (m == "b" and i == 2)
            rows.append(MetricValue(metric="faithfulness", value=math.nan if nan else 0.5 + 0.05 * i,
                                    reason="no claims" if nan else None, **base))
            rows.append(MetricValue(metric="groundedness", value=math.nan, reason="no contexts", **base))
            if m == "a":
                rows.append(MetricValue(metric="exact_match", value=float(i % 2), **base))
    writer.write_metrics(rows)
    writer.publish()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RunStore:
    root = tmp_path_factory.mktemp("wide_compare") / "runs"
    build_store(root, n_runs=2, n_questions=60)
    st = RunStore(root)
    _edge_run(st)
    return st


def _pairs_of_interest(store: RunStore) -> list[tuple[str, str]]:
    synthetic = sorted(r for r in store.run_ids() if r != EDGE)
    first, second = synthetic
    return [(f"{first}:basic_search", f"{first}:local_search"),  # two methods of one run
            (f"{first}:local_search", f"{second}:basic_search"),  # across runs
            (f"{EDGE}:a", f"{EDGE}:b"), (f"{EDGE}:b", f"{EDGE}:a")]


# ---- the reference: pandas over the long metric rows ------------------------------------------
def _long(store: RunStore, key: str) -> pd.DataFrame:
    run_id, _, method = key.partition(":")
    rows = query_df(store, "SELECT question_id, metric, value FROM metrics WHERE run_id = ? AND method = ?",
                    [run_id, method])
    return rows[rows["value"].notna()]  # NaN (with its reason) is not a value


def _outer(store: RunStore, base: str, cand: str) -> pd.DataFrame:
    return _long(store, base).merge(_long(store, cand), on=["question_id", "metric"], how="outer",
                                    suffixes=("_a", "_b"))


def _ref_deltas(store: RunStore, base: str, cand: str) -> pd.DataFrame:
    rows = []
    for metric, g in sorted(_outer(store, base, cand).groupby("metric"), key=lambda kv: kv[0]):
        both = g.dropna(subset=["value_a", "value_b"])
        d = both["value_b"] - both["value_a"]
        hib = direction(metric)[0]
        up, down = int((d > EPS).sum()), int((d < -EPS).sum())
        rows.append({"metric": metric, "n_pairs": len(both),
                     "mean_a": both["value_a"].mean() if len(both) else np.nan,
                     "mean_b": both["value_b"].mean() if len(both) else np.nan,
                     "delta": d.mean() if len(both) else np.nan, "unchanged": int((d.abs() <= EPS).sum()),
                     "missing": int((g["value_a"].isna() != g["value_b"].isna()).sum()), "higher_is_better": hib,
                     "improved": up if hib else down, "regressed": down if hib else up})
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def _ref_pairs(store: RunStore, base: str, cand: str, metric: str) -> pd.DataFrame:
    j = _outer(store, base, cand)
    j = j[(j["metric"] == metric) & j["value_a"].notna() & j["value_b"].notna()]
    return j.sort_values("question_id")[["question_id", "value_a", "value_b"]].reset_index(drop=True)


def _ref_changed(store: RunStore, base: str, cand: str, metric: str, outcome: str) -> pd.DataFrame:
    j = _outer(store, base, cand)
    j = j[j["metric"] == metric].assign(delta=lambda f: f["value_b"] - f["value_a"])
    sign = 1.0 if direction(metric)[0] else -1.0
    keep = {"improved": sign * j["delta"] > EPS, "regressed": sign * j["delta"] < -EPS,
            "unchanged": j["delta"].abs() <= EPS, "missing": j["delta"].isna()}[outcome]
    j = j[keep].assign(size=lambda f: f["delta"].abs())
    return j.sort_values(["size", "question_id"], ascending=[False, True], na_position="last",
                         kind="stable").reset_index(drop=True)


def _tested_metrics(store: RunStore, base: str, cand: str) -> list[str]:
    table = _ref_deltas(store, base, cand)
    return [m for m in ("faithfulness", "token_f1", ODD, "latency_ms") if m in set(table.metric)]


# ---- the tests --------------------------------------------------------------------------------
def test_metric_deltas_equal_the_long_rows(store):
    for base, cand in _pairs_of_interest(store):
        got, want = C.metric_deltas(store, base, cand), _ref_deltas(store, base, cand)
        assert list(got.columns) == DELTA_COLUMNS
        assert got["metric"].tolist() == want["metric"].tolist(), (base, cand)  # sorted by name
        assert got.dtypes[["n_pairs", "unchanged", "missing", "improved", "regressed"]].eq("int64").all()
        assert got["higher_is_better"].dtype == bool
        # counts exactly; means up to the order the values are summed in
        pd.testing.assert_frame_equal(got, want, check_dtype=False, check_exact=False, rtol=1e-12, atol=0)


def test_edge_cases_are_counted_as_the_long_rows_count_them(store):
    got = C.metric_deltas(store, f"{EDGE}:a", f"{EDGE}:b").set_index("metric")
    assert "groundedness" not in got.index  # NaN on every question: nothing to compare
    # scored on a only: no pairs, every scored question missing on the other side
    assert got.loc["exact_match", ["n_pairs", "missing"]].tolist() == [0, 7]
    assert math.isnan(got.loc["exact_match", "delta"])
    # 6 questions answered by both; faithfulness NaN on 3 of them (one side each), on q1 (a only)
    assert got.loc["faithfulness", ["n_pairs", "missing"]].tolist() == [3, 5]
    assert got.loc[ODD, "n_pairs"] == 6 and got.loc["latency_ms", "higher_is_better"] == False  # noqa: E712


def test_pairs_equal_the_long_rows_in_question_order(store):
    for base, cand in _pairs_of_interest(store):
        tested = _tested_metrics(store, base, cand)
        got = C.paired_values(store, base, cand, tuple(tested))
        want = pd.concat([_ref_pairs(store, base, cand, m).assign(metric=m) for m in sorted(tested)],
                         ignore_index=True)
        assert list(got.columns) == ["question_id", "metric", "a", "b"]
        assert got["question_id"].tolist() == want["question_id"].tolist()
        assert got["metric"].tolist() == want["metric"].tolist()
        np.testing.assert_array_equal(got["a"].to_numpy(), want["value_a"].to_numpy())
        np.testing.assert_array_equal(got["b"].to_numpy(), want["value_b"].to_numpy())


def test_pair_table_and_compare_test_the_same_pairs(store):
    """The seeded bootstrap and permutations see the reference's pairs in the reference's order:
    the CIs and p-values are the very same numbers."""
    for base, cand in _pairs_of_interest(store):
        tested = _tested_metrics(store, base, cand)
        pairs = {m: (p["value_a"].to_numpy(float), p["value_b"].to_numpy(float))
                 for m in tested for p in [_ref_pairs(store, base, cand, m)]}
        want = pd.DataFrame(statistics_of(pairs, base, cand, 100, 200, 3, C.ALPHA)).set_index("metric")
        table = C.pair_table(store, base, cand, tuple(tested), n_boot=100, n_perm=200, seed=3).set_index("metric")
        stats = ["ci_low", "ci_high", "test", "p_value", "p_holm", "significant", "sd_diff", "span", "mde"]
        pd.testing.assert_frame_equal(table.loc[tested, stats], want.loc[tested, stats], check_dtype=False,
                                      check_exact=True)
        assert table.loc[[m for m in table.index if m not in tested], "p_holm"].isna().all()
        result = C.compare(store, [base, cand], metrics=tested, n_boot=100, n_perm=200, seed=3,
                           with_run_level=False).table.set_index("metric")
        cols = ["n_pairs", "mean_a", "mean_b", "delta", *stats]
        pd.testing.assert_frame_equal(result.loc[tested, cols], want.loc[tested, cols], check_dtype=False,
                                      check_exact=True)


def test_compare_of_every_metric_takes_those_stored_on_both_sides(store):
    result = C.compare(store, [f"{EDGE}:a", f"{EDGE}:b"], n_boot=50, n_perm=50, with_run_level=False).table
    # exact_match is stored for a only, groundedness has no value anywhere
    assert result["metric"].tolist() == sorted(["token_f1", "latency_ms", ODD, "faithfulness"])
    for r in result.itertuples():
        ref = _ref_pairs(store, f"{EDGE}:a", f"{EDGE}:b", r.metric)
        assert r.n_pairs == len(ref) and r.missing == 8 - len(ref)  # 8 questions answered by either side
    with pytest.raises(EvalcoreError, match="exact_match not scored for both"):
        C.compare(store, [f"{EDGE}:a", f"{EDGE}:b"], metrics=["exact_match"])


@pytest.mark.parametrize("outcome", ["improved", "regressed", "unchanged", "missing"])
def test_changed_questions_equal_the_long_rows(store, outcome):
    searched = 0
    for base, cand in _pairs_of_interest(store):
        for metric in [m for m in _tested_metrics(store, base, cand) if m != "faithfulness"]:
            want = _ref_changed(store, base, cand, metric, outcome)
            got = C.changed_questions(store, base, cand, metric, outcome)
            assert got["question_id"].tolist() == want["question_id"].tolist(), (base, cand, metric)
            np.testing.assert_array_equal(got["base"].to_numpy(float), want["value_a"].to_numpy(float))
            np.testing.assert_array_equal(got["cand"].to_numpy(float), want["value_b"].to_numpy(float))
            assert C.changed_count(store, base, cand, metric, outcome) == len(want)
            assert C.changed_questions(store, base, cand, metric, outcome, limit=2)["question_id"].tolist() == \
                want["question_id"].tolist()[:2]
            # a search: in the question id or the (baseline run's) question text, any case
            texts = query_df(store, "SELECT question_id, question FROM questions WHERE run_id = ?",
                             [base.partition(":")[0]]).set_index("question_id")["question"]
            hay = (want["question_id"] + " " + want["question_id"].map(texts).fillna("")).str.lower()
            needle = "q1" if base.startswith(EDGE) else "q0001"  # q1 / q00010-q00019
            found = want[hay.str.contains(needle, regex=False)]["question_id"].tolist()
            search = needle.upper()
            assert C.changed_questions(store, base, cand, metric, outcome, text=search)["question_id"].tolist() == found
            assert C.changed_questions(store, base, cand, metric, outcome, limit=1, text=search)[
                "question_id"].tolist() == found[:1]
            assert C.changed_count(store, base, cand, metric, outcome, text=search) == len(found)
            searched += len(found)
    assert searched > 0 or outcome == "unchanged"  # the search found something to compare


def test_compare_reads_no_metric_rows(store, monkeypatch):
    """The per-metric figures come from metric_wide (one row per answer), never from the long
    `metrics` rows (30 per answer): recorded over every SQL text the comparison runs."""
    import duckdb

    seen: list[str] = []
    real = duckdb.DuckDBPyConnection.execute

    class Recording:
        def __init__(self, con):
            self._con = con

        def execute(self, sql, *args, **kwargs):
            seen.append(sql)
            return real(self._con, sql, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._con, name)

    from contextlib import contextmanager

    from evalcore.analysis.comparison import side_by_side as S
    from evalcore.store import views

    real_open = views.open_db

    @contextmanager
    def recording_open(*args, **kwargs):
        with real_open(*args, **kwargs) as con:
            yield Recording(con)

    for module in (S, views):
        monkeypatch.setattr(module, "open_db", recording_open)
    base, cand = _pairs_of_interest(store)[2]
    C.pair_table(store, base, cand, ("token_f1", ODD))
    C.paired_values(store, base, cand, ("token_f1",))
    C.changed_questions(store, base, cand, "token_f1", "regressed")
    C.changed_count(store, base, cand, "token_f1", "regressed")
    C.compare(store, [base, cand], metrics=["token_f1"], n_boot=20, n_perm=20, with_run_level=False)
    C.compare(store, [base, cand], n_boot=20, n_perm=20, with_run_level=False)
    assert seen and any("metric_wide" in sql for sql in seen)
    long_reads = [sql for sql in seen if re.search(r"\bFROM\s+metrics\b", sql, re.IGNORECASE)]
    assert long_reads == []


def test_comparability_counts_the_questions_each_side_answered(store):
    from evalcore.analysis.comparison.verdict import comparability

    warnings = comparability(store, f"{EDGE}:a", f"{EDGE}:b", ["token_f1"])
    assert warnings == ["different question sets: 1 only in baseline, 1 only in candidate "
                        "(6 shared, compared on those)"]
    assert comparability(store, f"{EDGE}:a", f"{EDGE}:a", ["token_f1"]) == []
