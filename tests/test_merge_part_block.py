"""Many small parts read as one block (store/part_block.py) merge exactly as files read one by one.

The block is only a faster read: which row wins (newest time, then the later file, then the later
row; a judge call paid for over a cache hit), which set survives whole, the markers of empty sets,
another run's rows — all must come out the same, row for row and in the same order.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.store import merge as merge_module
from evalcore.store import part_block
from evalcore.store.merge import ForeignRows, merge_files
from evalcore.store.tables import SCHEMAS

RUN = "run-a"
T0 = datetime(2026, 11, 28, tzinfo=timezone.utc)


def _rows(table: str, rng: random.Random, n: int, run_id: str = RUN) -> list[dict]:
    """Rows whose keys collide often (few questions, methods, metrics) and whose times tie often."""
    rows = []
    for _ in range(n):
        row = {"run_id": run_id, "method": rng.choice(["a", "b"]), "question_id": f"q{rng.randrange(6)}",
               "trial": rng.choice([0, 0, 1])}
        when = T0 + timedelta(seconds=rng.randrange(4))
        if table == "responses":
            row.update(answer=f"answer {rng.random():.6f}", written_at=when, latency_ms=rng.random())
        elif table == "metrics":
            row.update(metric=rng.choice(["m1", "m2"]), value=rng.random(), computed_at=when)
        elif table == "judge_calls":
            row = {"run_id": run_id, "call_key": f"k{rng.randrange(8)}", "created_at": when,
                   "cache_hit": rng.choice([True, False, None]), "response": f"r{rng.random():.6f}"}
        elif table == "claims":
            row.update(metric="faithfulness", computed_at=when, idx=rng.choice([-1, 0, 1, 2]),
                       claim=f"claim {rng.random():.6f}")
        rows.append(row)
    return rows


def _write_parts(tmp_path, table: str, seed: int, n_files: int) -> list:
    rng = random.Random(seed)
    paths = []
    for i in range(n_files):
        rows = _rows(table, rng, rng.randrange(1, 12))
        if table == "claims":  # a set is written in one call: its rows share one time
            when = T0 + timedelta(seconds=rng.randrange(4))
            for row in rows:
                row["computed_at"] = when
        path = tmp_path / f"part-{i:04d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS[table]), path)
        paths.append(path)
    return paths


def _merged(paths, table, out, block: bool, monkeypatch) -> pa.Table:
    with monkeypatch.context() as m:
        if not block:
            m.setattr(merge_module, "read_block", lambda paths, table: None)
        merged = merge_files(paths, table, out, run_id=RUN)
    result = pq.read_table(out)
    return result, (merged.rows_in, merged.rows_out)


@pytest.mark.parametrize("table", ["responses", "metrics", "judge_calls", "claims"])
@pytest.mark.parametrize("seed", range(6))
def test_a_block_merges_exactly_as_files_one_by_one(tmp_path, monkeypatch, table, seed):
    paths = _write_parts(tmp_path, table, seed, n_files=5 + seed * 7)
    assert part_block.read_block(paths, table) is not None  # the test reaches the block
    one_by_one = _merged(paths, table, tmp_path / "slow.parquet", False, monkeypatch)
    in_block = _merged(paths, table, tmp_path / "fast.parquet", True, monkeypatch)
    assert in_block[1] == one_by_one[1]
    assert in_block[0].equals(one_by_one[0])
    assert one_by_one[1][1] < one_by_one[1][0]  # keys collided: the rule was exercised


def test_the_canonical_file_first_and_parts_as_a_block(tmp_path, monkeypatch):
    """The run's canonical file (here: too large for a block) stays a file; the parts after it form one."""
    paths = _write_parts(tmp_path, "responses", 11, n_files=9)
    big = tmp_path / "canonical.parquet"
    rows = _rows("responses", random.Random(3), 400)
    for row in rows:
        row["answer"] = "x" * 50_000 + row["answer"]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS["responses"]), big, compression="zstd")
    assert part_block.read_block([big, *paths], "responses") is None  # decodes past BLOCK_BYTES
    sources = merge_module._sources([big, *paths], "responses")
    assert sources[0] == big and isinstance(sources[1], part_block.PartBlock)
    one_by_one = _merged([big, *paths], "responses", tmp_path / "slow.parquet", False, monkeypatch)
    in_block = _merged([big, *paths], "responses", tmp_path / "fast.parquet", True, monkeypatch)
    assert in_block[0].equals(one_by_one[0]) and in_block[1] == one_by_one[1]


