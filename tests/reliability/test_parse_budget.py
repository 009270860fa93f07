"""What parsing builds is bounded, not only what is read (issue 34, item 2, round 4).

The byte bounds let through input that costs 100-1000x its size once parsed: a 900 KB answers
file of 300 000 `{}` took 1 GB, a 6 KB gzipped target reply 600 MB, an 11 MB YAML config
1.8 GB, a 1.9 KB Parquet file 1.5 GB. Now the values a record (a reply, a YAML file) makes are
counted before they are built (evalcore/common/value_budget.py), Parquet is read in batches sized
from its metadata with each row's decoded size checked (evalcore/datasets/parquet_rows.py),
and settings files have small bounds of their own. The memory tests, in child processes, are
in test_parse_budget_memory.py.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.datasets import json_stream
from evalcore.datasets.records import read_records
from evalcore.errors import EvalcoreError, InputError

HAS_PROC = Path("/proc/self/status").exists()
VALUES_ENV, YAML_NODES_ENV = "EVALCORE_MAX_RECORD_VALUES", "EVALCORE_MAX_YAML_NODES"  # (spelt out: the
# modules that read them are imported in the tests, so each test fails alone where they are missing)
HEAD = b'{"question_id": "q", "method": "m", "question": "x", "answer": "a", '


def _values(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet=' ,[]{}"\\:ab\n'),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                                        max_size=4), max_leaves=25)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]))
def test_the_count_is_exact_and_the_cheap_bound_never_under(value, indent):
    """Commas and brackets inside strings are not values; empty containers are one value."""
    from evalcore.common.value_budget import TooManyValues, check_json, count_values, exact_values

    text = json.dumps(value, indent=indent)
    assert exact_values(text) == _values(value)
    assert count_values(text, 0, 10 ** 6)[0] == _values(value)
    assert check_json(text, 10 ** 6) >= _values(value)
    if isinstance(value, (list, dict)):
        assert count_values(" " + text + ' , "after"', 0, 10 ** 6)[1] == len(text) + 1
    if _values(value) > 1:
        with pytest.raises(TooManyValues):
            check_json(text, _values(value) - 1)
        with pytest.raises(TooManyValues):
            check_json(text.encode("utf-16"), _values(value) - 1)


def _record(extra: str) -> str:
    return HEAD.decode() + extra + "}"


BUDGET_FILES = [  # (name, text: a record of 21 values (then one of 20, the budget), record refused)
    ("answers.jsonl", _record('"retrieved": [' + ", ".join(["{}"] * 15) + "]") + "\n"
     + _record('"retrieved": [' + ", ".join(["{}"] * 14) + "]") + "\n", 1),
    ("answers.json", "[" + _record('"contexts": [' + ", ".join(['"a, [b"'] * 15) + "]") + ",\n"
     + _record('"contexts": [' + ", ".join(['"a, [b"'] * 14) + "]") + "]", 1),
    ("wrapped.json", '{"records": [' + _record('"gold_chunk_ids": [' + ", ".join(["1"] * 16) + "]") + "]}", 1),
    ("answers.csv", "question_id,question,answer,contexts\nq,x,a,\"" + json.dumps(["c"] * 17).replace('"', '""')
     + "\"\n", 1),
    ("py.csv", "question_id,question,answer,contexts\nq,x,a,\"" + str(["c"] * 17) + "\"\n", 1),
]


@pytest.mark.parametrize("name, text, record", BUDGET_FILES, ids=[f[0] for f in BUDGET_FILES])
def test_a_record_over_the_value_budget_is_refused_naming_it(tmp_path, monkeypatch, name, text, record):
    monkeypatch.setenv(VALUES_ENV, "20")
    monkeypatch.setattr(json_stream, "CHUNK", 7)  # records straddle what is held
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.file == str(path) and info.value.record == record, str(info.value)
    assert "more than 20 JSON values" in str(info.value) and VALUES_ENV in str(info.value)


def test_a_record_at_the_budget_is_read_with_its_size(tmp_path, monkeypatch):
    from evalcore.datasets.records import read_sized_records

    monkeypatch.setenv(VALUES_ENV, "20")
    monkeypatch.setattr(json_stream, "CHUNK", 7)
    for name, text, _ in BUDGET_FILES[:2]:
        path = tmp_path / name
        path.write_text(text.split("\n", 1)[1] if name.endswith("l") else "[" + text.split(",\n", 1)[1],
                        encoding="utf-8")
        [(recno, rec, size)] = list(read_sized_records(path))
        assert _values(rec) == 20 and size.values >= 20 and size.chars > 100


def test_a_value_outside_the_records_is_bounded_too(tmp_path, monkeypatch):
    monkeypatch.setenv(VALUES_ENV, "20")
    path = tmp_path / "wrapped.json"
    path.write_text('{"meta": {"m": [' + ",".join(["[]"] * 30) + ']}, "records": [{"a": 1}]}', encoding="utf-8")
    with pytest.raises(InputError, match="a value outside the records holds more than 20"):
        list(read_records(path))


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "lots"])
def test_a_bad_value_budget_is_refused(monkeypatch, value):
    from evalcore.common.value_budget import value_limit

    monkeypatch.setenv(VALUES_ENV, value)
    with pytest.raises(EvalcoreError, match=VALUES_ENV):
        value_limit()


def test_a_header_of_more_columns_than_the_budget_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(VALUES_ENV, "50")
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(60)) + "\n" + ",".join("x" * 60) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="the header has 60 columns; a record may hold at most 50"):
        list(read_records(path))


def test_an_unknown_fields_error_names_a_few_and_counts_the_rest(tmp_path):
    """5 000 unknown columns: one short line naming ten of them (it listed all, 76 s for 500 000)."""
    from evalcore.scoring.importer import parse_recorded

    path = tmp_path / "wide.csv"
    names = [f"zz{i}" for i in range(5000)]
    path.write_text("question_id,question,answer," + ",".join(names) + "\nq,x,a," + ",".join(["1"] * 5000) + "\n",
                    encoding="utf-8")
    with pytest.raises(InputError) as info:
        parse_recorded(path)
    assert "and 4,989 more" in str(info.value) and len(str(info.value)) < 600, str(info.value)[:300]


def test_extra_fields_kept_are_listed_a_few_and_counted(tmp_path):
    from evalcore.scoring.import_fields import MAX_KEPT
    from evalcore.scoring.importer import import_recorded
    from evalcore.store import RunStore

    path = tmp_path / "wide.csv"
    n = MAX_KEPT + 500
    path.write_text("question_id,question,answer," + ",".join(f"zz{i}" for i in range(n)) + "\nq,x,a,"
                    + ",".join(["1"] * n) + "\n", encoding="utf-8")
    result = import_recorded(RunStore(tmp_path / "runs"), path, allow_extra=True)
    note = result.notes()[-1]
    assert note.startswith("kept in each question's metadata") and "and 1,490 more" in note and len(note) < 400


# ---- the fingerprint ---------------------------------------------------------------------------

def test_import_reads_no_more_than_a_piece_of_a_binary_file_before_refusing_it(tmp_path, monkeypatch):
    """The fingerprint (a hash of the whole file) came before the first record: a 30 GB file of
    NUL bytes took 47 s to refuse. It is taken once the records validated."""
    from evalcore.scoring import importer
    from evalcore.common.fingerprint import file_fingerprint
    from evalcore.store import RunStore

    def too_early(path):
        raise AssertionError(f"{path} fingerprinted before its records were read")

    crash = tmp_path / "crash.jsonl"
    with open(crash, "wb") as fh:
        fh.truncate(8 * 2 ** 20)
    monkeypatch.setattr(importer, "file_fingerprint", too_early)
    with pytest.raises(InputError, match="NUL byte at byte offset 0"):
        importer.import_recorded(RunStore(tmp_path / "runs"), crash)
    monkeypatch.setattr(importer, "file_fingerprint", file_fingerprint)
    good = tmp_path / "good.jsonl"
    good.write_bytes(HEAD + b'"retrieved": []}\n')
    store = RunStore(tmp_path / "runs")
    result = importer.import_recorded(store, good)
    assert store.manifest(result.run_id).source["fingerprint"] == file_fingerprint(good)


# ---- settings and YAML -------------------------------------------------------------------------

def test_settings_files_have_small_bounds(tmp_path):
    from evalcore.cli.score_commands import _options_from
    from evalcore.runner.config import load_config
    from evalcore.common.safe_yaml import read_yaml

    many = tmp_path / "many.yaml"
    many.write_text("".join(f"k{i}: {{}}\n" for i in range(11_000)), encoding="utf-8")  # 22 000 nodes, 150 KB
    for read in (load_config, lambda p: _options_from(str(p), [])):
        with pytest.raises(InputError, match="more than 20,000 YAML nodes .*settings files"):
            read(many)
    assert len(read_yaml(many)) == 11_000  # a question file may hold more
    big = tmp_path / "big.yaml"
    big.write_text("a: '" + "x" * (2 ** 20) + "'\n", encoding="utf-8")
    with pytest.raises(InputError, match="a settings file .* may be at most 1 MB"):
        load_config(big)


def test_a_yaml_question_file_has_a_node_budget(tmp_path, monkeypatch):
    from evalcore.datasets.registry import load_questions

    monkeypatch.setenv(YAML_NODES_ENV, "100")
    path = tmp_path / "questions.yaml"
    path.write_text("".join(f"- id: q{i}\n  question: Q{i}?\n" for i in range(30)), encoding="utf-8")  # 151 nodes
    with pytest.raises(InputError) as info:
        load_questions(path)
    assert info.value.file == str(path) and re.search(r"more than 100 YAML nodes \(at line \d+\)", str(info.value))
    assert YAML_NODES_ENV in str(info.value)
    monkeypatch.setenv(YAML_NODES_ENV, "151")
    assert len(load_questions(path)) == 30


def test_the_pure_python_loader_counts_nodes_too(monkeypatch):
    from evalcore.common import safe_yaml

    monkeypatch.setattr(safe_yaml, "_CSafeLoader", None)
    with pytest.raises(safe_yaml.TooManyNodes, match="more than 10 YAML nodes"):
        safe_yaml.loads("[" + ", ".join(["[]"] * 20) + "]", max_nodes=10)
    assert safe_yaml.loads("[1, 2]", max_nodes=3) == [1, 2]


# ---- Parquet -----------------------------------------------------------------------------------

def _repeated(path: Path, rows: int, size: int, text: str = "a", **options) -> None:
    """`rows` rows whose answer is one string of `size` bytes, stored once in a dictionary."""
    value = (text * (size // len(text) + 1))[:size]
    answer = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([value]))
    pq.write_table(pa.table({"question_id": [f"q{i}" for i in range(rows)], "method": ["m"] * rows,
                             "question": ["x"] * rows, "answer": answer}), path, compression="zstd", **options)


def test_columns_of_every_arrow_type_have_a_cost():
    """An all-null column (what our own export writes for a field no answer has), decimals, times:
    pyarrow raises for the width of a type without one, which must not stop the read."""
    from decimal import Decimal

    from evalcore.datasets.parquet_rows import row_costs

    batch = pa.table({"none": pa.nulls(2), "dec": pa.array([Decimal("1.5"), None], pa.decimal128(5, 2)),
                      "ts": pa.array([1, 2], pa.timestamp("us")), "ok": [True, False]}).to_batches()[0]
    sizes, values = row_costs(batch)
    assert list(values) == [5, 5] and all(size >= 1 + 16 + 8 for size in sizes)


def test_row_costs_are_what_the_rows_decode_to():
    from evalcore.datasets.parquet_rows import row_costs

    table = pa.table({"s": ["ab", None, "é"], "n": [1, 2, 3], "l": [["x", "yz"], [], None],
                      "d": pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), pa.array(["p", "qqq"])),
                      "st": [{"a": "x", "b": [1, 2]}, {"a": None, "b": []}, None]})
    for batch in (table.to_batches()[0], table.to_batches()[0].slice(1, 2)):
        sizes, values = row_costs(batch)
        for size, count, row in zip(sizes, values, batch.to_pylist()):
            assert count >= _values(row) and (row["st"] is None or count == _values(row))  # a null struct: its fields
            text = sum(len(v.encode()) for v in (row["s"], row["d"], row["st"] and row["st"]["a"]) if v)
            assert size >= text + sum(len(v) for v in row["l"] or [])


@pytest.mark.parametrize("options", [{}, {"store_schema": False}], ids=["arrow-schema", "no-arrow-schema"])
def test_a_dictionary_value_over_the_record_bound_is_refused_naming_the_row(tmp_path, monkeypatch, options):
    monkeypatch.setenv("EVALCORE_MAX_RECORD_MB", "1")
    path = tmp_path / "b.parquet"
    _repeated(path, 5, 2 * 2 ** 20, secrets.token_hex(2 ** 20), **options)  # not compressible: no ratio refusal
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.record == 1 and "the row decodes to 2.0 MB, more than 1 MB" in str(info.value)


def test_a_row_over_the_value_budget_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(VALUES_ENV, "100")
    path = tmp_path / "l.parquet"
    pq.write_table(pa.table({"question_id": ["q1", "q2"], "contexts": [["c"] * 10, ["c"] * 200]}), path)
    with pytest.raises(InputError) as info:
        list(read_records(path))
    assert info.value.record == 2 and "holds 203 values, more than 100" in str(info.value)


def test_a_column_that_inflates_over_a_hundredfold_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALCORE_MAX_RECORD_MB", "1")
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"question_id": ["q1", "q2", "q3"], "answer": ["a" * 2 ** 20] * 3}), path,
                   compression="zstd", use_dictionary=False)
    with pytest.raises(InputError, match="row group 1, column 'answer': .* bytes decompress to 3 MB"):
        list(read_records(path))


def test_an_arrow_error_without_words_is_named_by_its_type():
    from evalcore.datasets.parquet_rows import _said

    assert _said(pa.ArrowInvalid("")) == "ArrowInvalid"
    assert "does not fit in memory" in _said(pa.ArrowMemoryError("realloc of size 512131072 failed"))


def test_buffered_answers_are_written_by_what_they_hold():
    """A live run wrote every `batch_size` (16) answers: sixteen replies of 40 000 chunks
    each were held at once. The buffer is written once it holds the value budget."""
    from evalcore.runner.engine import ResponseSink
    from evalcore.schemas import EvalResponse

    sink = ResponseSink(writer=None, batch_size=16)
    big = EvalResponse(question_id="q", method="m", answer="a",
                       retrieved=[{"rank": i + 1, "text": "t"} for i in range(30_000)])
    assert sink.add(EvalResponse(question_id="q0", method="m", answer="a")) is False
    assert sink.add(big) is False
    assert sink.add(big) is True


# ---- TREC --------------------------------------------------------------------------------------

def test_a_trec_line_longer_than_arrow_s_block_is_read(tmp_path, monkeypatch):
    """A line longer than Arrow's parsing block failed with "straddling object straddles two
    block boundaries", naming no line; the block now has room for the longest line."""
    from evalcore.datasets import trec

    monkeypatch.setattr(trec, "BLOCK", 2 ** 20)  # (so a 9 MB line spans several of evalcore's blocks)
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 1.0 tag\nq1 Q0 " + "d" * (9 * 2 ** 20) + " 2 0.5 tag\nq2 Q0 d3 1 0.1 tag\n",
                    encoding="utf-8")
    table = trec.read_run_table(path)
    assert table.num_rows == 3 and len(table.column("docno")[1].as_py()) == 9 * 2 ** 20


