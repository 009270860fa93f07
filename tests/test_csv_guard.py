"""One spreadsheet-formula guard for every CSV evalcore writes, undone when evalcore reads it back.

Issue 34, item 7(a): `labels export` wrote `=HYPERLINK(...)` from an imported `who` or `note`
as it was, while `export -f csv` guarded it. Now every CSV goes through
evalcore/schemas/csv_safety.py (labels export, `export -f csv`, the dashboard's download buttons),
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
from evalcore.schemas.csv_safety import frame_to_csv, guard, is_risky, rows_to_csv, unguard
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
    from evalcore.importer import import_recorded
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
