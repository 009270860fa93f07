"""The recorded-answers import under hostile input, beyond tests/test_import_fuzz.py (which
covers random JSONL records and random bytes): CSV and Parquet with typed columns, NaN/inf,
duplicate keys, failures after the first batch was staged, streaming equivalence, and a 100 MB
file imported in bounded memory.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.errors import EvalcoreError, InputError
from evalcore.scoring.importer import import_recorded, parse_recorded
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.store import RunStore, query_df

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def figure(name: str, value) -> None:
    """Hand a measured figure to bench/reliability_campaign.py (when it is the caller)."""
    target = os.environ.get("EVALCORE_CAMPAIGN_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": value}) + "\n")


def _assert_nothing_published(store: RunStore) -> None:
    assert store.run_ids() == []
    staging = store.root / ".staging"
    assert not staging.exists() or not list(staging.iterdir()), "a staging folder was left behind"


def _outcome(store: RunStore, path: Path, **kw):
    try:
        result = import_recorded(store, path, **kw)
    except InputError as exc:
        assert exc.file == str(path)
        _assert_nothing_published(store)
        return None
    assert store.run_ids() == [result.run_id]
    assert len(run_responses(store, result.run_id)) == result.n_records
    return result


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf")]))
typed_columns = {
    "question_id": st.one_of(st.text(max_size=4), st.sampled_from(["q1", "q1", " ", ""])),
    "question": st.one_of(st.none(), st.text(max_size=8), st.just("x" * 200_000)),
    "answer": st.one_of(st.none(), st.text(max_size=8)),
    "method": st.one_of(st.none(), st.sampled_from(["a", "b", " ", "a/b"])),
    "latency_ms": st.one_of(st.none(), floats),
    "abstained": st.one_of(st.none(), st.booleans()),
}


@SETTINGS
@given(st.lists(st.fixed_dictionaries({}, optional=typed_columns), min_size=1, max_size=5),
       st.sampled_from(["parquet", "csv"]))
def test_typed_columns(tmp_path_factory, rows, suffix):
    tmp = tmp_path_factory.mktemp("typed")
    store = RunStore(tmp / "runs")
    path = tmp / f"answers.{suffix}"
    names = sorted({k for r in rows for k in r}) or ["question_id"]
    if suffix == "parquet":
        types = {"latency_ms": pa.float64(), "abstained": pa.bool_()}
        pq.write_table(pa.table({n: pa.array([r.get(n) for r in rows], types.get(n, pa.string()))
                                 for n in names}), path)
    else:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(names)
            writer.writerows([["" if r.get(n) is None else str(r.get(n)) for n in names] for r in rows])
    result = _outcome(store, path)
    if result is not None:
        df = query_df(store, "SELECT latency_ms FROM responses WHERE latency_ms IS NOT NULL")
        assert all(v == v and abs(v) != float("inf") for v in df["latency_ms"]), "NaN/inf stored"


good_records = st.lists(st.fixed_dictionaries({
    "question_id": st.sampled_from(["q1", "q2", "q3", "q4"]),
    "method": st.sampled_from(["a", "b", "c"]),
    "answer": st.text(max_size=5),
}, optional={"ground_truth": st.sampled_from(["g1", "g2"])}), min_size=1, max_size=12)


@SETTINGS
@given(good_records, st.integers(1, 4))
def test_streamed_import_stores_what_the_list_parser_reads(tmp_path_factory, recs, batch):
    """Batches of part files change nothing: the views show exactly parse_recorded's result,
    including a question whose ground truth only a later record (in a later batch) supplies."""
    tmp = tmp_path_factory.mktemp("stream")
    path = tmp / "a.jsonl"
    path.write_text("".join(json.dumps({**r, "question": f"text of {r['question_id']}"}) + "\n" for r in recs))
    store = RunStore(tmp / "runs")
    try:
        expected_q, expected_r = parse_recorded(path)
    except InputError:
        assert _outcome(store, path, batch_size=batch) is None
        return
    result = import_recorded(store, path, batch_size=batch)
    assert run_questions(store, result.run_id) == sorted(expected_q, key=lambda q: q.id)
    stored = {(r.method, r.question_id): r for r in run_responses(store, result.run_id)}
    assert stored == {(r.method, r.question_id): r for r in expected_r}
    assert store.manifest(result.run_id).counts == {"questions": len(expected_q), "responses": len(expected_r),
                                                     "errors": 0}


@pytest.mark.parametrize("line, field", [
    ('{"question_id": "q", "question": "Q?", "answer": "a", "latency_ms": 1e999}', "latency_ms"),
    ('{"question_id": "q", "question": "Q?", "answer": "a", "token_usage": {"cost_usd": -1e999}}',
     "token_usage.cost_usd"),
    ('{"question_id": "q", "question": "Q?", "answer": "a", "latency_ms": NaN}', None),
    ('{"question_id": "q1", "question": "Other?", "answer": "a", "method": "m2"}', "question"),  # id reused
    ('{"question_id": "q1", "question": "Q1?", "answer": "again", "method": "m"}', "question_id"),  # twice
])
def test_bad_record_after_staged_batches_leaves_nothing(tmp_path, line, field):
    """The bad record comes after three batches were written into staging."""
    good = "".join(json.dumps({"question_id": f"q{i}", "question": f"Q{i}?", "answer": "a", "method": "m"}) + "\n"
                   for i in range(1, 8))
    path = tmp_path / "a.jsonl"
    path.write_text(good + line + "\n")
    store = RunStore(tmp_path / "runs")
    with pytest.raises(InputError) as info:
        import_recorded(store, path, batch_size=2)
    assert info.value.record == 8 and (field is None or info.value.field == field)
    _assert_nothing_published(store)


def test_duplicate_chunk_ids(tmp_path):
    """Gold chunk ids listed twice are merged (documented coercion); a response that lists one
    retrieved chunk twice is refused (the schema's rule: ranks of one chunk are ambiguous)."""
    store = RunStore(tmp_path / "runs")
    path = tmp_path / "a.jsonl"
    rec = {"question_id": "q", "question": "Q?", "answer": "a", "gold_chunk_ids": ["c", "c"],
           "retrieved": [{"chunk_id": "c", "text": "t"}]}
    path.write_text(json.dumps(rec))
    result = import_recorded(store, path)
    (q,) = run_questions(store, result.run_id)
    assert [g.chunk_id for g in q.gold_passages] == ["c"]
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps({**rec, "retrieved": rec["retrieved"] * 2}))
    with pytest.raises(InputError) as info:
        import_recorded(store, bad)
    assert (info.value.record, info.value.field) == (1, "retrieved.1.chunk_id")
    assert store.run_ids() == [result.run_id]


