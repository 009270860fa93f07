"""One record costs a small, stated multiple of its size (issue 34, item 2; round 3's R3-6).

A 45 MB JSONL record took `evalcore import` to 1.6 GB, a 45 MB CSV cell to 883 MB: counting
the values of an answer of escaped quotes kept a regular-expression mark per escape, Parquet
statistics copied the longest answer three times (and kept it in the footer), and the text,
its row and its Arrow table were all alive while the file was written. The memory test runs
the CLI in a child process and reads its peak RSS (VmHWM) around each import, after a warm-up
on small files; the records are a few MB. docs/reliability.md, "Bounds", states the multiple.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.datasets.records import read_records
from evalcore.errors import InputError
from evalcore.scoring.importer import import_recorded
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.bounds import MAX_LABEL_CHARS
from evalcore.schemas.ids import MAX_NAME_CHARS
from evalcore.store import RunStore
from evalcore.common.text_input import LIMIT_ENV, stored_size

MB = 2 ** 20
HAS_PROC = Path("/proc/self/status").exists()

CLI = r"""
import json, sys
from evalcore.cli.main import main

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

def restart_peak():  # the peak from now on (Linux 4.0+); without it, a lower later peak reads as 0
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass

def run(argv):
    sys.argv = ["evalcore", *argv]
    try:
        main()
    except SystemExit as exc:
        return exc.code
    return 0

warm, real = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for argv in warm:
    run(argv)
results = []
for argv in real:
    restart_peak()
    base = peak()
    results.append({"code": run(argv), "growth": peak() - base})
