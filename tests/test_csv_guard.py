"""One spreadsheet-formula guard for every CSV evalcore writes, undone when evalcore reads it back.

Issue 34, item 7(a): `labels export` wrote `=HYPERLINK(...)` from an imported `who` or `note`
as it was, while `export -f csv` guarded it. Now every CSV goes through
evalcore/common/csv_safety.py (labels export, `export -f csv`, the dashboard's download buttons),
and every CSV reader takes the guard off again, so `labels import` of a `labels export` and
`import` of an `export -f csv` read back exactly what was exported — a note that really begins
with "=" or "'=" included.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.common.csv_safety import frame_to_csv, guard, is_risky, rows_to_csv, unguard
from evalcore.store import query_df

PKG = Path(__file__).resolve().parents[1] / "evalcore"

# Text a spreadsheet runs (or might, after skipping blanks), and text that only looks guarded.
RISKY = ["=HYPERLINK(\"http://evil.invalid\",\"click\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)",
         "\t=1+1", "\r=1+1", "\n=1", " =1+1", "  @x", "\u3000=1", "\uff1d1+1", "\uff0bcmd", "\x00=1", "\x1b=1",
         "\u200b=1", "\ufeff@x", "\u00a0-2+3"]
LOOKS_GUARDED = ["'=1+1", "''=1+1", "'+x", "'\t=1", "' =1"]
PLAIN = ["hello", "it's", "'quoted'", "'", "-1", "+0.5", "-2e3", ".5", "1-2", "a=b", "", "x@y.z", "'-1"]


@pytest.mark.parametrize("text", RISKY)
def test_risky_cells_get_one_apostrophe(text):
    assert is_risky(text)
    assert guard(text) == "'" + text
    assert unguard(guard(text)) == text


@pytest.mark.parametrize("text", LOOKS_GUARDED)
def test_text_that_looks_guarded_round_trips(text):
    assert guard(text) == "'" + text and unguard(guard(text)) == text


@pytest.mark.parametrize("text", PLAIN)
def test_plain_cells_and_numbers_are_left_alone(text):
    assert guard(text) == text and unguard(text) == text


def test_non_text_values_are_left_alone():
    assert guard(-1.5) == -1.5 and guard(None) is None and guard(3) == 3


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("=+-@'\t\r\n x1.e\uff1d\x1b"), max_size=8) | st.text(max_size=12))
def test_guard_round_trips_any_text_and_leaves_nothing_runnable(text):
    written = guard(text)
    assert unguard(written) == text
    assert not is_risky(written)  # what a spreadsheet sees never starts a formula


def _csv_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def test_both_writers_guard_every_text_cell_and_header():
    import pandas as pd

    df = pd.DataFrame({"=h": RISKY, "n": [-1.0] * len(RISKY)})
    for text in (frame_to_csv(df), rows_to_csv([{"=h": v, "n": -1.0} for v in RISKY], ["=h", "n"])):
        cells = _csv_cells(text)
        assert not any(is_risky(c) for c in cells), text
        assert "-1.0" in cells  # a number stays a number


def test_every_csv_the_product_writes_goes_through_the_one_guard():
    """No module but csv_safety writes CSV itself (pandas to_csv, csv.writer, csv.DictWriter), so a
    new download or export cannot forget the guard."""
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "csv_safety.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("to_csv", "writer", "DictWriter"):
                base = ast.unparse(node.value)
                if node.attr == "to_csv" or base == "csv":
                    offenders.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {ast.unparse(node)}")
    assert not offenders, offenders


def test_dashboard_download_uses_the_guard():
    from evalcore.ui import safe_widgets

    assert safe_widgets.frame_to_csv is frame_to_csv


# ---- labels export -> labels import ------------------------------------------------------------

NOTES = ["=HYPERLINK(\"http://evil.invalid\",\"x\")", "'=1+1", "''=2", "+cmd|' /C calc'!A0", "-2+3",
         "@SUM(A1)", "plain note", "it's fine", "=a\rb", "two\r\nlines"]


def _cli(root, *args):
    return CliRunner().invoke(app, ["--store", str(root), *args])


@pytest.fixture
def labelled(tmp_path):
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=len(NOTES), n_metrics=4, judge_calls=False)
    run = store.run_ids()[0]
    qids = sorted(query_df(store, "SELECT DISTINCT question_id FROM metrics WHERE metric = 'answer_class'")
                  .question_id)
    path = tmp_path / "in.jsonl"  # JSONL in: the notes arrive exactly as written
    path.write_text("".join(json.dumps({"run": run, "method": "local_search", "question_id": q,
                                        "metric": "answer_class", "label": "CORRECT", "who": note,
                                        "note": note}) + "\n" for q, note in zip(qids, NOTES)), encoding="utf-8")
    res = _cli(store.root, "labels", "import", str(path))
    assert res.exit_code == 0, res.output
    return store, tmp_path


def test_labels_export_guards_who_and_note(labelled):
    store, tmp = labelled
    out = tmp / "export.csv"
    assert _cli(store.root, "labels", "export", "-o", str(out)).exit_code == 0
    with open(out, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(NOTES)
    for row in rows:
        for field, value in row.items():
            assert not is_risky(value), (field, value)
    assert {r["note"] for r in rows} == {guard(n) for n in NOTES}
    res = _cli(store.root, "labels", "export")   # to stdout: the same cells, control characters shown
    assert res.exit_code == 0, res.output
    assert not any(is_risky(c) for c in _csv_cells(res.stdout_bytes.decode("utf-8")))


def test_labels_export_reimports_to_the_same_text(labelled):
    store, tmp = labelled
    out = tmp / "export.csv"
    assert _cli(store.root, "labels", "export", "-o", str(out)).exit_code == 0
    res = _cli(store.root, "labels", "import", str(out))
    assert res.exit_code == 0, res.output
    got = query_df(store, "SELECT who, note FROM annotations")
    assert sorted(got.note) == sorted(NOTES * 2)      # each note twice, both exactly as first written
    assert sorted(got.who) == sorted(NOTES * 2)


# ---- export -f csv -> import -------------------------------------------------------------------

def test_run_export_reimports_to_the_same_text(tmp_path):
    from evalcore.scoring.importer import import_recorded
    from evalcore.store import RunStore

    store = RunStore(tmp_path / "runs")
    texts = NOTES + ["\t=1", " =1", "-1", "cr\ronly"]
    src = tmp_path / "answers.jsonl"
    src.write_text("".join(json.dumps({"question_id": f"q{i}", "method": "m", "question": f"Q {i}",
                                       "answer": t, "ground_truth": t}) + "\n" for i, t in enumerate(texts)),
                   encoding="utf-8")
    first = import_recorded(store, src, name="first").run_id
    exported = tmp_path / "export.csv"
    assert _cli(store.root, "export", first, "-f", "csv", "-o", str(exported)).exit_code == 0
    assert not any(is_risky(c) for c in _csv_cells(exported.read_text(encoding="utf-8")))
    second = import_recorded(store, exported, name="second").run_id
    sql = "SELECT question_id, answer FROM responses WHERE run_id = ? ORDER BY question_id"
    a, b = query_df(store, sql, [first]), query_df(store, sql, [second])
    assert a.answer.tolist() == b.answer.tolist() and sorted(a.answer) == sorted(texts)
    sql = "SELECT ground_truth FROM questions WHERE run_id = ? ORDER BY question_id"
    assert query_df(store, sql, [first]).ground_truth.tolist() == query_df(store, sql, [second]).ground_truth.tolist()


# ---- NUL: one way in, and never an export that cannot be re-imported (issue 34 round 4, item 12) ----
# JSON `\u0000` was accepted by `import` and `labels import`, stored as NUL, written raw into the CSV
# export, and the re-import refused it as binary data. Now every reader of records replaces NUL (like
# a lone surrogate) by U+FFFD and counts it, and the CSV writers never write NUL.

FFFD = "\ufffd"


def _import(root, path, *args):
    return _cli(root, "import", str(path), *args)


def test_a_nul_in_answers_is_replaced_on_the_way_in_and_every_export_reimports(tmp_path):
    from evalcore.store import RunStore

    root = tmp_path / "runs"
    src = tmp_path / "n.jsonl"
    src.write_text(json.dumps({"question_id": "q\u00001", "method": "m\u0000", "question": "x\u0000",
                               "answer": "a\u0000b", "ground_truth": "\u0000"}) + "\n", encoding="utf-8")
    res = _import(root, src, "-n", "nul")
    assert res.exit_code == 0, res.output
    assert "U+FFFD in 5 field(s) of record(s) 1" in res.output
    store = RunStore(root)
    run = store.run_ids()[0]
    assert store.manifest(run).source["text_repairs"]["fields_replaced"] == 5
    got = query_df(store, "SELECT r.question_id, r.method, r.answer, q.question, q.ground_truth FROM responses r "
                          "JOIN questions q USING (run_id, question_id)").iloc[0].tolist()
    assert got == [f"q{FFFD}1", f"m{FFFD}", f"a{FFFD}b", f"x{FFFD}", FFFD]
    for fmt in ("csv", "parquet"):   # (the JSON export is no answers file: {"run_id", "rows"})
        out = tmp_path / f"export.{fmt}"
        assert _cli(root, "export", run, "-f", fmt, "-o", str(out)).exit_code == 0
        res = _import(root, out, "-n", f"again-{fmt}")
        assert res.exit_code == 0, (fmt, res.output)
    answers = query_df(store, "SELECT DISTINCT answer FROM responses").answer.tolist()
    assert answers == [f"a{FFFD}b"]


def test_every_reader_of_records_replaces_nul(tmp_path, caplog):
    """Questions (any loader), YAML, Parquet: the same replacement, with one warning naming the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalcore.datasets import load_questions

    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text(json.dumps({"id": "q1", "question": "Q\u0000?", "ground_truth": "\ud800"}) + "\n",
                     encoding="utf-8")
    yaml_file = tmp_path / "q.yaml"
    yaml_file.write_text('- id: q1\n  question: "Q\\0?"\n  ground_truth: "a"\n', encoding="utf-8")
    parquet = tmp_path / "q.parquet"
    pq.write_table(pa.table({"id": ["q1"], "question": ["Q\x00?"], "ground_truth": ["a"]}), parquet)
    for path in (jsonl, yaml_file, parquet):
        caplog.clear()
        (question,) = load_questions(path)
        assert question.question == f"Q{FFFD}?", path
        assert any(str(path) in r.getMessage() and "U+FFFD" in r.getMessage() for r in caplog.records), path


