"""Property-based tests over every dataset loader: whatever a question file holds, loading it
gives questions the store can write, or an EvalcoreError naming the file — never another
exception type.

Each format gets records built from its own field names with values of any shape (wrong
types, missing fields, huge strings, NaN/inf, nested junk, duplicate ids and chunk ids), in
the file syntax the loader reads. A separate test feeds each format empty files, invalid
UTF-8, and deep nesting.
"""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.datasets import load_questions
from evalcore.errors import EvalcoreError, InputError
from evalcore.store.tables import question_row, to_arrow

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

HUGE = "가" * 300_000  # a 900 KB string: larger than csv's default field limit
text = st.one_of(st.text(max_size=20), st.sampled_from(["", " ", "q1", "dup", "a|b", HUGE]))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([math.nan, math.inf, -math.inf]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), floats, text)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)


def record_of(fields: list[str], good: dict | None = None):
    """Records using `fields` with any values, often starting from a valid `good` record."""
    junk = st.dictionaries(st.sampled_from(fields + ["extra", "ground_trth"]), values, max_size=len(fields))
    if good is None:
        return junk
    return st.one_of(junk, junk.map(lambda j: {**good, **j}), st.just(dict(good)))


def _check(path, fmt):
    """The property: questions the store can write, or an EvalcoreError naming the file."""
    try:
        questions = load_questions(path, fmt=fmt)
    except InputError as exc:
        assert exc.file.startswith(str(path.parent)), exc
        return None
    except EvalcoreError:
        return None
    assert questions and len({q.id for q in questions}) == len(questions)
    for q in questions:
        ids = [g.chunk_id for g in q.gold_passages if g.chunk_id]
        assert len(ids) == len(set(ids)), "duplicate gold chunk ids must be merged"
    to_arrow("questions", [question_row("r", q) for q in questions])  # storable
    return questions


def _json_dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True, default=str)


NATIVE_FIELDS = ["id", "question", "ground_truth", "answers", "category", "tags", "answerable",
                 "expected_keywords", "gold_chunk_ids", "gold_passages", "metadata", "checks",
                 "difficulty", "required_support_groups"]
NATIVE_GOOD = {"id": "dup", "question": "What?", "ground_truth": "x", "gold_chunk_ids": ["c1", "c1"]}


@SETTINGS
@given(st.lists(record_of(NATIVE_FIELDS, NATIVE_GOOD), max_size=4), st.sampled_from(["jsonl", "json", "yaml"]))
def test_native_text_formats(tmp_path_factory, recs, suffix):
    path = tmp_path_factory.mktemp("native") / f"q.{suffix}"
    if suffix == "jsonl":
        path.write_text("\n".join(_json_dump(r) for r in recs), encoding="utf-8")
    elif suffix == "json":
        path.write_text(_json_dump(recs), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(recs, allow_unicode=True), encoding="utf-8")
    _check(path, "native")


def _cell(value) -> str:
    if isinstance(value, (list, dict)):
        return _json_dump(value)
    return "" if value is None else str(value)


@SETTINGS
@given(st.lists(record_of(NATIVE_FIELDS, NATIVE_GOOD), max_size=4))
def test_native_csv(tmp_path_factory, recs):
    import csv

    path = tmp_path_factory.mktemp("csv") / "q.csv"
    columns = sorted({k for r in recs for k in r}) or ["id"]
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in recs:
            writer.writerow([_cell(r.get(c)) for c in columns])
    _check(path, "native")


column_values = st.one_of(
    st.lists(st.one_of(st.none(), text), min_size=1, max_size=4).map(lambda v: pa.array(v, pa.string())),
    st.lists(st.one_of(st.none(), floats), min_size=1, max_size=4).map(lambda v: pa.array(v, pa.float64())),
    st.lists(st.integers(-5, 5), min_size=1, max_size=4).map(lambda v: pa.array(v, pa.int64())),
    st.lists(st.binary(max_size=6), min_size=1, max_size=4).map(lambda v: pa.array(v, pa.binary())),
    st.lists(st.lists(st.one_of(st.none(), text), max_size=3), min_size=1, max_size=4)
    .map(lambda v: pa.array(v, pa.list_(pa.string()))),
)


@SETTINGS
@given(st.dictionaries(st.sampled_from(NATIVE_FIELDS), column_values, min_size=1, max_size=5))
def test_native_parquet(tmp_path_factory, columns):
    n = min(len(c) for c in columns.values())
    table = pa.table({k: c.slice(0, n) for k, c in columns.items()})
    path = tmp_path_factory.mktemp("pq") / "q.parquet"
    pq.write_table(table, path)
    _check(path, "native")


PLAN_ITEM = ["id", "question", "query", "expected_keywords", "expected_answer", "check", "hops",
             "difficulty", "answerable", "metadata", "negative_check", "gold_chunk_ids"]