def test_json_text_inside_a_record_or_a_judge_reply_is_bounded_too(monkeypatch):
    """JSON held as text inside a record (a span's metadata, an OpenInference value) or sent
    by a judge is parsed on its own: it gets the same budget."""
    from evalcore.judges.parsing import parse_json
    from evalcore.judges.tasks import ParseError
    from evalcore.traces.spans import flatten

    monkeypatch.setenv(VALUES_ENV, "20")
    many = "{\"a\": [" + ", ".join(["{}"] * 30) + "]}"
    with pytest.raises(ParseError, match="the reply holds more than 20 JSON values"):
        parse_json(many)
    assert flatten({"metadata": many}) == {"metadata": many}  # kept as the text it is
    assert flatten({"metadata": '{"k": [1, 2]}'}) == {"metadata.k": [1, 2]}


def test_a_phoenix_page_makes_at_most_ten_records_worth_of_values(monkeypatch):
    """A page (100 spans) under the 64 MB cap could make 20 million values; it is counted first."""
    import asyncio

    from evalcore.traces import phoenix_http

    monkeypatch.setenv(VALUES_ENV, "20")
    page = b'{"data": [' + b", ".join([b"{}"] * 300) + b"]}"

    async def read(body):
        session = phoenix_http.Session("http://127.0.0.1:9", "phoenix proj", phoenix_http.Limits(), None,
                                       asyncio.get_running_loop().time() + 60)

        async def exchange(method, path, *args, **kwargs):
            return body
        session._exchange = exchange
        return await session.call("GET", "/v1/projects/proj/spans", "reading spans", "page 1")

    with pytest.raises(InputError, match="phoenix proj, record page 1: the reply holds more than 200 JSON values"):
        asyncio.run(read(page))
    assert asyncio.run(read(b'{"data": [' + b", ".join([b"{}"] * 150) + b"]}")) == {"data": [{}] * 150}