def test_labels_with_nul_import_and_their_export_reimports(labelled):
    store, tmp = labelled
    run = store.run_ids()[0]
    q = query_df(store, "SELECT question_id FROM annotations LIMIT 1").question_id[0]
    src = tmp / "nul.jsonl"
    src.write_text(json.dumps({"run": run, "method": "local_search", "question_id": q, "metric": "answer_class",
                               "label": "WRONG", "who": "a\u0000b", "note": "=x\u0000y"}) + "\n", encoding="utf-8")
    res = _sub(store.root, "labels", "import", str(src))
    assert res.returncode == 0, res.stderr
    assert "U+FFFD" in res.stderr and str(src) in res.stderr    # counted, naming the file
    got = query_df(store, "SELECT who, note FROM annotations WHERE label = 'WRONG'")
    assert got.who.tolist() == [f"a{FFFD}b"] and got.note.tolist() == [f"=x{FFFD}y"]
    out = tmp / "labels.csv"
    assert _cli(store.root, "labels", "export", "-o", str(out)).exit_code == 0
    res = _cli(store.root, "labels", "import", str(out))
    assert res.exit_code == 0, res.output


def _sub(root, *args):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(root), *args], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)


def test_the_csv_writers_never_write_a_nul():
    """A store written before the way in replaced NUL may hold one: its CSV still re-imports."""
    import pandas as pd

    for text in (rows_to_csv([{"a": "x\x00y", "b": "\x00=1"}], ["a", "b"]),
                 frame_to_csv(pd.DataFrame({"a": ["x\x00y"], "b": ["\x00=1"]}))):
        assert "\x00" not in text
        assert _csv_cells(text)[2:] == ["x\ufffdy", "\ufffd=1"]


