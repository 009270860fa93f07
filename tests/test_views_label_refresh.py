"""A saved label refreshes a kept database in place (store/views.open_db): the run views stand,
`annotations` shows the new label at once, and anything but a label (a run published, a damaged
annotation file) still builds the views anew. Why it matters: the annotator's next answer no
longer waits for every run view to be built again (issue 35, item 5)."""

from __future__ import annotations

import pytest

from evalcore.analysis.read.damage import damaged_annotations
from evalcore.schemas import Annotation, EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df
from evalcore.store import views


def _label(i: int, run: str = "r1") -> Annotation:
    return Annotation(annotation_id=f"a{i}", who="ann", run_id=run, method="a", question_id=f"q{i % 2}",
                      target_kind="metric", target_ref="m", label="correct")


def _run(store: RunStore, run_id: str) -> None:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(2)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(2)])
    writer.publish()


def _kept(store: RunStore):
    """The database open_db hands cursors of (its identity tells a refresh from a rebuild)."""
    with views.open_db(store):
        pass
    runs_state = store.state_parts()[0]
    return next(con for key, con in views._KEPT.items() if key[0] == str(store.root.resolve()) and key[1] == runs_state)


@pytest.fixture
def store(tmp_path):
    views.forget_connections()
    s = RunStore(tmp_path / "runs")
    _run(s, "r1")
    yield s
    views.forget_connections()


def _ids(store: RunStore) -> list[str]:
    return list(query_df(store, "SELECT annotation_id FROM annotations ORDER BY arrival").annotation_id)


def test_a_label_is_read_at_once_from_the_same_database(store):
    assert _ids(store) == []
    before = _kept(store)
    store.append_annotations([_label(0)])
    assert _ids(store) == ["a0"], "the new label is read on the next query"
    assert _kept(store) is before, "the run views were kept: only `annotations` was defined again"
    store.append_annotations([_label(1), _label(2)])
    assert _ids(store) == ["a0", "a1", "a2"]
    assert _kept(store) is before
    assert list(query_df(store, "SELECT run_id FROM runs").run_id) == ["r1"]


def test_a_run_published_builds_the_views_anew(store):
    store.append_annotations([_label(0)])
    before = _kept(store)
    _run(store, "r2")
    assert sorted(query_df(store, "SELECT run_id FROM runs").run_id) == ["r1", "r2"]
    assert _kept(store) is not before
    assert _ids(store) == ["a0"]


def test_a_damaged_label_file_arriving_later_is_left_out_and_listed(store):
    store.append_annotations([_label(0)])
    assert _ids(store) == ["a0"]
    bad = store.append_annotations([_label(1)])
    raw = bad.read_bytes()
    bad.write_bytes(raw[: len(raw) // 2])  # a torn write: no footer
    assert _ids(store) == ["a0"], "the readable labels still read; the torn file is left out"
    listed = damaged_annotations(store)
    assert len(listed) == 1 and listed.file.iloc[0].endswith(bad.name)
    store.append_annotations([_label(2)])
    assert _ids(store) == ["a0", "a2"], "a label saved after the damage still reads"


def test_state_parts_split_the_token(store):
    token, (runs_state, labels_state) = store.state_token(), store.state_parts()
    store.append_annotations([_label(0)])
    assert store.state_parts()[0] == runs_state and store.state_parts()[1] != labels_state
    assert store.state_token() != token
    _run(store, "r2")
    assert store.state_parts()[0] != runs_state
