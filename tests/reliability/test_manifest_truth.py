"""A full disk leaves true records: run.json never claims data no reader sees.

With 300 KB free, `evalcore score --judge heuristic` failed while publishing, said "nothing
already stored was changed", and left run.json claiming 4 judges and 2,100 judge calls that no
reader would ever see: the manifest was written before the publish. Now every manifest change
that describes data goes through `RunWriter.publish(record=...)`, with the data or not at all,
and a retry after freeing space ends with the counts a clean pass gives.

How the disk fills: `FullDisk` makes the first durable write of a chosen file (the n-th whose
path holds a given text) fail with ENOSPC, and every later write too (a full disk stays full)
until `free()`. Every store write is fsynced before it is renamed into place, so failing
`os.fsync` reaches every kind of file the store writes (part files, merged tables, summaries,
the pointer, run.json) without root or a mount, and the store treats it exactly as a failing
write (store/layout.py `failed_write`). The points chosen are the steps of a pass where the
manifest and the data could part: a part file, the staged manifest, the pointer, each in both
phases of a scoring pass (phase 2, the composites, publishes after phase 1 did).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from evalcore.cli.main import main
from evalcore.store import RunStore, query_df

from .servers import ScriptedServer, rag_answer

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names open files through /proc")

METRICS = "faithfulness,context_precision,answer_class,ragas_score"  # judged metrics, and a composite
SCORE = ("--metrics", METRICS, "--judge", "heuristic", "--no-progress")


class FullDisk:
    """The disk fills at the `nth` durable write of a file whose path contains `match`, and
    stays full until `free()`: that write and every later one fail with ENOSPC (directory
    fsyncs write nothing and pass)."""

    def __init__(self, match: str, nth: int = 1):
        self.match, self.left, self.full = match, nth, False
        self._fsync = os.fsync

    def fsync(self, fd: int) -> None:
        if not stat.S_ISDIR(os.fstat(fd).st_mode) and self.left:
            if self.match in os.readlink(f"/proc/self/fd/{fd}"):
                self.left -= 1
                self.full = self.left == 0
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._fsync(fd)

    def free(self) -> None:
        self.left, self.full = 0, False


def _cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["evalcore", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out, err = capsys.readouterr()
    return done.value.code or 0, out, err


def _fill(monkeypatch, match: str, nth: int = 1) -> FullDisk:
    disk = FullDisk(match, nth)
    monkeypatch.setattr(os, "fsync", disk.fsync)
    return disk


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> tuple[Path, str]:
    """A run of two answers with contexts and ground truths (every metric above can score)."""
    from evalcore.scoring.importer import import_recorded

    tmp = tmp_path_factory.mktemp("truth")
    path = tmp / "answers.jsonl"
    rows = [{"question_id": f"q{i}", "method": "m", "question": f"Where is site {i}?",
             "answer": f"Site {i} is in Lyon.", "ground_truth": f"Site {i} is in Lyon.",
             "contexts": [f"Site {i} is in Lyon.", "Unrelated text."]} for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    root = tmp / "runs"
    return root, import_recorded(RunStore(root), path, name="tiny").run_id


def _copy(base: tuple[Path, str], tmp: Path) -> tuple[Path, str]:
    root, run_id = base
    shutil.copytree(root, tmp / "runs")
    return tmp / "runs", run_id


def _visible(root: Path, run_id: str) -> dict:
    """What readers see of the run, and what its manifest says about it."""
    store = RunStore(root)
    calls = query_df(store, "SELECT judge_id FROM judge_calls WHERE run_id = ?", [run_id], runs=[run_id])
    metrics = query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id], runs=[run_id])
    return {"manifest": store.manifest(run_id), "calls": len(calls), "judges": set(calls["judge_id"]),
            "metrics": set(metrics["metric"])}


def _assert_true_records(seen: dict, one_pass: bool = True) -> None:
    """The manifest describes what readers see, and nothing more. Its judge figures are the
    last scoring pass's: when one pass made every call, exactly the calls readers see."""
    manifest = seen["manifest"]
    claimed = manifest.counts.get("judge_calls", 0)
    assert claimed == seen["calls"] if one_pass else claimed <= seen["calls"], (manifest.counts, seen["calls"])
    assert set(manifest.judges) == seen["judges"] if one_pass else set(manifest.judges) <= seen["judges"]
    for entry in manifest.config.get("scoring") or []:
        assert set(entry["metrics"]) <= seen["metrics"], (entry["metrics"], seen["metrics"])