# ---- text of spaces, and a note's outer whitespace (the lesser item) ------------------------------

@pytest.mark.parametrize("text", [" ", "   ", "\u3000", " \u00a0 "])
def test_text_of_spaces_is_guarded_so_it_reads_back_as_itself(text):
    from evalcore.datasets.records import _csv_cell as cell_and_count

    def _csv_cell(value):
        return cell_and_count(value, 1000)[0]

    assert guard(text) == "'" + text and unguard(guard(text)) == text
    assert _csv_cell(guard(text)) == text          # not a missing value
    assert _csv_cell(text) is None and _csv_cell("") is None   # a blank cell someone typed is missing
    assert guard("'" + text) == "''" + text and _csv_cell(guard("'" + text)) == "'" + text


NOTES_WITH_SPACES = ["  leading", "\t=x", "trailing  ", "   ", " both ", "\n\nnew lines\n", "\u00a0nbsp"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_label_note_keeps_its_outer_whitespace_through_import_and_export(tmp_path, fmt):
    """Only ids and `who` follow the id rule; a note is free text and round-trips exactly."""
    from evalcore.demo.synthetic import build_store

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=len(NOTES_WITH_SPACES), n_metrics=4,
                        judge_calls=False)
    run = store.run_ids()[0]
    qids = sorted(query_df(store, "SELECT DISTINCT question_id FROM metrics WHERE metric = 'answer_class'")
                  .question_id)
    records = [{"run": run, "method": "local_search", "question_id": q, "metric": "answer_class",
                "label": "CORRECT", "who": " ann ", "note": note} for q, note in zip(qids, NOTES_WITH_SPACES)]
    src = tmp_path / f"in.{fmt}"
    if fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    else:
        src.write_text(rows_to_csv(records, list(records[0])), encoding="utf-8")
    res = _cli(store.root, "labels", "import", str(src))
    assert res.exit_code == 0, res.output
    got = query_df(store, "SELECT who, note FROM annotations")
    assert sorted(got.note) == sorted(NOTES_WITH_SPACES) and set(got.who) == {"ann"}   # who: the id rule
    out = tmp_path / f"export.{fmt}"
    assert _cli(store.root, "labels", "export", "-f", fmt, "-o", str(out)).exit_code == 0
    assert _cli(store.root, "labels", "import", str(out)).exit_code == 0
    assert sorted(query_df(store, "SELECT note FROM annotations").note) == sorted(NOTES_WITH_SPACES * 2)


def test_spans_from_a_phoenix_server_replace_and_count_nul(tmp_path):
    """A Phoenix server's spans do not pass records.py: the trace import repairs and counts them."""
    from evalcore.store import RunStore
    from evalcore.traces.phoenix import page_items, page_spans
    from evalcore.traces.trace_import import import_traces
    from tests.traces.test_phoenix_hostile import rest
    from tests.traces.test_trace_counting import good_trace

    spans = rest(good_trace())
    spans[0]["attributes"]["input.value"] = "question\u0000?"
    spans[0]["attributes"]["output.value"] = "an\u0000answer"
    items, _ = page_items({"data": spans, "next_cursor": None}, "phoenix p", 1)
    store = RunStore(tmp_path / "runs")
    result = import_traces(store, page_spans(items, "phoenix p", 1, "p"), "phoenix p", name="p", method="m")
    assert any("U+FFFD in 2 field(s)" in n for n in result.notes), result.notes   # question, answer
    assert store.manifest(result.run_id).source["text_repairs"]["fields_replaced"] == 2
    got = query_df(store, "SELECT answer FROM responses").answer.tolist()
    assert got == [f"an{FFFD}answer"]