def test_another_runs_rows_name_their_own_part(tmp_path):
    paths = _write_parts(tmp_path, "metrics", 2, n_files=8)
    rows = _rows("metrics", random.Random(5), 3, run_id="run-b")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS["metrics"]), paths[5])
    assert part_block.read_block(paths, "metrics") is not None
    with pytest.raises(ForeignRows) as caught:
        merge_files(paths, "metrics", tmp_path / "out.parquet", run_id=RUN)
    assert caught.value.path == paths[5] and caught.value.found == "run-b"


def test_files_the_block_does_not_take_are_read_one_by_one(tmp_path):
    paths = _write_parts(tmp_path, "metrics", 4, n_files=6)
    assert part_block.read_block(paths[:3], "metrics") is None  # too few to gain anything
    older = SCHEMAS["metrics"].remove(SCHEMAS["metrics"].get_field_index("label"))
    pq.write_table(pq.read_table(paths[2]).select(older.names), paths[2])  # a file from before `label`
    assert part_block.read_block(paths, "metrics") is None
    pq.write_table(pq.read_table(paths[3]), paths[2])
    os.unlink(paths[4])
    os.mkfifo(paths[4])  # never opened: a reader would block on it
    assert part_block.read_block(paths, "metrics") is None
    paths[4].unlink()
    paths[4].write_bytes(b"not parquet")
    assert part_block.read_block(paths, "metrics") is None


@pytest.mark.parametrize("table", ["responses", "metrics", "judge_calls", "claims"])
@pytest.mark.parametrize("seed", range(4))
def test_keys_compared_as_text_and_by_their_hashes_pick_the_same_rows(tmp_path, monkeypatch, table, seed):
    """A small merge compares its keys exactly (merge._exact_order); a large one by two hashes
    per HASH_ROWS rows. Forced to hash every file on its own, the same rows come out."""
    paths = _write_parts(tmp_path, table, 100 + seed, n_files=6 + seed * 5)
    exact = _merged(paths, table, tmp_path / "exact.parquet", False, monkeypatch)
    monkeypatch.setattr(merge_module, "HASH_ROWS", 1)
    hashed = _merged(paths, table, tmp_path / "hashed.parquet", False, monkeypatch)
    assert exact[1] == hashed[1] and exact[0].equals(hashed[0])
    assert exact[1][1] < exact[1][0]  # keys collided: the rule was exercised


def test_parts_that_decode_large_are_refused_without_being_held(tmp_path):
    """Footers count text after dictionary encoding: a long text on every row weighs little there.
    The block counts what it decodes and gives up past BLOCK_BYTES, holding no more than that
    and the file in hand (a hostile review's 16 small parts once decoded to 2.6 GB at once)."""
    import subprocess
    import sys

    rows, text = 2000, "x" * 4000  # 8 MB per part decoded, a few KB on disk
    paths = []
    for i in range(8):
        table = pa.table({"run_id": ["r"] * rows, "method": ["m"] * rows,
                          "question_id": [f"q{j}" for j in range(rows)], "answer": [text] * rows})
        table = pa.Table.from_arrays([table.column(f.name).cast(f.type) if f.name in table.column_names
                                      else pa.nulls(rows, f.type) for f in SCHEMAS["responses"]],
                                     schema=SCHEMAS["responses"])
        paths.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(table, paths[-1])
    assert sum(p.stat().st_size for p in paths) < 2**20  # small on disk: only decoding tells
    code = ("import sys, pyarrow as pa; from pathlib import Path; from evalcore.store import part_block; "
            "assert part_block.read_block([Path(p) for p in sys.argv[1:]], 'responses') is None; "
            "print(pa.default_memory_pool().max_memory())")
    done = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    peak_mb = int(done.stdout) / 2**20
    assert peak_mb < part_block.BLOCK_BYTES / 2**20 + 3 * 8, peak_mb  # all eight parts would be 64 MB