plan_docs = st.one_of(
    st.dictionaries(st.sampled_from(["single_hop", "negative", "inference", "version"]),
                    st.one_of(values, st.lists(record_of(PLAN_ITEM, {"id": "dup", "query": "Q?"}), max_size=3)),
                    max_size=3),
    st.fixed_dictionaries({"categories": st.dictionaries(
        st.sampled_from(["aggregation", "multi_hop_2"]),
        st.one_of(values, st.fixed_dictionaries({"questions": st.lists(record_of(PLAN_ITEM), max_size=3)},
                                                optional={"difficulty": values})), max_size=2)}),
    values,
)


@SETTINGS
@given(plan_docs)
def test_korean_plan(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("plan") / "eval_questions.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    _check(path, "korean_plan")


GRAPHRAG = ["id", "source", "question", "answer", "question_type", "evidence", "evidence_triple"]
HOTPOT = ["_id", "id", "question", "answer", "type", "level", "supporting_facts", "context"]
HOTPOT_GOOD = {"_id": "dup", "question": "Q?", "answer": "A", "supporting_facts": [["T", 0], ["T", 0]],
               "context": [["T", ["s0.", "s1."]]]}
RAGCHECKER = ["query_id", "query", "gt_answer", "response", "retrieved_context"]


@SETTINGS
@given(st.lists(record_of(GRAPHRAG, {"id": "dup", "question": "Q?", "answer": "A", "evidence": "a.; b."}),
                max_size=4), st.sampled_from(["json", "parquet"]))
def test_graphrag_bench(tmp_path_factory, recs, suffix):
    path = tmp_path_factory.mktemp("grb") / f"novel_questions.{suffix}"
    if suffix == "json":
        path.write_text(_json_dump(recs), encoding="utf-8")
    else:  # Parquet needs one type per column: every value as text, the benchmark's own layout
        cols = {k: pa.array([None if r.get(k) is None else _cell(r.get(k)) for r in recs], pa.string())
                for k in GRAPHRAG}
        pq.write_table(pa.table(cols), path)
    _check(path, "graphrag_bench")


@SETTINGS
@given(st.lists(record_of(HOTPOT, HOTPOT_GOOD), max_size=4))
def test_hotpotqa(tmp_path_factory, recs):
    path = tmp_path_factory.mktemp("hotpot") / "hotpot.json"
    path.write_text(_json_dump(recs), encoding="utf-8")
    _check(path, "hotpotqa")


squad_qa = record_of(["id", "question", "answers", "is_impossible", "plausible_answers"],
                     {"id": "dup", "question": "Q?", "answers": [{"text": "A", "answer_start": 0}]})
squad_doc = st.fixed_dictionaries({"data": st.lists(st.one_of(values, st.fixed_dictionaries(
    {"title": values, "paragraphs": st.lists(st.one_of(values, st.fixed_dictionaries(
        {"context": st.one_of(text, values), "qas": st.lists(squad_qa, max_size=3)})), max_size=2)})), max_size=2)})


@SETTINGS
@given(squad_doc)
def test_squad_v2(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("squad") / "dev-v2.0.json"
    path.write_text(_json_dump(doc), encoding="utf-8")
    _check(path, "squad_v2")


@SETTINGS
@given(st.lists(record_of(RAGCHECKER, {"query_id": "dup", "query": "Q?", "gt_answer": "A",
                                       "retrieved_context": [{"doc_id": "c", "text": "t"}]}), max_size=4))
def test_ragchecker(tmp_path_factory, recs):
    path = tmp_path_factory.mktemp("ragc") / "checking_inputs.json"
    path.write_text(_json_dump({"results": recs}), encoding="utf-8")
    _check(path, "ragchecker")


trec_token = st.one_of(st.sampled_from(["q1", "q2", "d1", "d1", "0", "1", "-1", "2.5", "nan", "inf", ""]),
                       st.text(max_size=6))
trec_line = st.lists(trec_token, max_size=5).map(lambda parts: " ".join(parts))
trec_sep = st.sampled_from(["\t", " ", "  ", "\t\t"])


@SETTINGS
@given(st.lists(st.tuples(trec_token, trec_sep, trec_token), max_size=4), st.lists(trec_line, max_size=5),
       st.sampled_from(["\n", "\r\n"]))
def test_trec_topics_and_qrels(tmp_path_factory, topics, qrels, newline):
    folder = tmp_path_factory.mktemp("trec")
    path = folder / "topics.x.txt"
    path.write_text(newline.join(a + sep + b for a, sep, b in topics), encoding="utf-8")
    (folder / "qrels.x.txt").write_text(newline.join(qrels), encoding="utf-8")
    _check(path, "trec")


# ---- byte-level edge cases, every format ------------------------------------------------

FILES = {  # format -> (file name, a valid file's text)
    "native": ("q.jsonl", '{"id": "a", "question": "Q?"}\n'),
    "korean_plan": ("eval_questions.yaml", "single_hop:\n  - id: a\n    query: Q?\n"),
    "graphrag_bench": ("g.json", '[{"id": "a", "question": "Q?", "answer": "A"}]'),
    "hotpotqa": ("h.json", '[{"_id": "a", "question": "Q?", "answer": "A"}]'),
    "squad_v2": ("s.json", '{"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": '
                 '[{"id": "a", "question": "Q?", "answers": [{"text": "c"}]}]}]}]}'),
    "ragchecker": ("r.json", '{"results": [{"query_id": "a", "query": "Q?"}]}'),
    "trec": ("topics.t.txt", "a\tQ?\n"),
}


def _write(folder, fmt, data: bytes):
    name, _ = FILES[fmt]
    path = folder / name
    path.write_bytes(data)
    if fmt == "trec":
        (folder / "qrels.t.txt").write_bytes(b"a 0 d1 1\n")
    return path


@pytest.mark.parametrize("fmt", sorted(FILES))
@pytest.mark.parametrize("case", ["empty", "invalid_utf8", "deep_nesting", "valid"])
def test_edge_files(tmp_path, fmt, case):
    valid = FILES[fmt][1].encode()
    data = {"empty": b"", "invalid_utf8": valid.replace(b"Q?", b"Q\xff\xfe?"),
            "deep_nesting": valid.replace(b"Q?", b"Q?").rstrip() + b"\n" + b"[" * 200_000 + b"\n",
            "valid": valid}[case]
    path = _write(tmp_path, fmt, data)
    if case == "valid":
        assert _check(path, fmt), "the valid file must load"
        return
    with pytest.raises(EvalcoreError) as info:
        load_questions(path, fmt=fmt)
    if isinstance(info.value, InputError):
        assert info.value.file.startswith(str(tmp_path))


@pytest.mark.parametrize("fmt", sorted(set(FILES) - {"squad_v2"}))
def test_duplicate_question_ids_are_refused(tmp_path, fmt):
    name, valid = FILES[fmt]
    if fmt == "native":
        data = valid * 2
    elif fmt == "korean_plan":
        data = valid + "  - id: a\n    query: Q2?\n"
    elif fmt == "trec":
        data = valid * 2
    elif fmt == "ragchecker":
        data = '{"results": [{"query_id": "a", "query": "Q?"}, {"query_id": "a", "query": "Q?"}]}'
    else:
        item = json.loads(valid)[0]
        data = json.dumps([item, item])
    path = _write(tmp_path, fmt, data.encode())
    with pytest.raises(InputError) as info:
        load_questions(path, fmt=fmt)
    assert info.value.record is not None and info.value.field in {"id", "qid"}


@pytest.mark.parametrize("body, field", [
    ("- id: a\n  question: Q?\n  1: x\n", "1"),                                   # non-text key
    ("- id: a\n  question: Q?\n  gold_passages: [{chunk_id: c, relevance: .nan}]\n", "gold_passages.0.relevance"),
    ("- id: a\n  question: Q?\n  checks: [{type: number, number: .inf}]\n", "checks.0.number"),
    ("- id: a\n  question: Q?\n  metadata: [1, 2]\n", "metadata"),
    ("- id: a\n  question: Q?\n  tags: [[nested]]\n", "tags.0"),
])
def test_yaml_values_json_cannot_hold(tmp_path, body, field):
    """YAML can express what JSON cannot (non-text keys, .nan, .inf): each is refused by field."""
    path = tmp_path / "q.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_questions(path, fmt="native")
    assert (info.value.record, info.value.field) == (1, field)


json_records = st.lists(st.dictionaries(st.text(max_size=5), st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
    st.lists(st.integers(), max_size=3)), max_size=4), max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_records, st.sampled_from(["", " ", "\n", "\t \r\n"]), st.integers(1, 9),
       st.one_of(st.none(), st.integers(0, 400)))
def test_streamed_json_array_matches_json_loads(tmp_path_factory, recs, space, chunk, cut):
    """The JSON reader (records.sized_json, the one `.json` files get) decodes a top-level array
    element by element from chunks of the file; with chunks of 1-9 characters every element
    straddles a boundary. It must yield exactly what
    json.loads reads, and a truncated file (cut) must be an InputError, never a wrong record."""
    from evalcore.datasets import json_stream, records

    path = tmp_path_factory.mktemp("arr") / "a.json"
    text = space + "[" + space + ("," + space).join(json.dumps(r) for r in recs) + space + "]" + space
    if cut is not None and cut < len(text.rstrip()):
        text = text[:cut]
    path.write_text(text, encoding="utf-8")
    old = json_stream.TEXT_PIECE
    json_stream.TEXT_PIECE = chunk
    try:
        try:
            expected = json.loads(text)
        except ValueError:
            expected = None
        try:
            got = [rec for _, rec, _ in records.sized_json(path)]
        except InputError as exc:
            assert expected is None and exc.file == str(path), exc
            return
        assert got == expected
    finally:
        json_stream.TEXT_PIECE = old
