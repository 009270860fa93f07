"""A query that names every readable run reuses the whole store's kept database (store/views.open_db)
instead of building one of its own: the leaderboard's CIs over all its rows built a second
database (~0.2 s) on the dashboard's first visit. A subset, or a damaged run named, still gets
its own database and its own answer."""

from __future__ import annotations

import pytest

from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df
from evalcore.store import views
from evalcore.store.layout import RunDamaged


def _run(store: RunStore, run_id: str, n: int) -> None:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(n)])
    writer.write_responses([EvalResponse(question_id=f"q{i}", method="a", answer="x") for i in range(n)])
    writer.publish()


@pytest.fixture
def store(tmp_path, monkeypatch):
    views.forget_connections()
    s = RunStore(tmp_path / "runs")
    _run(s, "r1", 2)
    _run(s, "r2", 3)
    built = []
    real = views._build
    monkeypatch.setattr(views, "_build", lambda st, runs: (built.append(None if runs is None else tuple(runs)),
                                                          real(st, runs))[1])
    s.built = built
    yield s
    views.forget_connections()


def _count(store: RunStore, runs=None) -> int:
    return int(query_df(store, "SELECT count(*) AS n FROM responses", runs=runs)["n"][0])


def test_every_run_named_is_answered_by_the_whole_database(store):
    assert _count(store) == 5
    assert _count(store, runs=["r2", "r1"]) == 5
    assert _count(store, runs=["r1", "r2", "r1"]) == 5
    assert store.built == [None], "no second database for the same runs"


def test_a_subset_still_gets_its_own_database_and_only_its_rows(store):
    assert _count(store) == 5
    assert _count(store, runs=["r1"]) == 2
    assert store.built == [None, ("r1",)]


def test_a_run_not_in_the_store_is_not_answered_by_the_whole_database(store):
    assert _count(store) == 5
    assert _count(store, runs=["r1", "r2", "r3"]) == 5  # r3 unknown: its own (empty) share
    assert store.built == [None, ("r1", "r2", "r3")]


def test_a_damaged_run_named_is_still_refused(store):
    _run(store, "r3", 1)
    (store.root / "r3" / "tables.json").write_text("{not json", encoding="utf-8")
    assert _count(store) == 5  # r3 left out of the whole database
    with pytest.raises(RunDamaged):
        _count(store, runs=["r1", "r2", "r3"])


def test_a_new_run_is_not_missed(store):
    assert _count(store, runs=["r1", "r2"]) == 5
    _run(store, "r3", 4)
    assert _count(store) == 9
    assert _count(store, runs=["r1", "r2"]) == 5, "two of three runs: not the whole store's answer"
    assert _count(store, runs=["r1", "r2", "r3"]) == 9


def _torn_label(store: RunStore, i: int) -> None:
    """A label file cut in half (a crash mid-write): the kept database cannot refresh its labels in
    place, so open_db builds the database again."""
    from evalcore.schemas import Annotation

    path = store.append_annotations([Annotation(annotation_id=f"a{i}", who="ann", run_id="r1", method="a",
                                                question_id="q0", target_kind="metric", target_ref="m",
                                                label="correct")])
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def _whole(store: RunStore) -> tuple[list[str], list[str]]:
    return (sorted(query_df(store, "SELECT run_id FROM runs").run_id),
            sorted(query_df(store, "SELECT run_id FROM damaged_runs").run_id))


def test_a_rebuild_after_reuse_is_still_the_whole_store(store):
    """Hostile review (session 10): the reused whole database, rebuilt because its labels could not
    be refreshed, was rebuilt restricted to the runs named and kept under the whole store's key:
    a damaged run then showed as readable, `damaged_runs` was empty, and naming it raised nothing."""
    _run(store, "r3", 1)
    (store.root / "r3" / "tables.json").write_text("{not json", encoding="utf-8")
    assert _whole(store) == (["r1", "r2"], ["r3"])
    _torn_label(store, 0)
    assert _count(store, runs=["r1", "r2"]) == 5
    assert _whole(store) == (["r1", "r2"], ["r3"]), "the whole store's database still lists r3 as damaged"
    _torn_label(store, 1)
    assert _count(store, runs=["r2", "r1"]) == 5
    with pytest.raises(RunDamaged):
        _count(store, runs=["r1", "r2", "r3"])