def test_a_file_read_alone_is_decoded_in_batches_sized_as_decoded_not_from_its_footer(tmp_path):
    """20,000 rows repeating one 4,000-character answer: ~0.1 MB on disk, dictionary-encoded, so
    its footer says ~40 bytes a row. A batch sized from the footer decoded the whole file at once
    (80 MB; 250 MB at twice the rows); sized from the rows as decoded, a few MB at a time."""
    peak_mb = _merge_peak_mb(_repeating_part(tmp_path, ["y" * 4000] * 20_000))
    assert peak_mb < 40, peak_mb


def test_a_file_whose_first_rows_are_short_is_still_decoded_a_bounded_batch_at_a_time(tmp_path):
    """The probe sees 64 short rows; 12,000 rows of one 50,000-character answer follow (a small
    file: dictionary-encoded). Batches are at most MAX_BATCH_ROWS rows whatever the probe said:
    ~50 MB at a time, where the footer's sizing decoded ~790 MB at once (a hostile review)."""
    peak_mb = _merge_peak_mb(_repeating_part(tmp_path, ["short"] * 64 + ["y" * 50_000] * 12_000))
    assert peak_mb < 200, peak_mb


def test_a_deep_check_reads_such_a_file_a_bounded_batch_at_a_time(tmp_path):
    """`store check --deep` reads every row of a file: in batches of DEEP_BATCH_ROWS rows, not
    65,536 (the same file decoded ~600 MB at once)."""
    path = _repeating_part(tmp_path, ["short"] * 64 + ["y" * 50_000] * 12_000)
    code = ("import sys, pyarrow as pa; from pathlib import Path; from evalcore.store.quarantine import unreadable; "
            "assert unreadable(Path(sys.argv[1]), deep=True) is None; print(pa.default_memory_pool().max_memory())")
    assert _peak_mb(code, path) < 200


def _repeating_part(tmp_path, answers: list[str]):
    """A responses part of `answers`, dictionary-encoded: small on disk however long they are."""
    n = len(answers)
    table = pa.table({"run_id": pa.array([RUN] * n), "method": pa.array(["m"] * n),
                      "question_id": pa.array([f"q{i}" for i in range(n)]), "trial": pa.array([0] * n, pa.int32()),
                      "answer": pa.array(answers)})
    table = table.cast(pa.schema([SCHEMAS["responses"].field(c) for c in table.column_names]))
    path = tmp_path / "part-0.parquet"
    pq.write_table(table, path, use_dictionary=True, compression="zstd")
    assert path.stat().st_size < 2**20
    return path


def _merge_peak_mb(path) -> float:
    """Arrow's peak memory, in a fresh interpreter, merging the one file `path` (every row kept)."""
    code = ("import sys, pyarrow as pa, pyarrow.parquet as pq; from pathlib import Path; "
            "from evalcore.store.merge import merge_files; p = Path(sys.argv[1]); "
            "m = merge_files([p], 'responses', p.with_name('out.parquet'), run_id=sys.argv[2]); "
            "assert m.rows_out == m.rows_in == pq.ParquetFile(p).metadata.num_rows, m; "
            "print(pa.default_memory_pool().max_memory())")
    return _peak_mb(code, path, RUN)


def _peak_mb(code: str, *args) -> float:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout) / 2**20