def test_empty_and_blank_files(tmp_path):
    store = RunStore(tmp_path / "runs")
    for name, data in [("e.jsonl", b""), ("b.jsonl", b"\n \n"), ("e.csv", b""), ("h.csv", b"question_id,answer\n"),
                       ("e.json", b"[]"), ("e.parquet", b"")]:
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as info:
            import_recorded(store, path)
        assert info.value.file == str(path)
    _assert_nothing_published(store)


# ---- 100 MB ------------------------------------------------------------------------------

BIG_BYTES = 100 * 2**20
SMALL_BYTES = 25 * 2**20
# Peak RSS growth while importing, after a warm-up. Measured (Linux, CPython 3.11): the import's
# own streaming costs ~30 MB for one 1000-response batch in flight plus ~0.15 MB per MB of file
# for the (method, question id) keys kept to refuse a second answer; since format 2 the import
# ends by compacting its part files into one canonical file per table and computing the run's
# summaries (DuckDB), a fixed working set of ~50 MB (Arrow reader/writer buffers, allocator
# arenas): 25 / 60 / 100 MB files grew 79 / 81 / 89 MB (JSON arrays: 66-73 / 70-102 MB over
# repeated runs: allocator retention makes single figures vary by +-20 MB). What must hold is
# that memory does not follow the file: the growth from the 25 MB to the 100 MB file stays under
# SLOPE_BOUND per MB (the import before it streamed grew 1 MB per MB of file; the first
# compaction, which merged in one SQL window, 5.5 MB per MB; with DuckDB's file cache on during
# the summaries, ~0.6), with an absolute cap for the 100 MB file. The bound is 0.9, not tighter:
# two single figures that each vary by +-20 MB, 75 MB of file apart, make the slope itself vary
# by up to +-0.5 (a CI run measured 0.75 with 59 MB for the 25 MB file, where 79 is usual); 0.9
# still fails both regressions seen (1 and 5.5 MB per MB), and the cap fails memory that
# follows the file (100 MB of file + the ~50 MB working set reaches it).
SLOPE_BOUND = {"jsonl": 0.9, "json": 0.9}
CAP_BYTES = 150 * 2**20

