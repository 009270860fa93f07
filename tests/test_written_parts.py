"""Parts this process wrote are merged from memory (store/written_parts.py) only while the file on
disk is still the one written: the merge's output is the same either way, and a part replaced,
truncated or moved in by hand is read (and judged) from disk as before."""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.store import part_block, written_parts
from evalcore.store.merge import merge_files
from evalcore.store.parquet_write import write_part
from evalcore.store.quarantine import quarantine_unreadable_parts
from evalcore.store.tables import SCHEMAS

RUN = "run-a"
T0 = datetime(2026, 11, 28, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _empty_memo():
    written_parts.clear()
    yield
    written_parts.clear()


def _rows(rng: random.Random, n: int, run_id: str = RUN) -> list[dict]:
    return [{"run_id": run_id, "method": rng.choice(["a", "b"]), "question_id": f"q{rng.randrange(40)}",
             "trial": 0, "answer": f"answer {rng.random():.6f}", "latency_ms": rng.random(),
             "written_at": T0 + timedelta(seconds=rng.randrange(4))} for _ in range(n)]


def _parts(folder, n_files: int, seed: int = 1) -> list:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    return [write_part(folder, "responses", _rows(rng, rng.randrange(1, 17)), within=folder, keep=True)
            for _ in range(n_files)]


def _merged(paths, out) -> pa.Table:
    merge_files(paths, "responses", out, run_id=RUN)
    return pq.read_table(out)


def test_parts_written_here_merge_from_memory_to_the_same_rows(tmp_path, monkeypatch):
    paths = _parts(tmp_path / "parts", 30)
    assert all(written_parts.recall(p) is not None for p in paths)
    reads = []
    real = pq.ParquetFile
    monkeypatch.setattr(pq, "ParquetFile", lambda *a, **k: reads.append(a[0]) or real(*a, **k))
    from_memory = _merged(paths, tmp_path / "a.parquet")
    assert not [r for r in reads if "part-" in str(r)]  # not one part read back
    written_parts.forget(paths)
    from_disk = _merged(paths, tmp_path / "b.parquet")
    assert [r for r in reads if "part-" in str(r)]
    assert from_memory.num_rows > 0 and from_memory.equals(from_disk)


def test_a_part_replaced_by_hand_is_read_from_disk(tmp_path):
    paths = _parts(tmp_path / "parts", 8)
    other = tmp_path / "other.parquet"
    rows = _rows(random.Random(9), 5)
    for row in rows:
        row["answer"] = "put in by hand"
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS["responses"]), other)
    os.replace(other, paths[3])  # a new file (inode) at the path this process wrote
    assert written_parts.recall(paths[3]) is None
    merged = _merged(paths, tmp_path / "out.parquet")
    assert "put in by hand" in merged.column("answer").to_pylist()


def test_a_part_truncated_in_place_is_not_taken_from_memory(tmp_path):
    paths = _parts(tmp_path / "parts", 8)
    with open(paths[2], "r+b") as fh:
        fh.truncate(10)
    assert written_parts.recall(paths[2]) is None
    assert part_block.read_block(paths, "responses") is None  # the block gives up: file by file, with its errors
    with pytest.raises((OSError, pa.ArrowException)):
        merge_files(paths, "responses", tmp_path / "out.parquet", run_id=RUN)


def test_quarantine_still_judges_a_part_swapped_for_another_runs(tmp_path):
    run_dir = tmp_path / RUN
    folder = run_dir / "parts" / "responses"
    paths = _parts(folder, 3)
    assert quarantine_unreadable_parts(run_dir, {"responses": paths}) == {"responses": paths}
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(random.Random(3), 4, run_id="run-b"), schema=SCHEMAS["responses"]),
                   foreign)
    os.replace(foreign, paths[1])
    kept = quarantine_unreadable_parts(run_dir, {"responses": paths})
    assert kept == {"responses": [paths[0], paths[2]]}
    assert (run_dir / "quarantine" / "parts" / "responses" / paths[1].name).is_file()


def test_what_is_held_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(written_parts, "MEMO_BYTES", 20_000)
    paths = _parts(tmp_path / "parts", 200)
    assert 0 < written_parts.held_bytes() <= 20_000
    assert written_parts.recall(paths[-1]) is not None and written_parts.recall(paths[0]) is None  # oldest went first
    monkeypatch.setattr(written_parts, "PART_BYTES", 10)
    big = _parts(tmp_path / "big", 1)[0]
    assert written_parts.recall(big) is None


def test_a_compaction_lets_go_of_what_it_absorbed(tmp_path):
    from evalcore.schemas import EvalResponse
    from evalcore.schemas.manifest import RunManifest
    from evalcore.store import RunStore
    from evalcore.store.layout import FORMAT_VERSION, new_run_id

    store = RunStore(tmp_path / "runs")
    run_id = new_run_id("memo")
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name="memo", kind="live",
                                          status="created", evalcore_version="0", methods=["m"]))
    for start in range(0, 64, 16):
        writer.write_responses([EvalResponse(question_id=f"q{i}", method="m", answer=f"a{i}")
                                for i in range(start, start + 16)])
    assert written_parts.held_bytes() > 0
    writer.publish()
    assert written_parts.held_bytes() == 0
    assert store.manifest(run_id).run_id == run_id
    from evalcore.store import query_df

    assert int(query_df(store, "SELECT count(*) AS n FROM responses WHERE run_id = ?", [run_id])["n"][0]) == 64


def test_a_scoring_child_hands_its_parts_over_as_written(tmp_path):
    """The child writes its values' parts; the process that compacts takes them over (Arrow IPC
    through the pipe) and merges them from memory: the same rows, and still only while each file
    is the one written. Entries that do not decode are left to the disk."""
    before = _parts(tmp_path / "before", 2)
    since = written_parts.mark()
    paths = _parts(tmp_path / "parts", 5, seed=4)
    handed = written_parts.hand_over(since)
    assert sorted(p for p, _, _ in handed) == sorted(map(str, paths))
    assert all(written_parts.recall(p) is None for p in paths)  # let go by the child
    assert all(written_parts.recall(p) is not None for p in before)  # written before the mark: kept
    expected = {p: pq.read_table(p) for p in paths}
    written_parts.adopt(handed[:-1] + [(handed[-1][0], handed[-1][1], b"not arrow")])
    bad = handed[-1][0]
    for path in paths:
        if str(path) != bad:
            assert written_parts.recall(path).equals(expected[path])
    assert written_parts.recall(bad) is None


def test_a_part_rewritten_in_place_with_its_times_put_back_is_read_from_disk(tmp_path):
    """`touch -r`, `cp -p`, `rsync --inplace -t` keep inode, size and modification time: the
    change time still moves, and nobody can set it back (a hostile review)."""
    paths = _parts(tmp_path / "parts", 4)
    st = os.stat(paths[1])
    data = paths[1].read_bytes()
    with open(paths[1], "r+b") as fh:
        fh.write(data)  # the same size (here the same bytes: only the times could tell)
    os.utime(paths[1], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(paths[1]).st_mtime_ns == st.st_mtime_ns
    assert written_parts.recall(paths[1]) is None


def test_only_a_runs_parts_are_held(tmp_path):
    """Parts written without `keep` (the dashboard's labels, which no run's merge reads) are not held."""
    folder = tmp_path / "labels"
    folder.mkdir()
    path = write_part(folder, "responses", _rows(random.Random(2), 3), within=folder)
    assert written_parts.recall(path) is None and written_parts.held_bytes() == 0
