"""A label's time is when it was made, and "the newest label counts" has one, deterministic order.

Issue 34, item 7(c): a label dated 9999-12-31 outranked every later label, and two labels with the
same time were ordered by their random ids. Now:
- a label dated more than LABEL_CLOCK_SKEW (5 minutes) ahead of the clock is refused wherever a
  label enters: `labels import` (one line naming file, record and field, nothing stored), the
  Annotation contract itself (the Annotate page builds one) and the store's append;
- ties of time go to the label that arrived later (the append order of the store's log);
- a label stored with a future date before this check counts as made when it arrived: later
  labels overrule it, and `labels export` writes that time, so it re-imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import label_units as U
from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import Annotation
from evalcore.schemas.labels import RETRACTED
from evalcore.schemas.results import LABEL_CLOCK_SKEW
from evalcore.store import query_df
from evalcore.store.tables import annotation_row, to_arrow

METHOD = "local_search"
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from evalcore.demo.synthetic import build_store

    return build_store(tmp_path_factory.mktemp("labels") / "runs", n_runs=1, n_questions=8, n_metrics=4,
                       judge_calls=False).root


@pytest.fixture
def items(built, tmp_path):
    """A synthetic run with answer_class verdicts on 8 questions and no labels, a fresh copy per
    test: (store, run, question ids)."""
    from evalcore.store import RunStore

    shutil.copytree(built, tmp_path / "runs")
    store = RunStore(tmp_path / "runs")
    run = store.run_ids()[0]
    qids = sorted(query_df(store, "SELECT DISTINCT question_id FROM metrics WHERE metric = 'answer_class'")
                  .question_id)
    return store, run, qids


def _record(run, q, label, when, who="ann"):
    return {"run": run, "method": METHOD, "question_id": q, "metric": "answer_class", "label": label,
            "who": who, "when": when}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _sub(root, *args):
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(root), *args], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)


def _count(store) -> int:
    return int(query_df(store, "SELECT count(*) AS n FROM annotations").n[0])


def _newest(store, run) -> dict[str, str]:
    got = U.newest_labels(store, run, METHOD, "answer_class")
    return dict(zip(got.question_id, got.label))


# ---- refused at every way in ----------------------------------------------------------------

def _future_times():
    now = datetime.now(timezone.utc)
    return ["9999-12-31", "9999-12-31T23:59:59Z", "2999-01-01T00:00:00+14:00",
            (now + LABEL_CLOCK_SKEW + timedelta(minutes=2)).isoformat(),
            (now + timedelta(hours=1)).replace(tzinfo=None).isoformat(),          # no zone: read as UTC
            (now + timedelta(hours=3)).astimezone(timezone(timedelta(hours=-5))).isoformat()]


def test_labels_import_refuses_a_future_time_in_one_line(items, tmp_path):
    store, run, qids = items
    records = [_record(run, q, "CORRECT", "2025-01-01T00:00:00Z") for q in qids[:3]]
    records[2]["when"] = "9999-12-31"
    path = _write(tmp_path / "labels.jsonl", records)
    res = _sub(store.root, "labels", "import", str(path))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(path) in lines[0] and "record 3" in lines[0] and "field 'when'" in lines[0], lines[0]
    assert "in the future" in lines[0], lines[0]
    assert _count(store) == 0


@pytest.mark.parametrize("position", [0, 2])
def test_every_spelling_of_a_future_time_is_refused(items, tmp_path, position):
    store, run, qids = items
    for when in _future_times():
        records = [_record(run, q, "CORRECT", "2025-01-01T00:00:00Z") for q in qids[:3]]
        records[position]["when"] = when
        path = _write(tmp_path / "labels.jsonl", records)
        res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import", str(path)])
        message = str(res.exception)
        assert res.exit_code != 0 and f"record {position + 1}, field 'when'" in message, (when, message)
        assert "in the future" in message
        assert _count(store) == 0


# ---- a number is no time (round 4, item 13) -----------------------------------------------------
# pydantic read a number below 2e10 as Unix seconds and above as milliseconds, so 253402300799
# (9999-12-31T23:59:59Z in seconds) was stored as 1978-01-11 and passed the future check; 32503680000
# (the year 3000) as 1971. A number could be seconds, milliseconds or a YYYYMMDD date: refused.

NUMBERS = [253402300799, "253402300799", 32503680000, "32503680000", 1717243200, 1717243200000, "20250601",
           1.5, "-1", " 2e9 "]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_number_is_never_read_as_a_time(items, tmp_path, fmt):
    from evalcore.common.csv_safety import rows_to_csv

    store, run, qids = items
    for when in NUMBERS:
        records = [_record(run, q, "CORRECT", "2025-01-01T00:00:00Z") for q in qids[:3]]
        records[1]["when"] = when
        path = tmp_path / f"labels.{fmt}"
        if fmt == "jsonl":
            _write(path, records)
        else:
            path.write_text(rows_to_csv(records, list(records[0])), encoding="utf-8")
        res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import", str(path)])
        message = str(res.exception)
        assert res.exit_code != 0 and f"record 2, field 'when'" in message, (when, message)
        assert "is a number, not a time" in message and "ISO 8601" in message, (when, message)
        assert _count(store) == 0


def test_the_cli_refuses_a_future_time_in_seconds_in_one_line(items, tmp_path):
    store, run, qids = items
    path = _write(tmp_path / "labels.jsonl", [_record(run, qids[0], "CORRECT", 253402300799)])
    res = _sub(store.root, "labels", "import", str(path))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "record 1, field 'when'" in res.stderr and "is a number" in res.stderr, res.stderr
    assert _count(store) == 0


def test_the_contract_refuses_a_number_for_when(items):
    store, run, qids = items
    base = dict(annotation_id="x", who="ann", run_id=run, method=METHOD, question_id=qids[0],
                target_kind="answer_class", target_ref="answer_class", label="CORRECT")
    for when in (253402300799, "32503680000", 0, True):
        with pytest.raises(ValidationError, match="is a number, not a time"):
            Annotation(**base, when=when)
    assert Annotation(**base, when="2025-06-01T12:00:00Z").when == datetime(2025, 6, 1, 12, tzinfo=timezone.utc)


def test_a_time_within_the_skew_is_accepted(items, tmp_path):
    store, run, qids = items
    soon = (datetime.now(timezone.utc) + LABEL_CLOCK_SKEW - timedelta(minutes=2)).isoformat()
    res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import",
                                   str(_write(tmp_path / "l.jsonl", [_record(run, qids[0], "WRONG", soon)]))])
    assert res.exit_code == 0, res.output
    assert _count(store) == 1


def test_the_contract_and_the_store_refuse_a_future_label(items):
    store, run, qids = items
    base = dict(annotation_id="x", who="ann", run_id=run, method=METHOD, question_id=qids[0],
                target_kind="answer_class", target_ref="answer_class", label="CORRECT")
    with pytest.raises(ValidationError, match="in the future"):
        Annotation(**base, when=datetime(9999, 12, 31, tzinfo=timezone.utc))
    forged = Annotation(**base)
    forged.when = datetime(9999, 12, 31, tzinfo=timezone.utc)  # built, then changed: the store checks again
    with pytest.raises(StoreError, match="field 'when'.*in the future"):
        store.append_annotations([forged])
    assert _count(store) == 0


def test_the_annotate_page_writes_now(items):
    store, run, qids = items
    item = {"run_id": run, "method": METHOD, "question_id": qids[0], "target_kind": "answer_class",
            "target_ref": "answer_class", "judge_label": "CORRECT"}
    before = datetime.now(timezone.utc)
    saved = A.save(store, item, "ann", "WRONG", None)
    assert before <= saved.when <= datetime.now(timezone.utc)


# ---- ties go to the later arrival ---------------------------------------------------------------

def test_same_time_in_one_file_the_later_record_counts(items, tmp_path):
    store, run, qids = items
    when = T0.isoformat()
    records = []
    for i, q in enumerate(qids):  # alternate the order so no fixed label could win by its name
        first, last = ("CORRECT", "WRONG") if i % 2 else ("WRONG", "CORRECT")
        records += [_record(run, q, first, when), _record(run, q, last, when)]
    res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import",
                                   str(_write(tmp_path / "l.jsonl", records))])
    assert res.exit_code == 0, res.output
    assert _newest(store, run) == {q: ("WRONG" if i % 2 else "CORRECT") for i, q in enumerate(qids)}


def _ann(run, q, label, annotation_id, when=T0, who="ann"):
    return Annotation(annotation_id=annotation_id, who=who, when=when, run_id=run, method=METHOD, question_id=q,
                      target_kind="answer_class", target_ref="answer_class", judge_label="CORRECT", label=label)


def test_same_time_in_two_appends_the_later_append_counts(items):
    """Ids chosen so the old tie-break (annotation_id DESC) picks the earlier label."""
    store, run, qids = items
    store.append_annotations([_ann(run, q, "WRONG", f"z{q}") for q in qids])
    store.append_annotations([_ann(run, q, "DONT_KNOW", f"a{q}") for q in qids])
    assert set(_newest(store, run).values()) == {"DONT_KNOW"}
    agreement = A.agreement(store, run)
    assert agreement.n.sum() == len(qids) and agreement.agreement_rate.iloc[0] == 0  # judge said CORRECT


def test_a_retraction_at_the_same_time_follows_arrival(items):
    store, run, qids = items
    store.append_annotations([_ann(run, qids[0], "WRONG", "z0"), _ann(run, qids[1], RETRACTED, "z1")])
    store.append_annotations([_ann(run, qids[0], RETRACTED, "a0"), _ann(run, qids[1], "WRONG", "a1")])
    reviewed = A.counts(store, run).set_index("target_kind").loc["answer_class", "n_reviewed"]
    assert reviewed == 1  # q0 taken back, q1 labelled
    assert A.queue(store, run, "answer_class", METHOD, limit=100).question_id.tolist().count(qids[0]) == 1


# ---- labels stored with a future date before the check --------------------------------------

def _legacy_future_label(store, run, q, arrived: datetime) -> None:
    """What an older evalcore stored: a label dated 9999-12-31, in a part file named by its arrival."""
    row = annotation_row(_ann(run, q, "WRONG", "legacy"))
    row["when"] = datetime(9999, 12, 31, tzinfo=timezone.utc)
    folder = store.annotations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_arrow("annotations", [row]), folder / f"part-{arrived:%Y%m%dT%H%M%S%f}-00000000.parquet")


def test_a_stored_future_label_counts_from_its_arrival(items, tmp_path):
    store, run, qids = items
    arrived = datetime.now(timezone.utc) - timedelta(days=1)
    _legacy_future_label(store, run, qids[0], arrived)
    assert _newest(store, run) == {qids[0]: "WRONG"}
    store.append_annotations([_ann(run, qids[0], "CORRECT", "later", when=arrived + timedelta(hours=1))])
    assert _newest(store, run) == {qids[0]: "CORRECT"}   # a later label overrules it
    store.append_annotations([_ann(run, qids[0], "DONT_KNOW", "earlier", when=arrived - timedelta(hours=1))])
    assert _newest(store, run) == {qids[0]: "CORRECT"}   # ...and an older one does not

    out = tmp_path / "export.jsonl"
    res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "export", "-f", "jsonl", "-o", str(out)])
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["label"] for r in records] == ["WRONG", "CORRECT", "DONT_KNOW"]  # arrival order
    assert datetime.fromisoformat(records[0]["when"]) == arrived.replace(microsecond=arrived.microsecond)
    res = CliRunner().invoke(app, ["--store", str(store.root), "labels", "import", str(out)])
    assert res.exit_code == 0, res.output   # the export re-imports: no future time in it
    assert _newest(store, run) == {qids[0]: "CORRECT"}


def test_arrival_orders_labels_on_object_storage_too(s3_store):
    """On S3 the log's part files are object keys; arrival reads from their names the same way."""
    qid = "q1"
    s3_store.append_annotations([_ann("r1", qid, "WRONG", "z")])
    s3_store.append_annotations([_ann("r1", qid, "DONT_KNOW", "a")])
    got = query_df(s3_store, f"SELECT label, arrived_at FROM annotations ORDER BY {A.NEWEST_FIRST}")
    assert got.label.tolist() == ["DONT_KNOW", "WRONG"] and got.arrived_at.notna().all()