CHILD = textwrap.dedent("""
    import json, sys, time
    import pyarrow.parquet  # libraries loaded before the baseline: their code is not the import's memory
    from evalcore.scoring.importer import import_recorded
    from evalcore.store import RunStore

    def peak_rss():  # VmHWM: this process's peak resident set, in bytes (fresh at exec, unlike
        # ru_maxrss, which Linux carries over from the parent across fork + exec)
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    # warm-up: a one-record import loads every lazy library and codec, so what grows afterwards
    # is the memory the file's size costs, not code loading
    import os, tempfile
    warm = tempfile.mkdtemp()
    with open(os.path.join(warm, "w.jsonl"), "w") as fh:
        fh.write(json.dumps({"question_id": "w", "question": "W?", "answer": "a", "contexts": ["c"]}) + "\\n")
    import_recorded(RunStore(os.path.join(warm, "runs")), os.path.join(warm, "w.jsonl"))
    base = peak_rss()
    t = time.perf_counter()
    result = import_recorded(RunStore(sys.argv[2]), sys.argv[1])
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "growth": peak_rss() - base, "base": base, "n": result.n_records,
                      "run_id": result.run_id}))
""")


def write_big(path: Path, target_bytes: int, methods: int = 10) -> int:
    """Records of ~1.1 KB (10 methods per question), written one by one: JSON lines, or one
    JSON array when the name ends in .json."""
    pad = "lorem ipsum dolor sit amet " * 22
    array = path.suffix == ".json"
    n = size = q = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[" if array else "")
        while size < target_bytes:
            for m in range(methods):
                line = ("," if array and n else "") + json.dumps({"question_id": f"q{q}", "method": f"m{m}", "question": f"What is item {q}?",
                                   "ground_truth": f"item {q}", "answer": f"{pad} {q}",
                                   "contexts": [f"context {q} {i} " + pad[:100] for i in range(3)]}) + "\n"
                fh.write(line)
                size += len(line)
                n += 1
            q += 1
        fh.write("]" if array else "")
    return n


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for peak RSS")
@pytest.mark.parametrize("suffix", ["jsonl", "json"])
def test_100mb_import_in_bounded_memory(tmp_path, suffix):
    """Fresh processes import a 25 MB and a 100 MB file; the growth of peak RSS (VmHWM) must not
    follow the file size (slope bound) and stays under an absolute cap."""
    def run(target: int, name: str):
        path = tmp_path / f"{name}.{suffix}"
        n = write_big(path, target)
        store_root = tmp_path / f"runs-{name}"
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(store_root)], capture_output=True,
                             text=True, timeout=180, check=True)
        stats = json.loads(out.stdout.strip().splitlines()[-1])
        return n, path.stat().st_size, store_root, stats, time.perf_counter() - t0

    _, small_size, _, small, _ = run(SMALL_BYTES, "small")
    n, size, store_root, stats, wall = run(BIG_BYTES, "big")
    slope = (stats["growth"] - small["growth"]) / (size - small_size)
    tag = "" if suffix == "jsonl" else "_json"
    figure(f"import_100mb{tag}_seconds", round(stats["seconds"], 2))
    figure(f"import_100mb{tag}_rss_growth_mb", round(stats["growth"] / 2**20, 1))
    figure(f"import_25mb{tag}_rss_growth_mb", round(small["growth"] / 2**20, 1))
    figure(f"import_100mb{tag}_file_mb", round(size / 2**20, 1))
    assert stats["base"] > 20 * 2**20  # a real measurement: the interpreter + pyarrow alone exceed 20 MB
    assert stats["n"] == n
    assert slope < SLOPE_BOUND[suffix], (f"peak RSS grows {slope:.2f} MB per MB of file ({small['growth'] / 2**20:.0f} MB "
                                         f"for {small_size / 2**20:.0f} MB, {stats['growth'] / 2**20:.0f} MB for {size / 2**20:.0f} MB)")
    assert stats["growth"] < CAP_BYTES, f"peak RSS grew {stats['growth'] / 2**20:.0f} MB"
    assert wall < 90
    store = RunStore(store_root)
    counts = query_df(store, "SELECT (SELECT count(*) FROM responses) AS r, (SELECT count(*) FROM questions) AS q")
    assert (counts["r"][0], counts["q"][0]) == (n, n // 10)
    run_dir = store_root / stats["run_id"]
    pointer = json.loads((run_dir / "tables.json").read_text())
    assert pointer["rows"]["responses"] == n and pointer["replaced"]["responses"] == 0  # one row per answer
    assert not list(run_dir.glob("parts/*/*.parquet"))  # every part file compacted away


def test_errors_are_evalcore_errors():
    assert issubclass(InputError, EvalcoreError)
