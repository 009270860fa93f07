"""Import of recorded answers: every accepted shape, and errors that name file, record and field."""

import json

import pandas as pd
import pytest

from evalcore.errors import InputError
from evalcore.scoring.importer import import_recorded, parse_recorded
from evalcore.scoring.queries import run_questions, run_responses


def _jsonl(path, records):
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return path


NATIVE = [
    {"question_id": "q1", "method": "local", "question": "Capital of France?", "answer": "Paris",
     "ground_truth": ["Paris", "City of Paris"], "contexts": ["Paris is the capital."], "latency_ms": 120,
     "token_usage": {"input_tokens": 50, "output_tokens": 3}, "category": "geo", "team": "blue"},
    {"question_id": "q1", "method": "basic", "question": "Capital of France?", "answer": "Lyon",
     "retrieved": [{"chunk_id": "c9", "text": "Lyon is a city.", "score": 0.3}], "citations": ["c9"]},
    {"question_id": "q2", "method": "local", "question": "Unknowable?", "answer": "I don't know",
     "answerable": "false", "abstained": True, "gold_chunk_ids": ["c1", "c2"]},
]


def test_native_jsonl_roundtrip(store, tmp_path):
    path = _jsonl(tmp_path / "answers.jsonl", NATIVE)
    with pytest.raises(InputError, match=r"record 1, field 'team': unknown field.*--allow-extra"):
        import_recorded(store, path, name="native")
    assert store.run_ids() == []
    result = import_recorded(store, path, name="native", allow_extra=True)
    assert result.fields.extra == {"team"} and any("team" in line for line in result.notes())
    assert result.methods == ["basic", "local"] and result.n_questions == 2 and result.n_records == 3
    questions = {q.id: q for q in run_questions(store, result.run_id)}
    assert questions["q1"].answers == ["Paris", "City of Paris"]
    assert questions["q1"].metadata == {"team": "blue"}  # unknown fields kept on request
    assert questions["q2"].answerable is False and questions["q2"].gold_chunk_ids == ["c1", "c2"]
    responses = {(r.method, r.question_id): r for r in run_responses(store, result.run_id)}
    assert responses[("local", "q1")].retrieved[0].text == "Paris is the capital."
    assert responses[("local", "q1")].token_usage.input_tokens == 50
    assert responses[("basic", "q1")].retrieved[0].rank == 1
    assert responses[("basic", "q1")].citations[0].chunk_id == "c9"
    manifest = store.manifest(result.run_id)
    assert manifest.status == "complete" and manifest.source["fingerprint"].startswith("sha256:")


def test_ragas_and_deepeval_field_names(tmp_path):
    ragas = [{"user_input": "Who wrote Hamlet?", "response": "Shakespeare",
              "retrieved_contexts": ["Hamlet is a play by Shakespeare."], "reference": "William Shakespeare"}]
    deepeval = {"test_cases": [{"input": "Who wrote Hamlet?", "actual_output": "Marlowe",
                                "expected_output": "William Shakespeare",
                                "retrieval_context": ["Marlowe wrote plays."], "context": ["Hamlet ... Shakespeare"]}]}
    qs, rs = parse_recorded(_jsonl(tmp_path / "ragas.jsonl", ragas), default_method="ragas")
    (tmp_path / "deepeval.json").write_text(json.dumps(deepeval))
    qs2, rs2 = parse_recorded(tmp_path / "deepeval.json", default_method="deepeval")
    assert qs[0].id == qs2[0].id  # same question text -> same derived id, so runs pair up
    assert qs[0].ground_truth == "William Shakespeare" and rs[0].answer == "Shakespeare"
    assert rs[0].retrieved[0].text.startswith("Hamlet") and rs[0].method == "ragas"
    assert rs2[0].answer == "Marlowe" and qs2[0].gold_passages[0].text == "Hamlet ... Shakespeare"


def test_csv_and_parquet(tmp_path):
    df = pd.DataFrame([
        {"question_id": "a", "method": "m1", "question": "Q a?", "answer": "x",
         "contexts": json.dumps(["ctx one", "ctx two"]), "latency_ms": 5},
        {"question_id": "b", "method": "m1", "question": "Q b?", "answer": "y", "contexts": "", "latency_ms": 7},
    ])
    df.to_csv(tmp_path / "a.csv", index=False)
    qs, rs = parse_recorded(tmp_path / "a.csv")
    assert [len(r.retrieved) for r in rs] == [2, 0] and rs[0].latency_ms == 5
    pq_df = df.copy()
    pq_df["contexts"] = [["ctx one", "ctx two"], []]
    pq_df.to_parquet(tmp_path / "a.parquet")
    qs, rs = parse_recorded(tmp_path / "a.parquet")
    assert [len(r.retrieved) for r in rs] == [2, 0]


