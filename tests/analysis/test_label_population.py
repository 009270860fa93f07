"""The labelling population (label_units.answers): items are counted in SQL and only labelled
answers' items meet their labels in pandas; the result must equal the plain reading — every
item of every answer merged with the newest labels — for every kind of unit, with partly
labelled answers, retractions and hand-picked labels. Only a verified sample's answers count as
sampled: scattered labels naming a sample (srs:1 here) do not."""

import math
import random

import pandas as pd
import pytest

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels import sample_order as O
from evalcore.demo.synthetic import build_store
from evalcore.schemas.results import Annotation

METRICS = ["faithfulness", "answer_class", "context_precision", "factual_accuracy", "token_f1"]
LABELS = {"claim": ["supported", "not_supported"], "context": ["relevant", "not_relevant"],
          "answer_class": ["CORRECT", "WRONG"], "grade": list("ABCDE"), "metric": ["0.2", "0.9", "7"]}


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    store = build_store(tmp_path_factory.mktemp("runs"), n_runs=1, n_questions=60)
    run = store.run_ids()[0]
    rng, anns = random.Random(1), []
    for metric in METRICS:
        kind = U.unit(metric).kind
        items = U.label_items(store, run, "basic_search", metric, with_text=False)
        for i, (q, ref) in enumerate(zip(items.question_id, items.target_ref)):
            if rng.random() < 0.3:  # some items of some answers: many answers partly labelled
                sampled = rng.random() < 0.7
                label = U.RETRACTED if rng.random() < 0.1 else rng.choice(LABELS[kind])
                anns.append(Annotation(annotation_id=f"{metric}-{i}", who="t", run_id=run, method="basic_search",
                                       question_id=q, target_kind=kind, target_ref=ref, label=label,
                                       sample_id="srs:1" if sampled else None, inclusion_prob=0.5 if sampled else None))
        anns += _true_sample(store, run, metric, items)
    store.append_annotations(anns)
    return store, run


def _true_sample(store, run, metric, items):
    """Every item of the first FIRST answers of seed 2's order, labelled with their sample (a
    verified sample: the one that feeds estimates; srs:1's scattered labels above are not)."""
    population = U._predictions(store, run, "basic_search", metric).question_id
    seq = O.order([q for q in population if q in set(items.question_id)], 2)
    return [Annotation(annotation_id=f"{metric}-s2-{i}", who="t", run_id=run, method="basic_search", question_id=q,
                       target_kind=U.unit(metric).kind, target_ref=ref, label=LABELS[U.unit(metric).kind][0],
                       sample_id="srs:2", inclusion_prob=O.inclusion_prob(seq.index(q), len(seq)))
            for i, (q, ref) in enumerate(zip(items.question_id, items.target_ref)) if q in seq[:FIRST]]


FIRST = 5


def _reference(store, run, metric):
    """Every item merged with the newest labels (the definition, read plainly)."""
    u = U.unit(metric)
    pred = U._predictions(store, run, "basic_search", metric)
    items = U.label_items(store, run, "basic_search", metric, with_text=False)
    labels = U.newest_labels(store, run, "basic_search", u.kind)
    labels = labels[labels.label != U.RETRACTED]
    merged = items.merge(labels[["question_id", "target_ref", "label"]], on=["question_id", "target_ref"], how="left")
    merged["h"] = U._item_values(u, merged["label"])
    per = merged.groupby("question_id").agg(n_items=("target_ref", "size"), n_labelled=("label", "count"),
                                            human=("h", "mean")).reset_index()
    per.loc[per.n_labelled < per.n_items, "human"] = math.nan
    out = pred.merge(per, on="question_id", how="inner")
    out["sampled"] = out["question_id"].isin(O.order(out.question_id.tolist(), 2)[:FIRST])  # srs:2 only
    return out[["question_id", "judge", "n_items", "n_labelled", "sampled", "human"]]


@pytest.mark.parametrize("metric", METRICS)
def test_the_population_equals_the_plain_reading(labelled, metric):
    store, run = labelled
    got = U._answers(store, run, "basic_search", metric).sort_values("question_id").reset_index(drop=True)
    want = _reference(store, run, metric).sort_values("question_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    assert got.n_labelled.sum() > 0 and got.sampled.any()
    if U.unit(metric).kind in ("claim", "context"):  # partly labelled answers exist and count as unlabelled
        partly = got[(got.n_labelled > 0) & (got.n_labelled < got.n_items)]
        assert len(partly) and partly.human.isna().all()
