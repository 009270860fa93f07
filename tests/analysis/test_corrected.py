"""Human-corrected estimates: ppi_py's estimators fed from the store's randomly sampled labels.

Parity: the store-level numbers equal ppi_py's functions on arrays this test assembles itself from
what it labelled. Validity: a bounded, seeded coverage simulation. Trust: hand-picked labels,
partly labelled answers and old labels (written before sample fields existed) never feed an estimate.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.optional import requires

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import corrected as C
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.store import query_df
from evalcore.schemas import Annotation

METHODS = ("local_search", "basic_search")


@pytest.fixture(scope="module")
def ppi_py():
    """The reference (ppi-python), imported by the tests that compare with it: at this module's
    import it cost every xdist worker ~2 s of the suite's collection (statsmodels, numba...)."""
    return requires("ppi_py", "the labels extra: prediction-powered inference")


def _fixed(n=120, big_n=600, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.binomial(1, 0.4, n).astype(float)
    yhat = np.clip(0.25 * y + 0.4 + rng.normal(0, 0.25, n), 0, 1)
    rest = np.clip(0.25 * rng.binomial(1, 0.4, big_n) + 0.4 + rng.normal(0, 0.25, big_n), 0, 1)
    return y, yhat, rest


def test_estimate_is_ppi_py_power_tuned_on_fixed_inputs(ppi_py):
    y, yhat, rest = _fixed()
    out = C.estimate(y, yhat, rest)
    lo, hi = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=None))
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    assert out["corrected"] == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None))[0]))
    clo, chi = np.ravel(ppi_py.classical_mean_ci(y, alpha=0.05))
    assert (out["classical_low"], out["classical_high"]) == pytest.approx((clo, chi))
    # plain PPI (lam=1) is a different interval: the power-tuned one is what we report
    plo, phi = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=1))
    assert (out["ci_low"], out["ci_high"]) != pytest.approx((plo, phi), abs=1e-6)
    assert out["bias"] == pytest.approx(float((yhat - y).mean()))
    assert out["bias_low"] < out["bias"] < out["bias_high"]
    assert out["rho"] == pytest.approx(float(np.corrcoef(y, yhat)[0, 1]))
    # the width ratios read labels-alone width over corrected width (what the text column prints);
    # at PPI++'s tuned lambda rho implies about 1 / sqrt(1 - rho^2 N / (N + n))
    assert out["width_ratio"] == pytest.approx((chi - clo) / (hi - lo))
    assert 0 < out["lam"] < 1
    assert out["implied_width_ratio"] == pytest.approx(1 / math.sqrt(1 - out["rho"] ** 2 * 600 / 720), rel=0.05)
    assert out["judge_mean"] == pytest.approx(float(np.concatenate([yhat, rest]).mean()))
    assert (out["n_labelled"], out["N"], out["status"]) == (120, 720, "ok")


def test_below_fifty_labels_no_estimate_is_called_ok():
    y, yhat, rest = _fixed(n=49)
    out = C.estimate(y, yhat, rest)
    assert out["status"] == "too_few"
    assert C.shown(out) == "49 of 50 labels"


def test_labels_to_target_follows_one_over_root_n():
    assert C.labels_to_target(100, 0.10) == 300  # 4x the labels halve the width
    assert C.labels_to_target(100, 0.04) == 0