def test_dataset_is_authoritative(store, tmp_path):
    dataset = tmp_path / "qs.yaml"
    dataset.write_text("questions:\n  - id: q1\n    question: Capital of France?\n    ground_truth: Paris\n"
                       "    gold_chunk_ids: [c1]\n", encoding="utf-8")
    answers = _jsonl(tmp_path / "a.jsonl", [{"question_id": "q1", "method": "m", "answer": "Paris"}])
    result = import_recorded(store, answers, dataset=dataset)
    (q,) = run_questions(store, result.run_id)
    assert q.gold_chunk_ids == ["c1"] and q.ground_truth == "Paris"
    assert store.manifest(result.run_id).dataset["fingerprint"].startswith("sha256:")
    orphan = _jsonl(tmp_path / "b.jsonl", [{"question_id": "zz", "method": "m", "answer": "?"}])
    with pytest.raises(InputError, match="record 1.*field 'question'"):
        import_recorded(store, orphan, dataset=dataset)


@pytest.mark.parametrize("lines, record, field", [
    (['{"question_id": "q", "method": "m", "question": "Q?", "answer": "a"}', '{"question_id": "q2", "metho'], 2, None),
    (['{"question_id": "q", "method": "m", "question": "Q?", "answer": "a", "latency_ms": "slow"}'], 1, "latency_ms"),
    (['{"question_id": "q", "method": "m", "question": "Q?", "answer": "a", "latency_ms": NaN}'], 1, None),
    (['{"question_id": "q", "method": "m", "answer": "a"}'], 1, "question"),
    (['{"question_id": "q", "method": "m", "question": "Q?", "answer": "a", "contexts": [1, 2]}'], 1, "contexts"),
    (['{"question_id": "q", "method": "m", "question": "Q?", "answer": "a"}',
      '{"question_id": "q", "method": "m", "question": "Q?", "answer": "b"}'], 2, "question_id"),
    (['{"question_id": "q", "method": "m", "question": "Q?", "ground_truht": "x"}'], 1, "ground_truht"),
    (['[1, 2]'], 1, None),
])
def test_bad_records_name_file_record_field(store, tmp_path, lines, record, field):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        import_recorded(store, path)
    err = info.value
    assert err.file == str(path) and err.record == record
    if field:
        assert err.field == field
    assert store.run_ids() == []  # nothing half-made
    assert not (store.root / ".staging").exists() or not list((store.root / ".staging").iterdir())


def test_invalid_utf8_and_empty_and_unknown_type(store, tmp_path):
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b'{"question_id": "q", "method": "m", "question": "caf\xe9"}\n')
    with pytest.raises(InputError, match="UTF-8"):
        import_recorded(store, bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="no records"):
        import_recorded(store, empty)
    with pytest.raises(InputError, match="unsupported"):
        import_recorded(store, tmp_path / "x.txt") if (tmp_path / "x.txt").write_text("x") else None


def test_ragas_frame_saved_with_pandas_to_csv(tmp_path):
    """A ragas dataset as ragas users save it: a DataFrame with list columns written by
    pandas to_csv, which prints each list as Python text (['a', "it's"]), not JSON."""
    contexts = ["Hamlet is a play by Shakespeare.", "It's set in Denmark, 'Elsinore'.", 'He said "to be"\nor not.']
    frame = pd.DataFrame({
        "user_input": ["Who wrote Hamlet?", "Where is Hamlet set?"],
        "retrieved_contexts": [contexts, []],
        "response": ["Shakespeare", "[1] Denmark"],
        "reference": ["William Shakespeare", "Denmark"],
        "reference_contexts": [["Hamlet ... Shakespeare"], ["Elsinore, Denmark", "a castle"]],
    })
    frame.to_csv(tmp_path / "ragas.csv", index=False)
    assert "['Hamlet is a play" in (tmp_path / "ragas.csv").read_text()  # Python text, not JSON
    qs, rs = parse_recorded(tmp_path / "ragas.csv", default_method="ragas")
    assert [c.text for c in rs[0].retrieved] == contexts and rs[1].retrieved == []
    assert rs[1].answer == "[1] Denmark"  # text that merely starts with a bracket stays text
    assert [g.text for g in qs[1].gold_passages] == ["Elsinore, Denmark", "a castle"]


def test_printed_lists_that_cannot_be_read_are_refused(tmp_path):
    """A numpy array printed by pandas (no commas: Python would join 'a' 'b' into 'ab') and a
    list cut short are refused naming the record and the field, not stored as one context."""
    import numpy as np

    frame = pd.DataFrame({"user_input": ["Q?"], "response": ["A"],
                          "retrieved_contexts": [np.array(["first context", "second context"])]})
    frame.to_csv(tmp_path / "numpy.csv", index=False)
    with pytest.raises(InputError, match=r"record 1, field 'retrieved_contexts': looks like a list.*numpy"):
        parse_recorded(tmp_path / "numpy.csv")
    (tmp_path / "cut.csv").write_text("user_input,response,retrieved_contexts\nQ?,A,\"['one', 'tw]\"\n")
    with pytest.raises(InputError, match=r"record 1, field 'contexts': looks like a list written as text"):
        parse_recorded(tmp_path / "cut.csv")
