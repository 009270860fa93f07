"""RunStore.state_token: the dashboard keys every cached read on it, so it must change with
anything a reader can see and stay put otherwise (local folder and object storage alike)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalcore.schemas import Annotation, EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore

V1 = Path(__file__).resolve().parent / "fixtures" / "store_v1"


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "s3":
        return request.getfixturevalue("s3_store")
    return RunStore(tmp_path / "runs")


def _run(store: RunStore, run_id: str):
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="test", methods=["a"]))
    writer.write_questions([EvalQuestion(id="q1", question="One?")])
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="x")])
    writer.publish()
    return writer


def test_it_changes_with_every_visible_change_and_only_then(store):
    seen = [store.state_token()]

    def changed() -> bool:
        token = store.state_token()
        new = token != seen[-1]
        seen.append(token)
        return new

    writer = _run(store, "r1")
    assert changed(), "a new run"
    assert not changed(), "nothing happened"
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="y")])
    assert not changed(), "a part written but not published is not visible"
    writer.publish()
    assert changed(), "a publish replaces the pointer"
    writer.update_manifest(name="renamed")
    assert changed(), "run.json edited"
    store.append_annotations([Annotation(annotation_id="a1", who="ann", run_id="r1", method="a", question_id="q1",
                                         target_kind="metric", target_ref="m", label="correct")])
    assert changed(), "an annotation"
    _run(store, "r2")
    assert changed(), "a second run"
    store.delete_run("r1")
    assert changed(), "a run deleted"
    assert len(set(seen)) == len([s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]])


def test_folders_that_are_not_runs_do_not_count(tmp_path):
    store = RunStore(tmp_path / "runs")
    _run(store, "r1")
    token = store.state_token()
    (store.root / "not-a-run").mkdir()  # no run.json
    (store.root / "r1-notes.txt").write_text("a file, not a folder")
    assert store.state_token() == token


def test_a_format1_runs_new_part_file_changes_it(tmp_path):
    """A format-1 run has no pointer: its visible rows are its part files."""
    root = tmp_path / "store_v1"
    shutil.copytree(V1, root)
    store = RunStore(root)
    token = store.state_token()
    run_dir = root / store.run_ids()[0]
    part = next((run_dir / "responses").glob("*.parquet"))
    shutil.copy(part, part.with_name("part-extra.parquet"))
    assert store.state_token() != token
