"""The dashboard's persisted snapshot (<store>/_shared/app_cache/snapshot.duckdb): reused
across restarts, re-read per changed run only, and never more than a cache (deleting,
damaging, outdating or locking it changes nothing but speed)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from evalcore.ui.interim import Interim
from evalcore.schemas import MetricValue
from evalcore.ui import data as D
from evalcore.ui import snapshot as S
from evalcore.ui import snapshot_db
from evalcore.ui.synthetic import build_store

METRICS = ["faithfulness", "token_f1"]


@pytest.fixture
def small_store(tmp_path):
    store = build_store(tmp_path / "runs", n_runs=3, n_questions=12, n_metrics=12)  # includes token_f1
    yield store
    S.forget(store)


def board(store):
    return D.leaderboard(S.get_snapshot(store), METRICS).sort_values(["run_id", "method"]).reset_index(drop=True)


def store_files(store) -> dict[str, int]:
    """Every file of the store outside the cache, with its mtime: what the cache must never touch."""
    cache = S.cache_path(store).parent
    return {str(p): p.stat().st_mtime_ns for p in Path(store.root).rglob("*")
            if p.is_file() and cache not in p.parents}


def test_a_restart_reuses_the_cache_without_reading_the_store(small_store, monkeypatch):
    first = board(small_store)
    snap = S.get_snapshot(small_store)
    assert snap.persisted and not snap.loaded_from_cache and S.cache_path(small_store).is_file()
    S.forget(small_store)  # what a new server process sees

    def no_store_reads(store):
        raise AssertionError("an unchanged store must be served from the cache")

    monkeypatch.setattr(snapshot_db, "open_db", no_store_reads)
    again = S.get_snapshot(small_store)
    assert again.loaded_from_cache and again.refresh() == []
    assert board(small_store).equals(first)


def test_only_changed_runs_are_reread_after_a_restart(small_store):
    before = board(small_store)
    S.forget(small_store)
    run_a, run_b, run_c = small_store.run_ids()
    qid = S.get_snapshot(small_store).df("SELECT min(question_id) AS q FROM metrics WHERE run_id = ?",
                                         [run_b])["q"].iloc[0]
    S.forget(small_store)
    # A re-score of one answer (a newer value wins in the store's views) and a removed run.
    small_store.open_run(run_b).write_metrics([MetricValue(run_id=run_b, method="local_search", question_id=qid,
                                                           metric="token_f1", value=0.123456, group="lexical")])
    small_store.delete_run(run_c)
    snap = S.Snapshot(small_store, path=S.cache_path(small_store))
    assert snap.loaded_from_cache
    assert snap.refresh() == [run_b]
    assert snap.df("SELECT count(*) AS n FROM metrics WHERE run_id = ?", [run_c])["n"].iloc[0] == 0
    got = snap.df("SELECT value FROM metrics WHERE run_id = ? AND question_id = ? AND method = 'local_search' "
                  "AND metric = 'token_f1'", [run_b, qid])["value"].tolist()
    assert got == [0.123456]
    # The narrowed re-read keeps the store's de-duplication: same rows as open_db's views.
    from evalcore.queries import query_df

    for table in S.RUN_TABLES:
        sql = f"SELECT * FROM {table} WHERE run_id = ? ORDER BY ALL"
        mine, store_view = snap.df(sql, [run_b]), query_df(small_store, sql, [run_b])
        assert len(mine) == len(store_view) and mine.astype(str).equals(store_view.astype(str)), table
    snap.con.close()
    after = board(small_store)
    assert set(after["run_id"]) == {run_a, run_b}
    same = before[before.run_id == run_a].reset_index(drop=True)
    assert after[after.run_id == run_a].reset_index(drop=True).equals(same)


def test_deleting_the_cache_is_harmless(small_store):
    first = board(small_store)
    files = store_files(small_store)
    S.clear_cache(small_store)
    assert not S.cache_path(small_store).exists()
    assert board(small_store).equals(first)
    assert not S.get_snapshot(small_store).loaded_from_cache
    assert store_files(small_store) == files


def test_an_outdated_or_damaged_cache_is_rebuilt(small_store):
    first = board(small_store)
    S.get_snapshot(small_store).con.execute("UPDATE _meta SET value = 'older' WHERE key = 'fingerprint'")
    S.forget(small_store)
    snap = S.get_snapshot(small_store)
    assert snap.persisted and not snap.loaded_from_cache
    assert board(small_store).equals(first)
    S.forget(small_store)
    S.cache_path(small_store).write_bytes(b"not a duckdb file" * 100)
    snap = S.get_snapshot(small_store)
    assert snap.persisted and not snap.loaded_from_cache
    assert board(small_store).equals(first)


def test_a_cache_held_by_another_process_falls_back_to_memory(small_store):
    first = board(small_store)
    S.forget(small_store)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\n"
                               f"con = duckdb.connect({str(S.cache_path(small_store))!r})\n"
                               "print('held', flush=True)\ntime.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        snap = S.get_snapshot(small_store)
        assert not snap.persisted and "in use" in snap.note
        assert board(small_store).equals(first)
    finally:
        holder.kill()
        holder.wait()


def test_no_cache_folder_is_created_for_a_missing_store(tmp_path):
    from evalcore.store import RunStore

    store = RunStore(tmp_path / "nowhere")
    snap = S.get_snapshot(store)
    assert not snap.persisted and not (tmp_path / "nowhere").exists()
    S.forget(store)


def test_memoised_results_survive_a_restart_and_expire_with_their_run(small_store):
    import pandas as pd

    run = small_store.run_ids()[0]
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"metric": ["token_f1"], "p_holm": [0.04], "significant": [True]}), "note"

    first = S.get_snapshot(small_store).memo("significance", [run], ["a", "b"], compute)
    S.forget(small_store)
    again = S.get_snapshot(small_store).memo("significance", [run], ["a", "b"], compute)
    assert calls == [1] and again[1] == "note"
    pd.testing.assert_frame_equal(again[0], first[0])
    S.get_snapshot(small_store).memo("significance", [run], ["other", "params"], compute)
    assert calls == [1, 1]
    small_store.open_run(run).write_metrics([MetricValue(run_id=run, method="local_search", question_id="x",
                                                         metric="token_f1", value=0.5, group="lexical")])
    S.get_snapshot(small_store).memo("significance", [run], ["a", "b"], compute)  # the run changed
    assert calls == [1, 1, 1]


def canon(df: pd.DataFrame) -> pd.DataFrame:
    """Values as text, floats rounded to 12 significant digits: an aggregate summed in
    another order (the Interim aggregates straight from the store) differs in the last bit."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(lambda v: f"{v:.12g}")
    return out.astype(str)


