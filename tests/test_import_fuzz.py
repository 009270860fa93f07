"""Property-based tests: whatever a recorded-answers file holds, import either succeeds or raises
InputError naming the file — never another exception, never a half-written run."""

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.errors import InputError
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.queries import run_responses
from evalcore.store import RunStore

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                    st.text(max_size=30))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=10)
field_names = st.sampled_from(["question_id", "method", "question", "answer", "ground_truth", "contexts",
                               "retrieved", "citations", "abstained", "latency_ms", "token_usage",
                               "answerable", "category", "gold_chunk_ids", "user_input", "response",
                               "extra_field"])
records = st.dictionaries(field_names, values, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(records, min_size=0, max_size=5))
def test_any_jsonl_gives_a_run_or_a_clear_error(tmp_path_factory, recs):
    tmp = tmp_path_factory.mktemp("fuzz")
    store = RunStore(tmp / "runs")
    path = tmp / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    try:
        result = import_recorded(store, path)
    except InputError as exc:
        assert exc.file == str(path)
        assert store.run_ids() == []
        return
    assert store.run_ids() == [result.run_id]
    assert len(run_responses(store, result.run_id)) == result.n_records


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(tmp_path_factory, blob):
    tmp = tmp_path_factory.mktemp("bytes")
    store = RunStore(tmp / "runs")
    for suffix in (".jsonl", ".json", ".csv"):
        path = tmp / f"blob{suffix}"
        path.write_bytes(blob)
        try:
            import_recorded(store, path)
        except InputError:
            pass
    # whatever happened, nothing half-made is visible
    for run_id in store.run_ids():
        assert store.manifest(run_id).status == "complete"


def test_huge_answer_and_unicode_roundtrip(tmp_path):
    store = RunStore(tmp_path / "runs")
    big = "가" * 2_000_000 + string.printable
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"question_id": "q", "method": "m", "question": "큰 답?", "answer": big},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    result = import_recorded(store, path)
    (resp,) = run_responses(store, result.run_id)
    assert resp.answer == big


def test_error_names_record_in_long_file(tmp_path):
    store = RunStore(tmp_path / "runs")
    good = {"question_id": "q", "method": "m", "question": "Q?", "answer": "a"}
    lines = [json.dumps({**good, "question_id": f"q{i}"}) for i in range(500)]
    lines[371] = json.dumps({**good, "question_id": "q371", "abstained": "maybe"})
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    try:
        import_recorded(store, path)
    except InputError as exc:
        assert (exc.record, exc.field) == (372, "abstained")
    else:
        raise AssertionError("a non-boolean 'abstained' must be refused")
    assert store.run_ids() == []
