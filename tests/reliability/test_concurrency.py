"""Several real processes write one store at once while another reads it.

Writers: two imports (staged, many part files each), a live-style run appending responses
and updating its manifest counts, two more processes appending notes to that same manifest
(read-modify-write racing each other and the first), and a re-score of an existing run (score_run). The
reader loops over the DuckDB views (open_db + counts) and reads every part file with pyarrow.

Checked: the reader never raises (no half-written part file is ever visible); an imported run,
once visible, has all its rows (it is published whole); counts never go down; at the end every
row count is exactly what was written, and no manifest update was lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from pathlib import Path

from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.store import RunStore, query_df

N_IMPORT = 200        # records per imported file (2 methods x 100 questions)
N_LIVE_BATCHES = 20   # live run: batches of 5 responses, each followed by a manifest update
N_NOTES = 80          # notes appended to the live run's manifest by each of two competing processes
# On object storage each write is several HTTP requests to the moto server: the same race with
# a quarter of the work keeps it (and CI) within minutes; every process still overlaps the others.
SIZES = {"local": (N_IMPORT, N_LIVE_BATCHES, N_NOTES), "s3": (40, 5, 16)}
METRICS = ["token_f1", "exact_match"]

WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    mode, root, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    from evalcore.store import FORMAT_VERSION, RunStore
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    store = RunStore(root)
    if mode == "reader":
        import glob
        import pyarrow.parquet as pq
        from evalcore.store import open_db
    import os
    Path(f"{go}.{os.getpid()}.ready").touch()
    while not go.exists():
        time.sleep(0.005)
    if mode == "import":
        from evalcore.scoring.importer import import_recorded
        result = import_recorded(store, sys.argv[4], name=sys.argv[5], batch_size=25)
        print(json.dumps({"run_id": result.run_id}))
    elif mode == "rescore":
        from evalcore.scoring.engine import score_run
        report = score_run(store, sys.argv[4], metrics=sys.argv[5].split(","), progress=False, chunk_size=20)
        print(json.dumps({"n_values": report.n_values}))
    elif mode == "live":
        writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="live-run", name="live",
                                              evalcore_version="test", methods=["m"], status="running"))
        writer.write_questions([EvalQuestion(id=f"q{i}", question=f"Q{i}?") for i in range(5 * int(sys.argv[4]))])
        writer.publish()
        for b in range(int(sys.argv[4])):
            writer.write_responses([EvalResponse(question_id=f"q{5 * b + i}", method="m", answer="a")
                                    for i in range(5)])
            writer.update_manifest(counts={"responses": 5 * (b + 1)})
            if b % 4 == 3:  # a live run publishes every few batches, while others read
                writer.publish()
        writer.publish()
        writer.update_manifest(status="complete")
        print(json.dumps({"done": True}))
    elif mode == "notes":
        while not (store.root / "live-run" / "run.json").exists():
            time.sleep(0.002)
        writer = store.open_run("live-run")
        tag = sys.argv[5]
        for i in range(int(sys.argv[4])):
            writer.edit_manifest(lambda m: {"notes": m.notes + [f"{tag}{i}"]})
        print(json.dumps({"done": True}))
    elif mode == "reader":
        stop = Path(sys.argv[4])
        loops = files = 0
        last = {}
        complete = {}
        while True:
            stopping = stop.exists()
            with open_db(store) as con:
                counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                          for t in ("runs", "questions", "responses", "metrics")}
                # readers never de-duplicate, so the canonical rows must be unique per key
                dupes = con.execute("SELECT count(*) - count(DISTINCT (run_id, method, question_id, metric)) "
                                    "FROM metrics").fetchone()[0]
                dupes += con.execute("SELECT count(*) - count(DISTINCT (run_id, method, question_id)) "
                                     "FROM responses").fetchone()[0]
                assert dupes == 0, f"{dupes} duplicate rows visible"
                per_run = dict(con.execute("SELECT r.run_id, count(x.run_id) FROM runs r LEFT JOIN responses x "
                                           "USING (run_id) WHERE r.name LIKE 'import-%' GROUP BY r.run_id").fetchall())
            for key, value in counts.items():
                assert value >= last.get(key, 0), f"{key} went down: {last.get(key)} -> {value}"
            last = counts
            for run_id, n in per_run.items():  # an import is visible whole or not at all
                assert complete.setdefault(run_id, n) == n, f"{run_id} seen with {complete[run_id]} then {n} rows"
            if store.remote:  # every object of the store but staging folders
                from evalcore.store.fs import arrow
                paths = [p for p in store.root.rglob("*.parquet") if "/.staging/" not in str(p)]
            else:
                paths = glob.glob(f"{root}/*/*/*.parquet") + glob.glob(f"{root}/*/parts/*/*.parquet")
            for path in paths:
                try:  # never half-written (a file compacted away may vanish)
                    if store.remote:
                        where, fs = arrow(path)
                        pq.read_table(where, filesystem=fs)
                    else:
                        pq.read_table(path)
                except FileNotFoundError:
                    continue
                files += 1
            loops += 1
            if stopping:
                break
        print(json.dumps({"loops": loops, "files_read": files, "per_run": per_run, "last": last}), flush=True)
        # Every check above is done. On S3, pyarrow reads through fsspec from its own I/O threads;
        # under load one of them was once still alive at interpreter teardown and the C++ runtime
        # aborted (SIGABRT, "terminate called without an active exception") after the output was
        # written: leave without the teardown so that exit noise cannot fail the reading checks.
        import os
        os._exit(0)
""")