def test_coverage_simulation_ppi_pp_covers_where_the_judge_alone_misses():
    """200 seeded draws of n=100 labels from a fixed population with a judge biased by +0.2:
    PPI++'s 95% interval covers the human mean at least 90% of the time (binomial slack for 200
    draws), while the judge's own mean is off by 0.2 every time."""
    rng = np.random.default_rng(11)
    big_n = 3000
    human = rng.binomial(1, 0.35, big_n).astype(float)
    judge = np.clip(0.5 * human + 0.2 + 0.2 + rng.normal(0, 0.2, big_n), 0, 1)
    truth = human.mean()
    hits = 0
    for _ in range(200):
        idx = rng.choice(big_n, 100, replace=False)
        mask = np.zeros(big_n, bool)
        mask[idx] = True
        out = C.estimate(human[mask], judge[mask], judge[~mask])
        hits += out["ci_low"] <= truth <= out["ci_high"]
    assert hits / 200 >= 0.90
    assert judge.mean() - truth > 0.15


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A synthetic run; answer_class labelled on the first 60 answers of the seeded order for both
    methods (human = NOT the judge's class on every 4th), plus hand-picked labels elsewhere."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path_factory.mktemp("ppi") / "runs", n_runs=1, n_questions=90, n_metrics=4)
    run = store.run_ids()[0]
    truth: dict[tuple[str, str], float] = {}
    rows = []
    for method in METHODS:
        judged = query_df(store, "SELECT question_id, label FROM metrics WHERE run_id = ? AND method = ? "
                                 "AND metric = 'answer_class'", [run, method])
        judge_label = dict(zip(judged.question_id, judged.label))
        order = S.order(list(judge_label), seed=0)
        for pos, q in enumerate(order[:60]):
            flip = pos % 4 == 0
            label = ("WRONG" if judge_label[q] == "CORRECT" else "CORRECT") if flip else judge_label[q]
            truth[(method, q)] = float(label == "CORRECT")
            item = dict(run_id=run, method=method, question_id=q, target_kind="answer_class",
                        target_ref="answer_class", judge_label=judge_label[q])
            rows.append(A.build(item, "ann", label, None, (S.sample_id(0), S.inclusion_prob(pos, len(order)))))
        for q in order[60:70]:  # hand-picked: counts for agreement, never for estimates
            item = dict(run_id=run, method=method, question_id=q, target_kind="answer_class",
                        target_ref="answer_class", judge_label=judge_label[q])
            rows.append(A.build(item, "ann", "WRONG", "picked by hand"))
    store.append_annotations(rows)
    return store, run, truth


def _judge(store, run, method):
    out = query_df(store, "SELECT question_id, value FROM metrics WHERE run_id = ? AND method = ? "
                          "AND metric = 'answer_class'", [run, method])
    return dict(zip(out.question_id, out.value))


def test_store_estimate_equals_ppi_py_on_the_sampled_labels_only(labelled, ppi_py):
    store, run, truth = labelled
    method = "basic_search"
    judge = _judge(store, run, method)
    lab = [q for (m, q) in truth if m == method]
    y = np.array([truth[(method, q)] for q in lab])
    yhat = np.array([judge[q] for q in lab])
    rest = np.array([v for q, v in judge.items() if q not in set(lab)])
    got = C.system_estimate(store, run, method, "answer_class")
    lo, hi = np.ravel(ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=None))
    assert got["n_labelled"] == 60 and got["N"] == 90
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi))
    table = C.corrected_means(store, run)
    assert set(table.method) == set(METHODS)
    assert table.set_index("method").loc[method, "corrected"] == pytest.approx(got["corrected"])


def test_paired_delta_is_ppi_on_per_question_differences(labelled, ppi_py):
    store, run, truth = labelled
    ja, jb = _judge(store, run, METHODS[0]), _judge(store, run, METHODS[1])
    both = [q for (m, q) in truth if m == METHODS[0] and (METHODS[1], q) in truth]
    assert len(both) == 60  # the shared seeded order labels the same questions on both sides
    d = np.array([truth[(METHODS[1], q)] - truth[(METHODS[0], q)] for q in both])
    dhat = np.array([jb[q] - ja[q] for q in both])
    rest = np.array([jb[q] - ja[q] for q in ja if q not in set(both)])
    got = C.corrected_delta(store, (run, METHODS[0]), (run, METHODS[1]), "answer_class")
    lo, hi = np.ravel(ppi_py.ppi_mean_ci(d, dhat, rest, alpha=0.05, lam=None))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi))
    assert got["judge_delta"] == pytest.approx(np.mean([jb[q] - ja[q] for q in ja]))
    assert got["corrected_verdict"] in ("better", "worse", "no clear difference")


