"""Nothing outside the store is ever deleted or written (issue 34, item 1).

- A housekeeping folder of the store that is a symbolic link to somewhere else — `.staging`,
  `.trash`, a run's `data/`, `parts/`, `parts/<table>/`, `quarantine/`, its lock files, the run
  folder itself, `_shared/` and its folders (annotations, judge cache, embedding caches, the
  dashboard's jobs and uploads) — is never followed: the write, move or delete is refused in
  one line naming the link, and the folder it points to is left exactly as it was.
- Every path a run's pointer (`tables.json`) names — `files`, `previous`, `retired`,
  `absorbed` — is validated like `files`: one with `..`, an absolute path, an empty segment or
  outside its folder makes the run damaged (`store check` names the entry, `runs` lists it
  apart, writers refuse it and delete nothing).
- The same on object storage (moto on 127.0.0.1): keys with `..`, absolute keys, empty segments.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import StoreError
from evalcore.schemas import Annotation, MetricValue
from evalcore.store import RunStore
from evalcore.store import safe_paths
from evalcore.store.layout import RunDamaged
from tests.store_trees import is_listing_cache

runner = CliRunner()
OLD = time.time() - 3 * 24 * 3600  # older than every age rule of the sweeps


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _tree(folder: Path) -> dict[str, tuple]:
    """Everything under `folder` (files, folders, links) with sizes and content hashes."""
    out: dict[str, tuple] = {}
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(base, name)
            rel = str(path.relative_to(folder))
            if is_listing_cache(path, folder):
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def _victim(tmp_path: Path) -> Path:
    """A folder outside the store that looks like what each sweep removes: a folder named like
    a run id, untouched for days, with and without a free writer lock; and a plain file."""
    victim = tmp_path / "victim"
    for name in ("abandoned-run", "locked-run"):
        (victim / name / "parts").mkdir(parents=True)
        (victim / name / "parts" / "keep.txt").write_text("not the store's")
    (victim / "locked-run" / ".writer.lock").write_text("")
    (victim / "f.txt").write_text("precious")
    for path in [*victim.rglob("*"), victim]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)
    return victim


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store holding the example run, built once and copied by each test."""
    root = tmp_path_factory.mktemp("template") / "runs"
    res = _cli(root, "import", "--example")
    assert res.exit_code == 0, res.output
    return root


@pytest.fixture
def store(template, tmp_path) -> RunStore:
    root = tmp_path / "runs"
    shutil.copytree(template, root, symlinks=True)
    return RunStore(root)


def _run_id(store: RunStore) -> str:
    (run_id,) = store.run_ids()
    return run_id