# (what fills the disk, which occurrence, the pass's phase it fails in, retry after it)
SCORE_POINTS = [
    ("parts/judge_calls/", 1, 1, True),   # a part file of phase 1: nothing of the pass published
    ("run.json", 1, 1, False),            # phase 1's staged manifest, before its compaction
    ("tables.json", 1, 1, False),         # phase 1's pointer: its new files written, unnamed
    ("parts/metrics/", 2, 2, False),      # a part file of phase 2 (phase 1 published)
    ("tables.json", 2, 2, False),         # phase 2's pointer
]


@pytest.mark.parametrize("match,nth,phase,retry", SCORE_POINTS, ids=[f"{m}#{n}" for m, n, _, _ in SCORE_POINTS])
def test_score_on_a_full_disk_leaves_true_records_and_a_retry_counts_right(base_store, tmp_path, monkeypatch,
                                                                          capsys, match, nth, phase, retry):
    root, run_id = _copy(base_store, tmp_path)
    before = (root / run_id / "run.json").read_bytes()
    disk = _fill(monkeypatch, match, nth)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "score", run_id, *SCORE)
    assert code == 2 and err.startswith("error: no space left on device while writing "), err
    assert len(err.strip().splitlines()) == 1
    seen = _visible(root, run_id)
    _assert_true_records(seen)
    assert not seen["manifest"].config.get("scoring")  # the pass did not complete
    if phase == 1:  # nothing of the pass is visible, and the manifest reads as before, byte for byte
        assert "nothing already stored was changed" in err
        assert seen["calls"] == 0 and not seen["metrics"]
        assert (root / run_id / "run.json").read_bytes() == before
    else:  # phase 1 is published, and the line says so instead of "nothing changed"
        assert "published its other metrics but not its composites" in err
        assert seen["calls"] > 0 and "ragas_score" not in seen["metrics"]
    assert not list(root.rglob("*.tmp"))
    if not retry:
        return
    disk.free()
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "score", run_id, *SCORE)
    assert code == 0, err
    again = _visible(root, run_id)
    _assert_true_records(again)
    assert again["metrics"] == set(METRICS.split(",")) and again["calls"] > 0
    assert len(again["manifest"].config["scoring"]) == 1


def test_a_manifest_that_cannot_follow_its_published_data_says_so(base_store, tmp_path, monkeypatch):
    """The one step after the commit, renaming the staged run.json into place, failing: the error
    says the data is published and the manifest is behind (never "nothing changed")."""
    from evalcore.errors import EvalcoreError

    root, run_id = _copy(base_store, tmp_path)
    store = RunStore(root)
    writer = store.open_run(run_id)
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("run.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst, *args, **kwargs)

    from evalcore.schemas import EvalQuestion

    writer.write_questions([EvalQuestion(id="q9", question="new?")])
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(EvalcoreError, match=r"its new data is published, but .*run\.json could not be updated"):
        writer.publish(record=lambda m: {"notes": [*m.notes, "with q9"]})
    monkeypatch.undo()
    assert "q9" in set(query_df(store, "SELECT question_id FROM questions WHERE run_id = ?", [run_id])["question_id"])
    assert "with q9" not in store.manifest(run_id).notes and not list(root.rglob("*.tmp"))


@pytest.fixture(scope="module")
def scored_store(base_store, tmp_path_factory) -> tuple[Path, str]:
    from evalcore.scoring.engine import score_run

    root, run_id = _copy(base_store, tmp_path_factory.mktemp("scored"))
    score_run(RunStore(root), run_id, metrics=METRICS.split(","), options={"judge": "heuristic"}, progress=False)
    return root, run_id


def test_spot_check_on_a_full_disk_records_nothing_it_did_not_publish(scored_store, tmp_path, monkeypatch):
    root, run_id = _copy(scored_store, tmp_path)
    from evalcore.scoring.spot_check import spot_check

    store = RunStore(root)
    disk = _fill(monkeypatch, "tables.json")
    with pytest.raises(OSError):
        spot_check(store, run_id, fraction=1.0)
    assert "judge_reliability" not in store.manifest(run_id).config
    disk.free()
    summary = spot_check(store, run_id, fraction=1.0)
    assert store.manifest(run_id).config["judge_reliability"] == [summary]
    values = query_df(store, "SELECT count(*) AS n FROM metrics WHERE run_id = ? AND metric = 'judge_disagreement'",
                      [run_id])
    assert int(values["n"][0]) == summary["spot_check_n"]


# ---- live runs: `evalcore run` and `run --resume` ----------------------------------------------
@pytest.fixture(scope="module")
def target():
    server = ScriptedServer(lambda r: rag_answer(r["body"]["question"])).start()
    yield server
    server.stop()


def _questions(tmp: Path) -> Path:
    path = tmp / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"question {i}?"}) + "\n" for i in range(3)))
    return path


