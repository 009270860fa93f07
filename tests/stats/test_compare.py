"""Paired comparison: pairing, unpaired ids, tests chosen per metric type, Holm, Pareto."""

import json

import numpy as np
import pytest

from evalcore.errors import EvalcoreError
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.analysis.comparison.compare import compare, pareto, regressions
from evalcore.stats.pareto import pareto_front


def _run(store, tmp_path, name, answers, latency):
    recs = [{"question_id": qid, "question": f"Question {qid}?", "ground_truth": gold, "answer": ans,
             "method": "m", "latency_ms": latency}
            for qid, (gold, ans) in answers.items()]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs))
    run_id = import_recorded(store, path, name=name).run_id
    score_run(store, run_id, metrics=["exact_match", "token_f1", "latency_ms"], progress=False)
    return run_id


def test_pairing_unpaired_and_statistics(store, tmp_path):
    golds = {f"q{i:02d}": f"answer number {i}" for i in range(30)}
    a = _run(store, tmp_path, "a", {q: (g, g) for q, g in golds.items()}, 100)
    b_answers = {q: (g, g if i % 3 else "something else") for i, (q, g) in enumerate(golds.items()) if i < 28}
    b_answers["extra"] = ("x", "x")
    b = _run(store, tmp_path, "b", b_answers, 50)
    res = compare(store, [f"{a}:m", f"{b}:m"])
    assert res.unpaired[f"{b}:m"] == {"only_in_baseline": ["q28", "q29"], "only_in_candidate": ["extra"]}
    t = res.table.set_index("metric")
    em = t.loc["exact_match"]
    assert em.n_pairs == 28 and em.test == "mcnemar_exact" and em.missing == 3
    assert (em.improved, em.regressed, em.unchanged) == (0, 10, 18)
    assert em.delta == pytest.approx(-10 / 28) and em.ci_high < 0
    assert em.p_value == pytest.approx(2 * 0.5 ** 10)
    lat = t.loc["latency_ms"]
    assert lat.delta == -50 and lat.improved == 28  # lower latency is better
    # token_f1 is not a binary metric: randomization test, exact over its 10 non-zero differences
    assert t.loc["token_f1", "test"] == "randomization_exact"
    assert t.loc["token_f1", "p_value"] == pytest.approx(2 / 2 ** 10)
    # Holm over the three metrics: the smallest p is multiplied by 3
    assert t.p_holm.min() == pytest.approx(min(1.0, 3 * t.p_value.min()))
    assert list(regressions(res, "exact_match").metric) == ["exact_match"]
    assert regressions(res, "exact_match", min_delta=0.5).empty
    assert regressions(res, "latency_ms").empty
    rl = res.run_level.set_index("label")
    assert rl.loc[f"{b}:m", "latency"] == 50
    front, dropped = pareto(res)
    assert dropped == ["cost"] and front.on_front.all()  # a is better, b is faster


def test_selection_errors(store, tmp_path):
    a = _run(store, tmp_path, "solo", {"q1": ("x", "x")}, 10)
    with pytest.raises(EvalcoreError, match="at least two"):
        compare(store, [a])
    with pytest.raises(EvalcoreError, match="no method 'zz'"):
        compare(store, [f"{a}:m", f"{a}:zz"])


def test_pareto_front_dominance():
    pts = [{"label": "a", "quality": 0.9, "cost": 2.0, "latency": 100},
           {"label": "b", "quality": 0.8, "cost": 1.0, "latency": 100},
           {"label": "c", "quality": 0.7, "cost": 1.5, "latency": 120},
           {"label": "d", "quality": 0.9, "cost": 2.0, "latency": 100}]
    df, dropped = pareto_front(pts)
    on = dict(zip(df.label, df.on_front))
    assert on == {"a": True, "b": True, "c": False, "d": True} and dropped == []
    assert df.set_index("label").loc["c", "dominated_by"] == "b"
    df, dropped = pareto_front([{**p, "cost": np.nan if p["label"] == "a" else p["cost"]} for p in pts])
    assert dropped == ["cost"]