def _main(root, *args) -> subprocess.CompletedProcess:
    """The real console entry point (its one-line error handling), in a child process (one test
    here; the others call the same entry point in this process through the `console` fixture)."""
    code = "import sys; from evalcore.cli.main import main; sys.argv = ['evalcore'] + sys.argv[1:]; main()"
    return subprocess.run([sys.executable, "-c", code, "--store", str(root), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The child's stderr is exactly one `error:` line (exit code 2); that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def _refused(res) -> str:
    """An in-process CLI call that ended in the one-line StoreError main() prints (exit 2)."""
    assert isinstance(res.exception, StoreError), (res.exception, res.output)
    assert "\n" not in str(res.exception)
    return str(res.exception)


# ---- .staging and .trash ---------------------------------------------------------------------
def test_cli_import_and_store_clean_never_follow_a_linked_staging_folder(store, tmp_path, console):
    """The issue's case: `.staging` a link to a folder elsewhere; `evalcore import` said it
    removed "abandoned staging folders" there, and `store clean` removed them."""
    victim = _victim(tmp_path)
    before, runs_before = _tree(victim), store.run_ids()
    shutil.rmtree(store.root / ".staging", ignore_errors=True)
    (store.root / ".staging").symlink_to(victim, target_is_directory=True)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question_id": "q1", "method": "m", "question": "Q?", "answer": "a"}) + "\n")

    proc = console("--store", store.root, "import", str(answers))
    assert ".staging is a symbolic link" in _one_error_line(proc)
    assert "removed abandoned staging folder" not in proc.stderr
    proc = console("--store", store.root, "store", "clean")
    assert ".staging is a symbolic link" in _one_error_line(proc) and "removed" not in proc.stdout
    assert ".staging is a symbolic link" in _refused(_cli(store.root, "store", "clean", "--dry-run"))
    with pytest.raises(safe_paths.OutsideStore):
        store.clean_staging()
    assert _tree(victim) == before and store.run_ids() == runs_before
    assert (store.root / ".staging").is_symlink()  # not ours to remove either


def test_cli_store_clean_and_delete_never_follow_a_linked_trash_folder(store, tmp_path, console):
    victim = _victim(tmp_path)
    before = _tree(victim)
    run_id = _run_id(store)
    run_files = _tree(store.run_dir(run_id))
    (store.root / ".trash").symlink_to(victim, target_is_directory=True)

    proc = console("--store", store.root, "store", "clean")
    assert ".trash is a symbolic link" in _one_error_line(proc) and "removed" not in proc.stdout
    assert ".trash is a symbolic link" in _refused(_cli(store.root, "delete", run_id, "--yes"))
    with pytest.raises(safe_paths.OutsideStore):
        store.clean_trash()
    assert _tree(victim) == before
    assert store.run_ids() == [run_id] and _tree(store.run_dir(run_id)) == run_files


def test_links_inside_staging_and_trash_are_removed_never_followed(store, tmp_path):
    """A dead import's folder and a half-deleted run holding links out: the links go, what they
    point to stays."""
    victim = _victim(tmp_path)
    before = _tree(victim)
    dead = store.root / ".staging" / "dead-run"
    (dead / "parts").mkdir(parents=True)
    (dead / "parts" / "out").symlink_to(victim, target_is_directory=True)
    (dead / "f.txt").symlink_to(victim / "f.txt")
    trashed = store.root / ".trash" / "gone-123456"
    trashed.mkdir(parents=True)
    (trashed / "out").symlink_to(victim, target_is_directory=True)
    (store.root / ".trash" / "link-run").symlink_to(victim, target_is_directory=True)
    for path in [*dead.rglob("*"), dead]:
        os.utime(path, (OLD, OLD), follow_symlinks=False)

    assert [r.path.name for r in store.clean_staging()] == ["dead-run"]
    assert [r.path.name for r in store.clean_trash()] == ["gone-123456"]
    assert not dead.exists() and not trashed.exists()
    assert _tree(victim) == before


# ---- a run's own folders and lock files ------------------------------------------------------
LINKED_IN_RUN = ["data", "parts", "parts/metrics", "quarantine", ".compact.lock", ".run.json.lock", "run"]


def _link_out(run_dir: Path, what: str, victim: Path) -> Path:
    """Replace `what` in the run by a link to a place in `victim` (a copy of what was there,
    so that readers still find the same files)."""
    target = victim / "linked" / what.replace("/", "_")
    if what == "run":  # the run folder itself: moved out, a link left in its place
        shutil.move(str(run_dir), str(target))
        run_dir.symlink_to(target, target_is_directory=True)
        return target
    here = run_dir / what
    if here.is_dir():
        shutil.copytree(here, target)
        shutil.rmtree(here)
    elif what.endswith(".lock"):
        target.parent.mkdir(parents=True, exist_ok=True)  # the lock does not exist out there yet
        here.unlink(missing_ok=True)
    else:
        target.mkdir(parents=True)
    here.parent.mkdir(parents=True, exist_ok=True)
    here.symlink_to(target, target_is_directory=not what.endswith(".lock"))
    return target


@pytest.mark.parametrize("what", LINKED_IN_RUN)
def test_writers_refuse_a_run_whose_own_folder_or_lock_is_a_link(store, tmp_path, what):
    run_id = _run_id(store)
    run_dir = store.run_dir(run_id)
    (run_dir / "parts" / "responses").mkdir(parents=True, exist_ok=True)
    (run_dir / "parts" / "responses" / "part-0-garbage.parquet").write_bytes(b"not parquet")  # to quarantine
    victim = _victim(tmp_path)
    _link_out(run_dir, what, victim)
    before = _tree(victim)

    with pytest.raises(StoreError) as err:
        writer = store.open_run(run_id)
        writer.write_metrics([MetricValue(run_id=run_id, method="basic_search", question_id="q1", metric="m",
                                          value=1.0, group="g")])
        writer.update_manifest(notes="touched")
        writer.publish()
    assert "symbolic link" in str(err.value) and "\n" not in str(err.value)
    assert _tree(victim) == before
    (check,) = store.check([run_id])
    assert any("symbolic link" in d for d in check.damage), check.damage


def test_cli_score_refuses_a_run_with_a_linked_data_folder_and_check_names_it(store, tmp_path):
    run_id = _run_id(store)
    victim = _victim(tmp_path)
    _link_out(store.run_dir(run_id), "data", victim)
    before = _tree(victim)
    assert "symbolic link" in _refused(_cli(store.root, "score", run_id, "-m", "token_f1"))
    res = _cli(store.root, "store", "check", run_id)
    assert res.exit_code == 1 and f"DAMAGED {run_id}:" in res.output and "data is a symbolic link" in res.output
    assert _tree(victim) == before


# ---- _shared and its folders -----------------------------------------------------------------
def _annotation(run_id: str) -> Annotation:
    return Annotation(annotation_id="a1", who="me", run_id=run_id, method="basic_search", question_id="q1",
                      target_kind="metric", target_ref="token_f1", label="1")


def _write_shared(store: RunStore, what: str, run_id: str) -> None:
    if what in ("_shared", "_shared/annotations"):
        store.append_annotations([_annotation(run_id)])
    elif what.startswith("_shared/judge_cache"):
        from evalcore.judges import make_judge

        judge = make_judge("openai:m@http://127.0.0.1:9/v1", store)
        judge.cache.put("ab" + "0" * 62, {"reply": "x"})
    elif what.startswith("_shared/embeddings"):
        from evalcore.embeddings import get_embedder, reset_embedders

        reset_embedders(keep_models=True)
        get_embedder(None, store).cache.put(["k" * 64], np.zeros((1, 4), dtype=np.float32))
    elif what == "_shared/app_jobs":
        from evalcore.store import jobs

        jobs.new_job(store)
    elif what == "_shared/app_uploads":
        from evalcore.store import jobs

        jobs.save_upload(store, "x.csv", b"a,b\n")


@pytest.mark.parametrize("what", ["_shared", "_shared/annotations", "_shared/judge_cache", "_shared/judge_cache/ab",
                                  "_shared/embeddings", "_shared/embeddings/vectors", "_shared/app_jobs",
                                  "_shared/app_uploads"])
def test_shared_folders_that_are_links_are_never_written(store, tmp_path, what):
    run_id = _run_id(store)
    victim = _victim(tmp_path)
    target = victim / "linked"
    here = store.root / what
    if here.is_dir():
        shutil.copytree(here, target)
        shutil.rmtree(here)
    else:
        target.mkdir(parents=True)
    here.parent.mkdir(parents=True, exist_ok=True)
    here.symlink_to(target, target_is_directory=True)
    before = _tree(victim)
    with pytest.raises(safe_paths.OutsideStore, match="symbolic link"):
        _write_shared(store, what, run_id)
    assert _tree(victim) == before


# ---- pointer entries ------------------------------------------------------------------------
def _edit_pointer(run_dir, edit) -> None:
    path = run_dir / "tables.json"
    pointer = json.loads(path.read_text())
    edit(pointer)
    path.write_text(json.dumps(pointer))


def test_cli_score_never_unlinks_files_a_pointer_names_outside_the_run(store, tmp_path):
    """The issue's case: `retired` entries with `../` made `evalcore score` unlink them, and
    `store check` said "0 damaged"."""
    run_id = _run_id(store)
    run_dir = store.run_dir(run_id)
    in_root = store.root / "victim" / "f.txt"  # data/../../ reaches the store's root
    in_root.parent.mkdir()
    in_root.write_text("precious")
    victim = _victim(tmp_path)  # data/../../../ reaches beside the store
    before, run_before = _tree(victim), _tree(run_dir)

    def edit(p):
        p["retired"].update({"data/../../victim/f.txt": 0, "data/../../../victim/f.txt": 0})
    _edit_pointer(run_dir, edit)
    line = _one_error_line(_main(store.root, "score", run_id, "-m", "token_f1"))
    assert f"run {run_id} is damaged" in line and "'retired' entry 'data/../../" in line
    res = _cli(store.root, "store", "check")
    assert res.exit_code == 1, res.output
    assert f"DAMAGED {run_id}:" in res.output and "'retired' entry 'data/../../" in res.output
    assert "1 damaged" in res.output
    res = _cli(store.root, "runs")
    assert f"damaged run {run_id}" in res.output and "'retired' entry" in res.output
    assert in_root.read_text() == "precious" and _tree(victim) == before
    assert {k: v for k, v in _tree(run_dir).items() if k != "tables.json"} == \
        {k: v for k, v in run_before.items() if k != "tables.json"}


BAD_ENTRIES = [
    ("retired", lambda p: p["retired"].update({"/tmp/victim/f.txt": 0})),
    ("retired", lambda p: p["retired"].update({"data//f.txt": 0})),
    ("retired", lambda p: p["retired"].update({"data/./x.parquet": 0})),
    ("retired", lambda p: p["retired"].update({"metrics/../../f.txt": 0})),
    ("retired", lambda p: p["retired"].update({"quarantine/x.parquet": 0})),
    ("retired", lambda p: p["retired"].update({"data/x.parquet": "long ago"})),
    ("absorbed", lambda p: p.update(absorbed=["parts/metrics/../../../f.txt"])),
    ("absorbed", lambda p: p.update(absorbed=["parts/../data/x.parquet"])),
    ("absorbed", lambda p: p.update(absorbed=["parts/nonsense/x.parquet"])),
    ("absorbed", lambda p: p.update(absorbed="parts/metrics/x.parquet")),
    ("previous", lambda p: p.update(previous=["../f.txt"])),
    ("files", lambda p: p["files"].update(questions="data/.."),),
    ("files", lambda p: p["files"].update(questions="data\\..\\..\\f.txt")),
    ("replaced", lambda p: p.update(replaced={"metrics": -3})),
    ("rows", lambda p: p.update(rows=["questions"])),
]


@pytest.mark.parametrize("key,edit", BAD_ENTRIES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(BAD_ENTRIES)])
def test_every_pointer_entry_is_validated_like_files(store, key, edit):
    run_id = _run_id(store)
    run_dir = store.run_dir(run_id)
    _edit_pointer(run_dir, edit)
    before = _tree(store.root)
    with pytest.raises(RunDamaged, match=f"'{key}'"):
        store.open_run(run_id)
    (check,) = store.check([run_id])
    assert check.damaged and f"'{key}'" in check.damage[0], check.damage
    from evalcore.analysis.read.damage import damaged_runs

    assert list(damaged_runs(store).run_id) == [run_id]
    assert _tree(store.root) == before


# ---- the one check itself --------------------------------------------------------------------
def test_inside_refuses_dot_dot_and_a_link_at_any_depth(tmp_path):
    root = tmp_path / "store"
    (root / "a" / "b").mkdir(parents=True)
    assert safe_paths.inside(root, root / "a" / "b" / "new" / "file") == root / "a" / "b" / "new" / "file"
    for bad in (root / "a" / ".." / ".." / "x", tmp_path / "x", root / "a" / "b" / ".." / "b"):
        with pytest.raises(safe_paths.OutsideStore):
            safe_paths.inside(root, bad)
    (tmp_path / "elsewhere").mkdir()
    for depth in (("l",), ("a", "l"), ("a", "b", "l")):
        link = root.joinpath(*depth)
        link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
        with pytest.raises(safe_paths.OutsideStore, match="symbolic link"):
            safe_paths.inside(root, link / "file")
        with pytest.raises(safe_paths.OutsideStore, match="symbolic link"):
            safe_paths.inside(root, link)
        link.unlink()
    # the root itself may be a link: where a store lives is the user's choice
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    assert safe_paths.inside(tmp_path / "alias", tmp_path / "alias" / "a" / "f")


# ---- object storage -------------------------------------------------------------------------
def _s3_run(store: RunStore, run_id: str = "r1") -> None:
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    from evalcore.store import FORMAT_VERSION

    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="t", methods=["a"]))
    writer.write_questions([EvalQuestion(id="q1", question="Q?")])
    writer.write_responses([EvalResponse(question_id="q1", method="a", answer="x")])
    writer.publish()