def _live(root: Path, run_id: str) -> tuple[int, object]:
    store = RunStore(root)
    n = query_df(store, "SELECT count(*) AS n FROM responses WHERE run_id = ?", [run_id], runs=[run_id])
    return int(n["n"][0]), store.manifest(run_id)


@pytest.mark.parametrize("match", ["parts/questions/", "data/.questions-"])
def test_run_whose_start_fills_the_disk_leaves_no_run(target, tmp_path, monkeypatch, capsys, match):
    """The run's questions could not be written, or published (which goes on while the first
    questions are asked): no run is left claiming them."""
    root = tmp_path / "runs"
    args = ("--store", str(root), "run", "--target", target.url, "--dataset", str(_questions(tmp_path)),
            "--no-score", "--no-progress")
    disk = _fill(monkeypatch, match)
    code, _, err = _cli(monkeypatch, capsys, *args)
    assert code == 2 and "nothing already stored was changed" in err, err
    assert RunStore(root).run_ids() == []
    disk.free()
    assert _cli(monkeypatch, capsys, *args)[0] == 0
    (run_id,) = RunStore(root).run_ids()
    visible, manifest = _live(root, run_id)
    assert visible == 3 and manifest.counts["responses"] == 3 and manifest.status == "complete"


class FullAfter(FullDisk):
    """The disk fills just after the first durable write of a file whose path holds `match`:
    that write succeeds, every later one fails."""

    def fsync(self, fd: int) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._fsync(fd)
        if not stat.S_ISDIR(os.fstat(fd).st_mode) and self.match in os.readlink(f"/proc/self/fd/{fd}"):
            self.full = True


def test_run_whose_disk_fills_just_after_its_questions_leaves_no_run(target, tmp_path, monkeypatch, capsys):
    """The questions are written; the run's status and its first publish (beside the asking)
    both fail: whichever fails first, no run is left claiming the questions, and the message
    says so truly."""
    root = tmp_path / "runs"
    args = ("--store", str(root), "run", "--target", target.url, "--dataset", str(_questions(tmp_path)),
            "--no-score", "--no-progress")
    disk = FullAfter("parts/questions/")
    monkeypatch.setattr(os, "fsync", disk.fsync)
    code, _, err = _cli(monkeypatch, capsys, *args)
    assert code == 2 and "nothing already stored was changed" in err, err
    assert RunStore(root).run_ids() == []
    disk.full, disk.match = False, "\0never"
    assert _cli(monkeypatch, capsys, *args)[0] == 0


def test_ctrl_c_while_a_failing_first_publish_goes_on_leaves_no_run(target, tmp_path, monkeypatch):
    """Ctrl-C before the first answer, while the run's first publish is still going on and then
    fails: the run is removed (it holds no answer), and the interruption is what is raised."""
    import time

    from evalcore.pipeline import live
    from evalcore.runner.config import EvalConfig
    from evalcore.store import compaction

    real_merge = compaction._merge_to

    def slow_failing_merge(path, table, sources):
        time.sleep(0.3)  # still publishing when the user presses Ctrl-C
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(compaction, "_merge_to", slow_failing_merge)
    monkeypatch.setattr(live, "ask_jobs", interrupted)
    store = RunStore(tmp_path / "runs")
    config = EvalConfig(target=target.url, dataset=str(_questions(tmp_path)), score=False, progress=False)
    with pytest.raises(KeyboardInterrupt):
        live.run_evaluation(config, store)
    monkeypatch.setattr(compaction, "_merge_to", real_merge)
    assert store.run_ids() == []


