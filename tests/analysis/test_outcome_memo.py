"""failure_modes.outcome_counts keeps its last few count tables by the store's state token: a
page's answer classes, diagnosis and question list read one table, never a stale one, never shared.

(This memo, evalcore.analysis.read.recent_frames.RecentFrames, was checked through
correctness.outcome_frame, which nothing but tests called; the count table is what pages read.)"""

from __future__ import annotations

from evalcore.analysis.questions import failure_modes as FM
from evalcore.demo.synthetic import build_store


def test_one_frame_per_store_state_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    store = build_store(tmp_path / "runs", n_runs=1, n_questions=6)
    run = store.run_ids()[0]
    keys = (f"{run}:basic_search", f"{run}:local_search")
    built = []
    real = FM._outcome_counts
    monkeypatch.setattr(FM, "_outcome_counts", lambda *a: built.append(a[1:]) or real(*a))
    monkeypatch.setattr(FM, "_RECENT", type(FM._RECENT)())  # an empty memo: this test counts builds
    first = FM.outcome_counts(store, keys)
    first["n"] = -1  # changed by a caller
    again = FM.outcome_counts(store, keys)
    assert len(built) == 1, "the same store state and arguments: built once"
    assert not (again["n"] == -1).any(), "a caller's edits never reach another"
    FM.outcome_counts(store, keys[:1])
    assert len(built) == 2, "other arguments: another frame"
    token = store.state_token()
    monkeypatch.setattr(type(store), "state_token", lambda self: token + "-changed")
    FM.outcome_counts(store, keys)
    assert len(built) == 3, "a new store state: built anew"
