"""Abstention and EM/F1 on the real SQuAD 2.0 Normans slice, through import -> score -> aggregate."""

import json

import pytest

from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.analysis.runs.means import answer_classes, summarize


def _records(shared_data):
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for para in data["data"][0]["paragraphs"] for qa in para["qas"]]
    unans = [qa for qa in qas if qa["is_impossible"]]
    ans = [qa for qa in qas if not qa["is_impossible"]]
    assert (len(unans), len(ans)) == (112, 96)
    recs = []
    for i, qa in enumerate(unans):  # 80 abstain ("unknown"), 32 hallucinate a plausible span
        answer = "unknown" if i < 80 else qa["plausible_answers"][0]["text"]
        recs.append({"question_id": qa["id"], "question": qa["question"], "answerable": False,
                     "answer": answer})
    for i, qa in enumerate(ans):  # 10 abstain wrongly, the rest give the last annotator's span
        golds = list(dict.fromkeys(a["text"] for a in qa["answers"]))
        answer = "I don't know." if i < 10 else qa["answers"][-1]["text"]
        recs.append({"question_id": qa["id"], "question": qa["question"], "ground_truth": golds,
                     "answer": answer})
    return recs


@pytest.fixture(scope="module")
def squad_run(shared_data, tmp_path_factory):
    from evalcore.store import RunStore

    store = RunStore(tmp_path_factory.mktemp("squad") / "runs")
    path = tmp_path_factory.mktemp("rec") / "squad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records(shared_data)))
    run_id = import_recorded(store, path, method="reader").run_id
    score_run(store, run_id, groups=["abstention", "lexical"], progress=False)
    return store, run_id


def test_abstention_rates_over_112_unanswerable(squad_run):
    store, run_id = squad_run
    s = summarize(store, run_id, metrics=["abstention_false_negative_rate", "abstention_false_positive_rate",
                                          "unanswerable_accuracy", "dont_know"]).set_index("metric")
    fn = s.loc["abstention_false_negative_rate"]
    assert (fn.n_scored, fn.n) == (112, 208) and fn["mean"] == pytest.approx(32 / 112)
    assert "unanswerable questions only (96)" in fn.nan_reasons
    fp = s.loc["abstention_false_positive_rate"]
    assert fp.n_scored == 96 and fp["mean"] == pytest.approx(10 / 96)
    assert s.loc["unanswerable_accuracy", "mean"] == pytest.approx((80 + 86) / 208)
    assert s.loc["dont_know", "ci_low"] <= s.loc["dont_know", "mean"] <= s.loc["dont_know", "ci_high"]


def test_em_f1_and_classes_by_answerable(squad_run):
    store, run_id = squad_run
    by = summarize(store, run_id, by="answerable", metrics=["squad_em", "token_f1"])
    una = by[(by.bucket == "false") & (by.metric == "squad_em")].iloc[0]
    assert una["mean"] == pytest.approx(80 / 112)  # SQuAD 2.0: abstaining is the right answer
    ans = by[(by.bucket == "true") & (by.metric == "squad_em")].iloc[0]
    assert ans["mean"] == pytest.approx(86 / 96)  # every given span is one annotator's answer
    classes = answer_classes(store, run_id, by="answerable").set_index("bucket")
    assert classes.loc["false", "dont_know"] == 80 and classes.loc["false", "wrong"] == 32
    assert classes.loc["true", "dont_know"] == 10 and classes.loc["true", "correct"] == 86
