"""The answer-class rule and the failure-mode diagnosis, each one SQL definition, give the
results the pandas rules gave, in the store (counts) and over a frame (one answer) alike.

Two kinds of check: hand-built answers for every edge of the rule, each with its expected class,
deciding metric and bucket written out below; and the outputs of the former pandas rules on a
synthetic store, captured before the move (tests/fixtures/class_rule_golden.json).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from evalcore.analysis.read import correctness as CO
from evalcore.analysis.charts import distributions as G
from evalcore.analysis.questions import failure_modes as FM
from evalcore.analysis.runs import means as M
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_frame

NAN = math.nan
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "class_rule_golden.json"

# question id -> (answerable, target error, {metric: value or (value, label)},
#                 expected class, decided_by, bucket) — in run "a"; run "b" has the same
# answers without any answer_correct value (a decider column one run lacks), see B_DIFFERS.
CASES = {
    "err": (True, "HTTP 500", {"token_f1": 1.0, "answer_correct": 1.0}, "ERROR", "target error", None),
    "err_dk": (True, "timeout", {"dont_know": 1.0}, "ERROR", "target error", None),
    "dk_label": (True, None, {"answer_class": (0.0, "DONT_KNOW"), "token_f1": 0.9}, "DONT_KNOW", "answer_class",
                 "wrong abstention"),
    "dk_metric": (True, None, {"dont_know": 1.0, "answer_correct": 1.0}, "DONT_KNOW", "dont_know", "wrong abstention"),
    "dk_judge": (True, None, {"answer_dont_know": 1.0, "token_f1": 1.0}, "DONT_KNOW", "answer_dont_know",
                 "wrong abstention"),
    "dk_both": (True, None, {"answer_dont_know": 1.0, "dont_know": 1.0}, "DONT_KNOW", "dont_know",
                "wrong abstention"),
    "dk_unans": (False, None, {"dont_know": 1.0, "token_f1": 0.0}, "DONT_KNOW", "dont_know", "correct abstention"),
    "dk_below": (True, None, {"dont_know": 0.49, "token_f1": 0.9}, "CORRECT", "token_f1", "correct"),
    "dk_nan": (True, None, {"dont_know": NAN, "token_f1": 0.9}, "CORRECT", "token_f1", "correct"),
    "unans_wrong": (False, None, {"token_f1": 0.0, "hit_rate@5": 0.0}, "WRONG", "token_f1", "should have abstained"),
    "unans_right": (False, None, {"token_f1": 0.8}, "CORRECT", "token_f1", "correct"),
    "order": (True, None, {"answer_correct": 1.0, "token_f1": 0.0}, "CORRECT", "answer_correct", "correct"),
    "order_class": (True, None, {"answer_class": (0.0, "WRONG"), "checks_pass": 1.0}, "WRONG", "answer_class",
                    "wrong, cause unknown"),
    "nan_first": (True, None, {"answer_correct": NAN, "token_f1": 0.2, "hit_rate@5": 0.0, "faithfulness": 1.0},
                  "WRONG", "token_f1", "retrieval miss"),
    "at_threshold": (True, None, {"token_f1": 0.5}, "CORRECT", "token_f1", "correct"),
    "recall_miss": (True, None, {"token_f1": 0.1, "recall@5": 0.0, "faithfulness": 1.0}, "WRONG", "token_f1",
                    "retrieval miss"),
    "judge_miss": (True, None, {"token_f1": 0.1, "context_precision": 0.0}, "WRONG", "token_f1", "retrieval miss"),
    "gold_first": (True, None, {"token_f1": 0.1, "hit_rate@5": 1.0, "context_precision": 0.0, "faithfulness": 0.4},
                   "WRONG", "token_f1", "unfaithful"),
    "hit_nan": (True, None, {"token_f1": 0.1, "hit_rate@5": NAN, "context_precision": 0.0}, "WRONG", "token_f1",
                "retrieval miss"),
    "unfaithful": (True, None, {"token_f1": 0.1, "hit_rate@5": 1.0, "faithfulness": 0.5}, "WRONG", "token_f1",
                   "unfaithful"),
    "faithful": (True, None, {"token_f1": 0.1, "hit_rate@5": 1.0, "faithfulness": 1.0}, "WRONG", "token_f1",
                 "faithful but wrong"),
    "no_faith": (True, None, {"token_f1": 0.1, "hit_rate@5": 1.0}, "WRONG", "token_f1", "wrong, cause unknown"),
    "faith_nan": (True, None, {"token_f1": 0.1, "faithfulness": NAN}, "WRONG", "token_f1", "wrong, cause unknown"),
    "unscored": (True, None, {"faithfulness": 1.0, "hit_rate@5": 0.0}, "UNSCORED", None, "unscored"),
    "all_nan": (True, None, {"token_f1": NAN, "answer_correct": NAN}, "UNSCORED", None, "unscored"),
    "no_metrics": (True, None, {}, "UNSCORED", None, "unscored"),
}
# run "b" stores no answer_correct at all: the next decider decides (or none does)
B_DIFFERS = {"order": ("WRONG", "token_f1", "wrong, cause unknown")}


def _expected(run: str) -> dict[str, tuple]:
    out = {q: case[3:] for q, case in CASES.items()}
    return {**out, **B_DIFFERS} if run == "b" else out


def _write(store: RunStore, run: str) -> None:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run, name=run,
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([EvalQuestion(id=q, question=f"{q}?", ground_truth="g", answerable=c[0])
                            for q, c in CASES.items()])
    writer.write_responses([EvalResponse(question_id=q, method="m", answer="a", error=c[1]) for q, c in CASES.items()])
    values = []
    for q, case in CASES.items():
        for metric, v in case[2].items():
            if run == "b" and metric == "answer_correct":
                continue
            value, label = v if isinstance(v, tuple) else (v, None)
            values.append(MetricValue(run_id=run, method="m", question_id=q, metric=metric, value=value, label=label,
                                      group="g", reason="not scored" if value != value else None))
    writer.write_metrics(values)
    writer.publish()


@pytest.fixture(scope="module")
def edges(tmp_path_factory) -> RunStore:
    store = RunStore(tmp_path_factory.mktemp("edges") / "runs")
    for run in ("a", "b"):
        _write(store, run)
    return store


KEYS = ("a:m", "b:m")


def test_the_store_classifies_and_diagnoses_every_edge_as_written(edges):
    frame = CO.outcome_frame(edges, KEYS, extra=FM.diagnosis_metrics())
    diagnosed = FM.diagnoses(edges, KEYS)
    for key in KEYS:
        expected = _expected(key[0])
        rows = frame[frame.system == key].set_index("question_id")
        classes = CO.classify(rows)
        got = {q: (classes.loc[q, "cls"], _name(classes.loc[q, "decided_by"])) for q in rows.index}
        assert got == {q: e[:2] for q, e in expected.items()}, key
        buckets = dict(diagnosed.loc[diagnosed.system == key, ["question_id", "bucket"]].itertuples(index=False))
        assert buckets == {q: e[2] for q, e in expected.items() if e[2] is not None}, key
        said = FM.explained(rows)  # the diagnosis run over the frame
        assert dict(zip(said.index, said["bucket"])) == {q: e[2] for q, e in expected.items()}, key
        if key == "a:m":  # one answer at a time: the same rules run over a one-row frame
            for q, row in rows.iterrows():
                assert (CO.classify_row(row), FM.diagnose(row)) == (expected[q][:2], expected[q][2]), q


def test_counts_in_the_store_are_the_sums_of_the_per_answer_rule(edges):
    bars = G.label_counts(edges, KEYS, "answer_class")
    modes = FM.failure_modes(edges, KEYS)
    for key in KEYS:
        expected = _expected(key[0]).values()
        want = pd.Series([e[0] for e in expected]).value_counts().to_dict()
        assert dict(zip(bars[bars.system == key].label, bars[bars.system == key].n)) == want
        want = pd.Series([e[2] for e in expected if e[2]]).value_counts()
        got = modes[modes.system == key].set_index("bucket")["n"]
        assert got.to_dict() == want.to_dict()
        assert list(got.index) == [b for b in FM.BUCKETS if b in want.index], "buckets in the documented order"
        assert modes.loc[modes.system == key, "share"].sum() == pytest.approx(1.0)
    assert list(bars.columns) == ["system", "label", "n", "share"]


def test_the_bucket_list_gives_the_count_and_the_first_questions_in_order(edges):
    misses = sorted(q for q, e in _expected("a").items() if e[2] == "retrieval miss")
    assert FM.questions_in_bucket(edges, "a:m", "retrieval miss") == misses
    assert FM.bucket_questions(edges, "a:m", "retrieval miss", 2) == (len(misses), misses[:2])
    # read from the count table of the breakdown beside it: the same
    assert FM.bucket_questions(edges, "a:m", "retrieval miss", 2, KEYS) == (len(misses), misses[:2])
    assert FM.bucket_questions(edges, "a:m", "retrieval miss", 50, KEYS) == (len(misses), misses)
    assert FM.bucket_questions(edges, "b:m", "unscored", 50, KEYS) == (3, ["all_nan", "no_metrics", "unscored"])
    assert FM.bucket_questions(edges, "b:m", "correct abstention", 50) == (1, ["dk_unans"])
    assert FM.bucket_questions(edges, "a:m", "faithful but wrong", 5) == (1, ["faithful"])
    with pytest.raises(ValueError, match="unknown bucket"):
        FM.bucket_questions(edges, "a:m", "nonsense", 5)


def test_answer_classes_with_the_registry_rule_and_with_custom_deciders(edges):
    table = M.answer_classes(edges, "b").iloc[0]
    want = pd.Series([e[0] for e in _expected("b").values()]).value_counts()
    assert (table.n, table.correct, table.wrong, table.dont_know, table.error, table.unscored) == (
        len(CASES), want["CORRECT"], want["WRONG"], want["DONT_KNOW"], want["ERROR"], want["UNSCORED"])
    decided = pd.Series([e[1] for e in _expected("b").values() if e[0] in ("CORRECT", "WRONG")]).value_counts()
    assert table.decided_by == ", ".join(f"{k}:{v}" for k, v in sorted(decided.items()))
    # token_f1 alone decides, correct from 0.15: the classes move, abstentions and errors do not
    custom = M.answer_classes(edges, "a", correct_metrics=("token_f1",), threshold=0.15).iloc[0]
    values = {q: c[2].get("token_f1") for q, c in CASES.items()}
    live = {q: v for q, v in values.items() if CASES[q][3] not in ("ERROR", "DONT_KNOW")}
    scored = {q: v for q, v in live.items() if v is not None and v == v}
    assert custom.correct == sum(v >= 0.15 for v in scored.values())
    assert custom.wrong == sum(v < 0.15 for v in scored.values())
    assert custom.unscored == len(live) - len(scored)
    assert (custom.error, custom.dont_know) == (2, 5)
    assert custom.decided_by == f"token_f1:{len(scored)}"
    frame = CO.outcome_frame(edges, ("a:m",), extra=("token_f1",)).set_index("question_id")
    by_frame = CO.classify(frame, ("token_f1",), 0.15)["cls"].value_counts()
    assert (by_frame.get("CORRECT", 0), by_frame.get("WRONG", 0)) == (custom.correct, custom.wrong)


def test_metric_names_in_custom_deciders_are_data(edges):
    """A decider named with quotes and SQL is a column name that does not exist: NULL, no error."""
    hostile = ('x" FROM responses; --', "it's", "v:token_f1")
    table = M.answer_classes(edges, "a", correct_metrics=hostile).iloc[0]
    assert table.unscored == len(CASES) - table.error - table.dont_know
    frame = pd.DataFrame({"error": [None], hostile[0]: [1.0], hostile[1]: [0.0]})
    assert CO.classify(frame, hostile).iloc[0].tolist() == ["CORRECT", hostile[0]]


def test_a_frame_without_some_columns_reads_them_as_missing():
    assert CO.classify_row({"token_f1": 0.7}) == ("CORRECT", "token_f1")
    assert CO.classify_row({"token_f1": "not a number", "checks_pass": 0.0}) == ("WRONG", "checks_pass")
    assert CO.classify_row({"error": float("nan"), "answer_class_label": "DONT_KNOW"}) == ("DONT_KNOW", "answer_class")
    assert FM.explain({"token_f1": 0.1, "recall@5": 0.0, "answerable": None}) == (
        "retrieval miss", "wrong by token_f1 = 0.1; retrieval miss from gold passages (recall@5 = 0)")
    empty = CO.classify(pd.DataFrame(columns=["error", "token_f1"]))
    assert empty.empty and list(empty.columns) == ["cls", "decided_by"]


def test_query_frame_reads_frames_by_name_and_forgets_them():
    left = pd.DataFrame({"k": [1, 2], "v": [0.5, None]})
    right = pd.DataFrame({"k": [2, 1], "w": ["b", "a"]})
    out = query_frame("SELECT k, v, w FROM left_ JOIN right_ USING (k) ORDER BY k", left_=left, right_=right)
    assert out["w"].tolist() == ["a", "b"] and out["v"].isna().tolist() == [False, True]
    with pytest.raises(Exception, match="left_"):  # forgotten after its query, and no variable is read
        query_frame("SELECT * FROM left_")


def _name(value) -> str | None:
    return value if isinstance(value, str) else None


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records"))


def test_the_synthetic_store_gives_what_the_pandas_rules_gave(tmp_path):
    """Every answer's class, deciding metric, bucket and basis, and every count table, equal the
    outputs captured from the pandas rules before they moved to SQL (if the synthetic store's
    generator changes on purpose, recapture them: see the fixture's _about)."""
    from evalcore.demo.synthetic import build_store

    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    store = build_store(tmp_path / "runs", n_runs=2, n_questions=60)
    runs = store.run_ids()
    keys = tuple(f"{r}:{m}" for r in runs for m in ("basic_search", "local_search"))
    frame = CO.outcome_frame(store, keys, extra=FM.diagnosis_metrics())
    classes = CO.classify(frame)
    said = FM.explained(frame)
    diagnosed = FM.diagnoses(store, keys).set_index(["system", "question_id"])["bucket"]
    rows: dict[str, dict] = {}
    for i, r in frame.iterrows():
        bucket = diagnosed.get((r.system, r.question_id))
        assert (said.loc[i, "cls"], said.loc[i, "bucket"]) == (classes.loc[i, "cls"], bucket)
        rows.setdefault(r.system, {})[r.question_id] = [classes.loc[i, "cls"], _name(classes.loc[i, "decided_by"]),
                                                        bucket, said.loc[i, "basis"]]
    assert rows == golden["rows"]
    assert _records(G.label_counts(store, keys, "answer_class")) == golden["label_counts"]
    assert _records(FM.failure_modes(store, keys)) == golden["failure_modes"]
    assert {r: _records(M.answer_classes(store, r)) for r in runs} == golden["answer_classes"]
    assert _records(M.answer_classes(store, runs[0], by="question_type")) == golden["answer_classes_by_type"]
    assert _records(M.answer_classes(store, runs[0], by="tag")) == golden["answer_classes_by_tag"]
    assert _records(M.answer_classes(store, runs[0], correct_metrics=("semantic_similarity", "token_f1"),
                                     threshold=0.3)) == golden["answer_classes_custom"]
    assert {b: FM.questions_in_bucket(store, keys[0], b) for b in FM.BUCKETS} == golden["in_bucket"]