def test_the_interim_gives_the_snapshots_numbers_while_it_builds(small_store):
    """No cache: pages read an Interim (only the runs a query names, stats straight from the
    store) while the snapshot builds in the background; every page query must agree."""
    from evalcore.ui import data_annotate as A
    from evalcore.ui import data_charts as G
    from evalcore.ui import data_compare as C

    S.clear_cache(small_store)
    interim = Interim(small_store)
    snap = S.get_snapshot(small_store)
    run_a, run_b, _ = small_store.run_ids()
    a, b = D.System(run_a, "local_search"), D.System(run_b, "local_search")
    keys = [a.key, b.key, f"{run_a}:basic_search"]
    qid = snap.df("SELECT min(question_id) AS q FROM questions WHERE run_id = ?", [run_a])["q"].iloc[0]
    queries = {
        "leaderboard": lambda s: D.leaderboard(s, METRICS + ["weighted_score", "answer_correctness"]),
        "systems": lambda s: D.systems(s),
        "metric_names": lambda s: pd.DataFrame({"m": D.metric_names(s, [run_b])}),
        "question_table": lambda s: D.question_table(s, D.QuestionFilter(run_a, metric="token_f1", min_value=0.2), METRICS),
        "question_detail": lambda s: pd.concat(D.question_detail(s, run_a, qid), names=["part"]),
        "delta": lambda s: C.delta_table(s, a, b),
        "labels": lambda s: G.label_counts(s, keys, "grade"),
        "facet": lambda s: G.metric_by_facet(s, keys, "faithfulness", "category"),
        "latency": lambda s: G.latency_cost(s, keys),
        "frontier": lambda s: G.frontier_points(s, keys, "faithfulness"),
        "queue": lambda s: A.queue(s, run_b, "claim", None, [], limit=50),
        "systems_of_a_run": lambda s: D.systems(s, [run_a]),
        "all_metric_names": lambda s: pd.DataFrame({"m": D.metric_names(s)}),
        "leaderboard_filtered": lambda s: D.leaderboard(s, METRICS, search="local", statuses=["finished", "done"]),
        "facet_values": lambda s: pd.DataFrame({k: [v] for k, v in D.facet_values(s, run_a).items()}),
        "paired": lambda s: C.paired_values(s, a, b, METRICS),
        "changed": lambda s: C.changed_questions(s, a, b, "token_f1", "improved", True),
        "answers": lambda s: C.answers(s, [a, b], qid),
        "facet_means": lambda s: G.facet_means(s, keys, "faithfulness", "question_type"),
        "classes": lambda s: G.label_counts(s, keys, "answer_class"),
        "item_context": lambda s: A.item_context(s, run_a, "local_search", qid),
    }
    for name, query in queries.items():
        mine, built = query(interim), query(snap)
        assert len(built) > 0 or name in ("queue", "leaderboard_filtered", "changed", "classes"), name
        key = list(built.columns)
        pd.testing.assert_frame_equal(canon(mine).sort_values(key).reset_index(drop=True),
                                      canon(built).sort_values(key).reset_index(drop=True), obj=name)
    interim.close()


def test_a_first_start_without_cache_builds_in_the_background(small_store):
    S.clear_cache(small_store)
    view = S.get_view(small_store)
    assert isinstance(view, Interim)
    before = D.leaderboard(view, METRICS)
    S.wait_built(small_store)
    assert not S.building(small_store)
    snap = S.get_view(small_store)
    assert isinstance(snap, S.Snapshot) and snap.persisted and S.cache_path(small_store).is_file()
    after = D.leaderboard(snap, METRICS)
    key = ["run_id", "method"]
    pd.testing.assert_frame_equal(canon(before.sort_values(key).reset_index(drop=True)),
                                  canon(after.sort_values(key).reset_index(drop=True)))
