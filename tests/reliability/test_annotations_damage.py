"""One unreadable annotations file does not take the store down: its labels are left out of
every reading, every other label and every run still reads, the file is listed (the CLI's
`runs`, the Runs page) and kept untouched. Local folder and object storage alike."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalcore.analysis.read.damage import damaged_annotations, damaged_runs
from evalcore.analysis.runs.leaderboard import run_list
from evalcore.cli.main import app
from evalcore.schemas import Annotation, EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df


@pytest.fixture(params=["local", "s3"])
def any_store(request, tmp_path):
    if request.param == "s3":
        return request.getfixturevalue("s3_store")
    return RunStore(tmp_path / "runs")


def _label(i: int) -> Annotation:
    return Annotation(annotation_id=f"a{i}", who="ann", run_id="r1", method="a", question_id=f"q{i}",
                      target_kind="metric", target_ref="m", label="correct")


def _store_with_two_label_files(store: RunStore):
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="r1", name="r1",
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(2)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(2)])
    writer.publish()
    first = store.append_annotations([_label(0)])
    second = store.append_annotations([_label(1)])
    return first, second


def test_an_unreadable_annotations_file_is_left_out_and_listed(any_store):
    good, bad = _store_with_two_label_files(any_store)
    raw = bad.read_bytes()
    bad.write_bytes(raw[: len(raw) // 2])  # a torn write: no footer
    damaged = bytes(bad.read_bytes())

    assert list(run_list(any_store).run_id) == ["r1"], "every run still reads"
    labels = query_df(any_store, "SELECT annotation_id FROM annotations")
    assert list(labels.annotation_id) == ["a0"], "the readable file's labels still read"
    listed = damaged_annotations(any_store)
    assert len(listed) == 1 and listed.file.iloc[0].endswith(bad.name) and listed.reason.iloc[0]
    assert damaged_runs(any_store).empty, "no run is damaged"
    assert bad.read_bytes() == damaged and good.exists(), "a reader moves and changes nothing"

    out = CliRunner().invoke(app, ["--store", str(any_store.root), "runs"])
    assert out.exit_code == 0, out.output
    assert "damaged annotations file" in out.output and bad.name in out.output


def test_a_healthy_store_lists_no_damaged_annotations(tmp_path):
    store = RunStore(tmp_path / "runs")
    _store_with_two_label_files(store)
    assert damaged_annotations(store).empty
    assert len(query_df(store, "SELECT * FROM annotations")) == 2


def test_the_runs_page_warns_of_an_unreadable_annotations_file(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    store = RunStore(tmp_path / "runs")
    _, bad = _store_with_two_label_files(store)
    bad.write_bytes(bad.read_bytes()[:40])
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    entry = Path(__file__).resolve().parents[2] / "evalcore" / "ui" / "entry.py"
    at = AppTest.from_file(str(entry), default_timeout=60)
    at.run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("cannot be read" in w and bad.name in w.replace("\\", "") for w in warnings), warnings