def _answers(path: Path, tag: str, n_import: int = N_IMPORT) -> Path:
    with open(path, "w", encoding="utf-8") as fh:
        for q in range(n_import // 2):
            for m in ("a", "b"):
                fh.write(json.dumps({"question_id": f"{tag}{q}", "method": m, "question": f"{tag} question {q}?",
                                     "ground_truth": f"answer {q}", "answer": f"answer {q} by {m}"}) + "\n")
    return path


def _figure(name, value):
    target = os.environ.get("EVALCORE_CAMPAIGN_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": value}) + "\n")


@pytest.fixture(params=["local", "s3"])
def store_root(request, tmp_path):
    """The same race on a local folder and on S3-compatible object storage (moto, 127.0.0.1):
    there the manifest and pointer are guarded by lease objects and conditional PUTs."""
    if request.param == "s3":
        return str(request.getfixturevalue("s3_store").root), SIZES["s3"]
    return tmp_path / "runs", SIZES["local"]


def test_concurrent_writers_and_reader(tmp_path, store_root):
    root, (n_import, n_live_batches, n_notes) = store_root
    store = RunStore(root)
    base = import_recorded(store, _answers(tmp_path / "base.jsonl", "base", n_import), name="base")
    first = score_run(store, base.run_id, metrics=METRICS, progress=False)
    go, stop = tmp_path / "go", tmp_path / "stop"

    def start(*args):
        return subprocess.Popen([sys.executable, "-c", WORKER, args[0], str(root), str(go), *map(str, args[1:])],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    reader = start("reader", stop)
    writers = [start("import", _answers(tmp_path / "a.jsonl", "a", n_import), "import-a"),
               start("import", _answers(tmp_path / "b.jsonl", "b", n_import), "import-b"),
               start("live", n_live_batches), start("notes", n_notes, "x"), start("notes", n_notes, "y"),
               start("rescore", base.run_id, ",".join(METRICS))]
    deadline = time.monotonic() + 60  # let every process finish importing, then release them together
    while len(list(tmp_path.glob("go.*.ready"))) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    outputs = []
    for proc in writers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    stop.touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err[-3000:]  # no exception, no invariant broken while reading
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["loops"] >= 2 and seen["files_read"] > 0

    # exact row counts at the end: nothing lost, nothing duplicated in the views
    counts = query_df(store, "SELECT run_id, (SELECT count(*) FROM responses r WHERE r.run_id = x.run_id) AS r, "
                             "(SELECT count(*) FROM questions q WHERE q.run_id = x.run_id) AS q, "
                             "(SELECT count(*) FROM metrics m WHERE m.run_id = x.run_id) AS m FROM runs x")
    by_run = {row.run_id: (row.r, row.q, row.m) for row in counts.itertuples()}
    ids = {outputs[0]["run_id"], outputs[1]["run_id"], base.run_id, "live-run"}
    assert set(by_run) == ids
    for run_id in (outputs[0]["run_id"], outputs[1]["run_id"]):
        assert by_run[run_id] == (n_import, n_import // 2, 0)
        assert seen["per_run"][run_id] == n_import
    n_live = 5 * n_live_batches
    assert by_run["live-run"] == (n_live, n_live, 0)
    assert by_run[base.run_id] == (n_import, n_import // 2, first.n_values)
    # compacted: the re-score replaced rows on disk too (one row per key, no part left behind)
    pointer = json.loads((store.root / base.run_id / "tables.json").read_text())
    assert pointer["rows"]["metrics"] == first.n_values
    assert not list((store.root / base.run_id / "parts").rglob("*.parquet"))
    assert outputs[5]["n_values"] == first.n_values == n_import * len(METRICS)

    # the manifest: every update of both processes survived the race
    live = store.manifest("live-run")
    assert live.counts["responses"] == n_live and live.status == "complete"
    for tag in "xy":  # each process's notes all there, in its order, interleaved with the other's
        assert [n for n in live.notes if n.startswith(tag)] == [f"{tag}{i}" for i in range(n_notes)]
    assert len(live.notes) == 2 * n_notes
    assert not list((store.root / ".staging").iterdir())
    _figure("concurrency_rows", {run_id[:12]: list(map(int, v)) for run_id, v in by_run.items()})
    _figure("concurrency_reader_loops", seen["loops"])
    _figure("concurrency_part_files_read", seen["files_read"])