print(json.dumps(results))
"""


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _csv(path: Path, records: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    return path


def _record(i: int, **fields: str) -> dict:
    return {"question_id": f"q{i}", "method": "m", "question": "What?", "answer": "a", **fields}


@pytest.mark.skipif(not HAS_PROC, reason="needs Linux /proc for peak RSS")
def test_one_large_record_costs_a_small_multiple_of_its_size(tmp_path):
    """A record in the shapes that cost most: an answer of escaped quotes and commas (the
    reported 1.6 GB case, 30 times its size) with a ground truth holding one emoji (Python
    holds such text in four bytes a character; the store keeps a ground truth three times),
    and the same answer as a CSV cell (quotes doubled). Each import grows the CLI by at most
    13 times the record plus 16 MB (docs/reliability.md, "Bounds"), and stores the text
    exactly."""
    n = 3 * MB // 2
    quotes = 'a",' * (n // 3)
    emoji = "b" * (n - 1) + "\U0001F600"
    cases = [(_jsonl(tmp_path / "both.jsonl", [_record(1, answer=quotes, ground_truth=emoji)]), 4 * n // 3 + n),
             (_csv(tmp_path / "quotes.csv", [_record(1, answer=quotes)]), 4 * n // 3)]  # a\", or a"", each
    small = _jsonl(tmp_path / "small.jsonl", [_record(0)])
    store = ["--store", str(tmp_path / "runs")]
    real = [store + ["import", str(path), "--name", path.name] for path, _ in cases]
    out = subprocess.run([sys.executable, "-c", CLI, json.dumps([store + ["import", str(small)]]), json.dumps(real)],
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip(), out.stderr[-2000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    for (path, size), result in zip(cases, results):
        assert result["code"] == 0, (path.name, out.stderr[-1000:])
        assert result["growth"] < 13 * size + 16 * MB, f"{path.name}: peak RSS grew {result['growth'] / MB:.0f} MB"
    runs = RunStore(tmp_path / "runs")
    for name in ("both.jsonl", "quotes.csv"):
        assert run_responses(runs, runs.resolve(name))[0].answer == quotes
    assert run_questions(runs, runs.resolve("both.jsonl"))[0].ground_truth == emoji


def test_parquet_footers_hold_no_free_text(tmp_path):
    """Min/max statistics are kept for the columns readers filter on, not for answers or the
    record's JSON: a 1 MB answer no longer sits twice in every footer of its run, nor is it
    dictionary-encoded (one more copy of it to write and to read back)."""
    answers = _jsonl(tmp_path / "a.jsonl", [_record(1, answer="x" * MB), _record(2)])
    store = RunStore(tmp_path / "runs")
    run_id = import_recorded(store, answers).run_id
    files = sorted((tmp_path / "runs" / run_id / "data").glob("responses-*.parquet"))
    assert files
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.serialized_size < 64 * 1024, meta.serialized_size
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    chunk = meta.row_group(0).column(names.index("answer"))
    assert chunk.statistics is None or not chunk.statistics.has_min_max
    assert not {"RLE_DICTIONARY", "PLAIN_DICTIONARY"} & set(chunk.encodings)
    key = meta.row_group(0).column(names.index("question_id")).statistics
    assert key is not None and key.has_min_max  # readers still skip row groups by the keys


def test_write_times_are_stored_plain_and_keys_in_a_dictionary(tmp_path):
    """A row's write time is its own: kept in a dictionary it cost a second copy of every time
    (a live run's metric values: 126 KB against 88 KB), so times are written plain; the keys,
    a few distinct values each, stay dictionary-encoded."""
    from evalcore.schemas import MetricValue, RunManifest
    from evalcore.store import FORMAT_VERSION

    store = RunStore(tmp_path / "runs")
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="r1",
                                          evalcore_version="test", methods=["a"]))
    writer.write_metrics([MetricValue(run_id="r1", method="a", question_id=f"q{i}", metric="f1", value=i / 50,
                                      group="lexical") for i in range(50)])
    writer.publish()
    meta = pq.ParquetFile(next((tmp_path / "runs" / "r1" / "data").glob("metrics-*.parquet"))).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    dictionary = {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}
    assert not dictionary & set(meta.row_group(0).column(names.index("computed_at")).encodings)
    assert dictionary & set(meta.row_group(0).column(names.index("question_id")).encodings)


UNCLOSED = r"""
import sys
from evalcore.datasets.records import read_records
from evalcore.errors import InputError
try:
    list(read_records(sys.argv[1]))
except InputError as exc:
    print(exc)
"""


def test_a_line_with_an_unclosed_string_is_refused_without_rescanning_it(tmp_path):
    """A 1 MB line whose answer of escaped quotes and commas is never closed: its values were
    counted by trying a string at every quote inside it, each attempt running to the end of
    the line (a 260 KB line took minutes). Now the count stops at the unclosed quote and the
    JSON parser names the error at once."""
    path = tmp_path / "open.jsonl"
    path.write_text('{"question_id": "q1", "answer": "' + 'a\\",' * (MB // 4) + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", UNCLOSED, str(path)], capture_output=True, text=True, timeout=60)
    assert "record 1" in out.stdout and "invalid JSON" in out.stdout, out.stdout + out.stderr[-500:]


def test_text_is_bounded_at_the_size_json_stores_it(tmp_path, monkeypatch):
    """A CSV cell or a Parquet string of 1.5 MB of control characters is 9 MB of JSON once
    stored (\\u0001 for each): under a 2 MB bound it is refused naming the record, while 1.5 MB
    of plain text, and a JSONL answer spelling the same characters as escapes, are read."""
    monkeypatch.setenv(LIMIT_ENV, "2")
    controls, plain = "\x01" * (3 * MB // 2), "x" * (3 * MB // 2)
    assert stored_size(controls) == 6 * len(controls) and stored_size(plain) == len(plain)
    for suffix in ("csv", "parquet"):
        bad, good = tmp_path / f"bad.{suffix}", tmp_path / f"good.{suffix}"
        for path, text in ((bad, controls), (good, plain)):
            if suffix == "csv":
                _csv(path, [_record(1), _record(2, answer=text)])
            else:
                pq.write_table(pa.Table.from_pylist([_record(1), _record(2, answer=text)]), path)
        with pytest.raises(InputError) as info:
            list(read_records(bad))
        assert info.value.record == 2 and "2 MB" in str(info.value), str(info.value)
        assert len(list(read_records(good))) == 2
    escaped = _jsonl(tmp_path / "escaped.jsonl", [_record(1, answer="\x01" * (MB // 4))])
    assert list(read_records(escaped))[0][1]["answer"] == "\x01" * (MB // 4)


def test_a_name_or_label_past_its_bound_is_refused_by_field(tmp_path):
    """Ids, methods and labels are keys, held in several columns, hashed and grouped on: an
    8 MB question id cost twenty times its size. Past 4 096 characters each is refused naming
    the field; at the bound it is stored."""
    long_name, long_label = "n" * (MAX_NAME_CHARS + 1), "l" * (MAX_LABEL_CHARS + 1)
    for field, value in (("question_id", long_name), ("method", long_name), ("category", long_label)):
        answers = _jsonl(tmp_path / f"{field}.jsonl", [_record(1, **{field: value})])
        with pytest.raises(InputError) as info:
            import_recorded(RunStore(tmp_path / "runs"), answers)
        assert info.value.field in (field, "id") and "at most 4,096" in str(info.value), str(info.value)
    with pytest.raises(ValueError):
        EvalQuestion(id="q", question="Q?", tags=[long_label])
    fine = EvalResponse(question_id="q" * MAX_NAME_CHARS, method="m" * MAX_NAME_CHARS, answer="a")
    assert len(fine.question_id) == MAX_NAME_CHARS