@pytest.mark.parametrize("match", ["parts/responses/", "data/.responses-"])
def test_run_that_fills_the_disk_while_asking_counts_only_published_answers(target, tmp_path, monkeypatch,
                                                                            capsys, match):
    """The disk fills writing an answer, or publishing the answers at the end: the manifest
    counts the answers readers see (none), and `run --resume` completes the run."""
    root = tmp_path / "runs"
    disk = _fill(monkeypatch, match)
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "run", "--target", target.url, "--dataset",
                        str(_questions(tmp_path)), "--no-score", "--no-progress")
    (run_id,) = RunStore(root).run_ids()
    visible, manifest = _live(root, run_id)
    assert manifest.counts.get("responses", 0) == visible and manifest.status != "complete"
    assert code == 2 and err.startswith("error: no space left on device while writing "), err
    assert f"evalcore run --resume {run_id}" in err  # not "nothing already stored was changed"
    # what it keeps, truly: the answers' part (written before the publish failed), or none
    kept = "the 3 answers it wrote" if match.startswith("data/") else "no answer yet"
    assert f"run {run_id} keeps {kept};" in err, err
    disk.free()
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "run", "--resume", run_id, "--no-score",
                        "--no-progress")
    assert code == 0, err
    visible, manifest = _live(root, run_id)
    assert visible == 3 and manifest.counts["responses"] == 3 and manifest.status == "complete"


def _status_fails(monkeypatch):
    """The disk fills when a run's status is set to running; returns the real method."""
    from evalcore.store import RunWriter

    real = RunWriter.update_manifest

    def full(self, **changes):
        if changes.get("status") == "running":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, **changes)

    monkeypatch.setattr(RunWriter, "update_manifest", full)
    return real


def test_run_whose_status_cannot_be_set_after_its_first_publish_leaves_no_run(target, tmp_path, monkeypatch,
                                                                             capsys):
    """The questions are written and published, then the disk fills setting the run's status,
    before anything is asked: no run is left (none claiming answers it "published")."""
    from evalcore.store import RunWriter

    real = _status_fails(monkeypatch)
    root = tmp_path / "runs"
    args = ("--store", str(root), "run", "--target", target.url, "--dataset", str(_questions(tmp_path)),
            "--no-score", "--no-progress")
    code, _, err = _cli(monkeypatch, capsys, *args)
    assert code == 2 and "nothing already stored was changed" in err and "keeps" not in err, err
    assert RunStore(root).run_ids() == []
    monkeypatch.setattr(RunWriter, "update_manifest", real)
    assert _cli(monkeypatch, capsys, *args)[0] == 0


def test_a_new_ray_run_whose_status_cannot_be_set_is_removed_too(target, tmp_path, monkeypatch, capsys):
    """The same rule with `--engine ray` (which publishes its questions before the asking: no
    opening publish beside it). Ray itself is not needed: the status fails first."""
    from contextlib import contextmanager

    from evalcore.pipeline import live

    @contextmanager
    def no_session(engine, address):
        yield

    monkeypatch.setattr(live, "check_engine", lambda engine, address: None)
    monkeypatch.setattr(live, "engine_session", no_session)
    _status_fails(monkeypatch)
    root = tmp_path / "runs"
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "run", "--target", target.url, "--dataset",
                        str(_questions(tmp_path)), "--no-score", "--no-progress", "--engine", "ray")
    assert code == 2 and "nothing already stored was changed" in err, err
    assert RunStore(root).run_ids() == []


def test_a_failed_start_that_cannot_even_be_removed_says_how_to_resume(target, tmp_path, monkeypatch, capsys):
    """The disk is so full that the trash folder cannot be made: the run stays, and the message
    names it and `--resume` instead of "nothing already stored was changed"."""
    from evalcore.store import safe_paths

    _status_fails(monkeypatch)
    real_make_dirs = safe_paths.make_dirs

    def make_dirs(root, path, *args, **kwargs):
        if ".trash" in str(path) and not os.path.isdir(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real_make_dirs(root, path, *args, **kwargs)

    monkeypatch.setattr(safe_paths, "make_dirs", make_dirs)
    root = tmp_path / "runs"
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), "run", "--target", target.url, "--dataset",
                        str(_questions(tmp_path)), "--no-score", "--no-progress")
    (run_id,) = RunStore(root).run_ids()
    assert code == 2 and f"run {run_id} keeps no answer yet" in err and f"--resume {run_id}" in err, err
    assert "nothing already stored was changed" not in err


