"""correctness.outcome_frame keeps its last few frames by the store's state token: a page's
answer classes, diagnosis and question list read one frame, never a stale one, never shared."""

from __future__ import annotations

from evalcore.analysis.read import correctness as CO
from evalcore.demo.synthetic import build_store


def test_one_frame_per_store_state_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    store = build_store(tmp_path / "runs", n_runs=1, n_questions=6)
    run = store.run_ids()[0]
    keys = (f"{run}:basic_search", f"{run}:local_search")
    built = []
    real = CO._outcome_frame
    monkeypatch.setattr(CO, "_outcome_frame", lambda *a: built.append(a[1:]) or real(*a))
    monkeypatch.setattr(CO, "_RECENT", type(CO._RECENT)())  # an empty memo: this test counts builds
    first = CO.outcome_frame(store, keys)
    first["error"] = "changed by a caller"
    again = CO.outcome_frame(store, keys)
    assert len(built) == 1, "the same store state and arguments: built once"
    assert not (again["error"] == "changed by a caller").any(), "a caller's edits never reach another"
    CO.outcome_frame(store, keys, extra=("faithfulness",))
    assert len(built) == 2, "other arguments: another frame"
    token = store.state_token()
    monkeypatch.setattr(type(store), "state_token", lambda self: token + "-changed")
    CO.outcome_frame(store, keys)
    assert len(built) == 3, "a new store state: built anew"