def _keys(store: RunStore) -> set[str]:
    from evalcore.store import s3

    bucket = store.root.bucket
    return {k.partition("/")[2] for k in s3.filesystem().find(f"{bucket}/")}


def test_s3_pointer_entries_with_dot_segments_absolute_or_empty_are_damage(s3_store):
    from evalcore.store import s3

    _s3_run(s3_store)
    run_dir = s3_store.run_dir("r1")
    fs, bucket = s3.filesystem(), s3_store.root.bucket
    victims = ["victim/f.txt", "runs/victim/f.txt", "runs/r1/data/../../victim/f.txt", "runs/r1/x/f.txt"]
    for key in victims:  # what a server resolving dot-segments would reach, and the literal keys
        fs.pipe(f"{bucket}/{key}", b"precious")
    pointer = json.loads((run_dir / "tables.json").read_bytes())
    for entries in ({"data/../../victim/f.txt": 0}, {"/x/f.txt": 0}, {"data//f.txt": 0}):
        (run_dir / "tables.json").write_bytes(json.dumps(pointer | {"retired": entries}).encode())
        before = _keys(s3_store)
        with pytest.raises(RunDamaged, match="'retired' entry"):
            s3_store.open_run("r1")
        (check,) = s3_store.check(["r1"])
        assert check.damaged and "'retired' entry" in check.damage[0]
        assert _keys(s3_store) == before
    for key in victims:
        assert fs.cat(f"{bucket}/{key}") == b"precious"


def test_s3_keys_with_dot_segments_are_refused_and_never_deleted(s3_store):
    from evalcore.store import s3

    _s3_run(s3_store)
    fs, bucket = s3.filesystem(), s3_store.root.bucket
    with pytest.raises(StoreError, match="not a plain relative key"):
        s3_store.root / "r1" / "../victim"
    for bad in ("/abs", "a//b", "./x"):
        with pytest.raises(StoreError):
            s3_store.root / bad
    # a dead import whose prefix holds a key with `..`: left whole, and said, never half-deleted
    fs.pipe(f"{bucket}/runs/victim/f.txt", b"precious")
    fs.pipe(f"{bucket}/runs/.staging/dead-run/data/x.parquet", b"x")
    fs.pipe(f"{bucket}/runs/.staging/dead-run/../../victim/f.txt", b"literal")
    before = _keys(s3_store)
    from evalcore.store import remote_staging

    assert remote_staging.sweep(s3_store.root, max_age=0) == []  # old enough to go, were it safe
    assert _keys(s3_store) == before
    with pytest.raises(safe_paths.OutsideStore):
        safe_paths.remove_tree(s3_store.root, s3_store.root / ".staging" / "dead-run")
    assert _keys(s3_store) == before