# ---- the other writers: import, labels import, rejudge -----------------------------------------
def _store_files(root: Path) -> dict[str, bytes]:
    """Every file of the store but lock files (empty, created on first use)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


@pytest.mark.parametrize("command", ["import", "labels", "rejudge"])
def test_other_writers_on_a_full_disk_change_nothing_and_a_retry_works(scored_store, tmp_path, monkeypatch, capsys,
                                                                      command):
    """A new run (staged), human labels (one part file) and a re-judge (a scoring pass): the disk
    fills at the first durable write of each, the store reads exactly as before, and the same
    command succeeds once space is free."""
    root, run_id = _copy(scored_store, tmp_path)
    if command == "import":
        args = ["import", str(tmp_path / "more.jsonl")]
        (tmp_path / "more.jsonl").write_text(json.dumps({"question_id": "x", "method": "m", "question": "x?",
                                                         "answer": "x"}) + "\n")
    elif command == "labels":
        args = ["labels", "import", str(tmp_path / "labels.jsonl")]
        (tmp_path / "labels.jsonl").write_text(json.dumps({"run": run_id, "method": "m", "question_id": "q0",
                                                           "metric": "answer_class", "label": "CORRECT",
                                                           "who": "ann"}) + "\n")
    else:
        args = ["rejudge", run_id, "--judge", "heuristic", "--metrics", "faithfulness"]
    before = _store_files(root)
    disk = _fill(monkeypatch, str(root))
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), *args)
    assert code == 2 and "no space left on device" in err and "nothing already stored was changed" in err, err
    assert _store_files(root) == before
    disk.free()
    code, _, err = _cli(monkeypatch, capsys, "--store", str(root), *args)
    assert code == 0, err
    _assert_true_records(_visible(root, run_id), one_pass=command != "rejudge")


def test_a_second_ctrl_c_while_the_first_publish_finishes_still_decides(target, tmp_path, monkeypatch):
    """Ctrl-C, then Ctrl-C again while the run waits for its (failing) first publish: the wait
    is not cut short, the run is removed, and the scoring child is stopped first."""
    import threading
    import time

    from evalcore.pipeline import live
    from evalcore.runner.config import EvalConfig
    from evalcore.store import compaction

    def slow_failing_merge(path, table, sources):
        time.sleep(0.4)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    from evalcore.pipeline.live_publish import OpeningPublish

    real_init = OpeningPublish.__init__
    interrupts = []

    class InterruptedOnce:
        """The publish's end, waited for: the first wait gets the second Ctrl-C."""

        def __init__(self, done: threading.Event):
            self.done = done

        def wait(self, timeout=None):
            if not interrupts:
                interrupts.append(1)
                raise KeyboardInterrupt  # the second Ctrl-C, arriving during the wait
            return self.done.wait(timeout)

        def set(self):
            self.done.set()

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)  # (the publish takes 0.4 s: replaced before it ends)
        self._done = InterruptedOnce(self._done)

    monkeypatch.setattr(compaction, "_merge_to", slow_failing_merge)
    monkeypatch.setattr(live, "ask_jobs", interrupted)
    monkeypatch.setattr(OpeningPublish, "__init__", init)
    store = RunStore(tmp_path / "runs")
    config = EvalConfig(target=target.url, dataset=str(_questions(tmp_path)), progress=False)
    with pytest.raises(KeyboardInterrupt):
        live.run_evaluation(config, store)
    assert interrupts and store.run_ids() == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt, ValueError])
def test_a_start_stopped_while_writing_its_questions_leaves_no_run(target, tmp_path, monkeypatch, stop):
    """Ctrl-C (or any failure) while the questions are written: no run is left `created` with
    questions it lacks (only a full disk was handled: found by the second review)."""
    from evalcore.pipeline import live
    from evalcore.runner.config import EvalConfig
    from evalcore.store.writer import RunWriter

    def stopped(self, questions):
        raise stop("stopped")

    monkeypatch.setattr(RunWriter, "write_questions", stopped)
    store = RunStore(tmp_path / "runs")
    with pytest.raises(stop):
        live.run_evaluation(EvalConfig(target=target.url, dataset=str(_questions(tmp_path)), progress=False,
                                       score=False), store)
    assert store.run_ids() == []