def test_a_partly_labelled_answer_is_not_labelled(tmp_path):
    """faithfulness: an answer counts only when every claim has a human verdict."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=4, n_metrics=1)
    run = store.run_ids()[0]
    first = S.next_answer(store, run, "basic_search", "faithfulness")  # the sample's first answer
    q = first.question_id
    items = U.items_of_answer(store, run, "basic_search", "faithfulness", q)
    assert len(items) == 3
    rows = [A.build(dict(run_id=run, method="basic_search", question_id=q, target_kind="claim",
                         target_ref=r.target_ref, judge_label=r.judge_label), "ann", "supported", None,
                    (first.sample_id, first.inclusion_prob)) for r in items.itertuples()]
    store.append_annotations(rows[:2])
    ans = U.answers(store, run, "basic_search", "faithfulness").set_index("question_id")
    assert math.isnan(ans.loc[q, "human"])
    assert S.next_answer(store, run, "basic_search", "faithfulness").question_id == q  # offered again
    store.append_annotations(rows[2:])
    ans = U.answers(store, run, "basic_search", "faithfulness").set_index("question_id")
    assert ans.loc[q, "sampled"] and ans.loc[q, "human"] == 1.0


def test_labels_written_before_sample_fields_read_as_hand_picked(store):
    """An annotations part file in the old schema (no sample_id / inclusion_prob) still reads, as
    hand-picked; a new sampled label beside it keeps its fields."""
    store.annotations_dir().mkdir(parents=True)
    old = pa.table({"annotation_id": ["old"], "who": ["ann"], "when": pa.array([pd.Timestamp("2025-01-01", tz="UTC")]),
                    "run_id": ["r1"], "method": ["m"], "question_id": ["q1"], "target_kind": ["answer_class"],
                    "target_ref": ["answer_class"], "judge_label": ["CORRECT"], "label": ["WRONG"], "note": [None]})
    pq.write_table(old, store.annotations_dir() / "part-old.parquet")
    only_old = query_df(store, "SELECT count(*) AS n FROM annotations WHERE sample_id IS NULL AND inclusion_prob IS NULL")
    assert only_old.n.tolist() == [1]
    store.append_annotations([Annotation(annotation_id="new", who="ann", run_id="r1", method="m", question_id="q2",
                                         target_kind="answer_class", target_ref="answer_class", label="CORRECT",
                                         sample_id="srs:0", inclusion_prob=0.5)])
    got = query_df(store, "SELECT annotation_id, sample_id, inclusion_prob FROM annotations ORDER BY annotation_id")
    assert got.annotation_id.tolist() == ["new", "old"]
    assert got.sample_id.tolist()[0] == "srs:0" and got.inclusion_prob.tolist()[0] == 0.5
    assert pd.isna(got.sample_id.tolist()[1]) and pd.isna(got.inclusion_prob.tolist()[1])


def test_a_sample_id_needs_its_inclusion_probability():
    base = dict(annotation_id="a", who="w", run_id="r", target_kind="claim", target_ref="x", label="supported")
    with pytest.raises(ValueError, match="go together"):
        Annotation(**base, sample_id="srs:0")
    with pytest.raises(ValueError):
        Annotation(**base, sample_id="srs:0", inclusion_prob=0.0)
    assert Annotation(**base).sample_id is None


def test_order_is_seeded_and_the_same_for_every_method():
    qs = [f"q{i}" for i in range(50)]
    assert S.order(qs, 0) == S.order(list(reversed(qs)), 0)
    assert S.order(qs, 0) != S.order(qs, 1)
    assert S.inclusion_prob(0, 100) == 0.2 and S.inclusion_prob(20, 100) == 0.4 and S.inclusion_prob(99, 30) == 1.0


def test_order_is_the_documented_sha256_order():
    """The order is defined as sorting by hex sha256("<seed>:<id>") of the UTF-8 text (stored
    labels' inclusion probabilities rest on it): computed in DuckDB, it must equal hashlib's."""
    import hashlib

    qs = [f"q{i:05d}" for i in range(2000)] + ["é✓ü", "a'b", 'x"y', "", "q00001"]  # a repeat, odd text
    for seed in (0, 7, 123456):
        want = sorted(dict.fromkeys(qs), key=lambda q: hashlib.sha256(f"{seed}:{q}".encode("utf-8")).hexdigest())
        assert S.order(qs, seed) == want
    assert S.order([], 0) == []


def test_numbers_read_without_minus_zero():
    assert C.interval(-0.0002, 0.171) == "[0.000, 0.171]"
    assert C.num(-0.0004, sign=True) == "+0.000" and C.num(-0.25) == "-0.250" and C.num(None) == "–"


def test_each_metric_maps_its_labels_to_one_answer_value(tmp_path):
    """grades -> points/4 on both sides; contexts -> share relevant once every rank is labelled;
    a 0-1 rating of any other metric -> the rating, beside the metric's value."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=4, n_metrics=11)
    run, m = store.run_ids()[0], "basic_search"
    # the first answer of seed 0's order (every population here holds all 4 questions), with the
    # inclusion probability its place gives: a verified sample of one answer per metric
    q = S.order(U.answers(store, run, m, "factual_accuracy").question_id.tolist(), 0)[0]
    draw = ("srs:0", S.inclusion_prob(0, 4))
    base = dict(run_id=run, method=m, question_id=q)
    grade = U.label_items(store, run, m, "factual_accuracy")
    grade = grade[grade.question_id == q].iloc[0]
    ctx = U.items_of_answer(store, run, m, "context_precision", q)
    rows = [A.build({**base, "target_kind": "grade", "target_ref": "factual_accuracy", "judge_label": grade.judge_label},
                    "ann", "B", None, draw),
            A.build({**base, "target_kind": "metric", "target_ref": "token_f1", "judge_label": None}, "ann", "0.8",
                    None, draw)]
    rows += [A.build({**base, "target_kind": "context", "target_ref": r.target_ref, "judge_label": r.judge_label}, "ann",
                     "relevant" if i != 1 else "not_relevant", None, draw)
             for i, r in enumerate(ctx.itertuples())]
    store.append_annotations(rows)
    g = U.answers(store, run, m, "factual_accuracy").set_index("question_id").loc[q]
    assert g.human == 0.75 and g.judge == U.grade_value(grade.judge_label)
    c = U.answers(store, run, m, "context_precision").set_index("question_id").loc[q]
    assert c.human == pytest.approx((len(ctx) - 1) / len(ctx)) and len(ctx) >= 2
    r = U.answers(store, run, m, "token_f1").set_index("question_id").loc[q]
    assert r.human == 0.8 and r.sampled
    assert "token_f1" in U.estimable_metrics(store, run)  # rated, so labellable
