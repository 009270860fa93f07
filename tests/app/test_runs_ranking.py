"""The Runs page ranks only where ranking means something (issue 23, item 2): a 3-question run
is listed apart under "Too few questions to rank", a system with a majority of failed answers
is flagged with the first error, and the all-error system is not ranked above one that answers."""

from __future__ import annotations

import json
from pathlib import Path

from evalcore.scoring.importer import import_recorded
from evalcore.scoring.engine import score_run
from evalcore.store import RunStore

APP = Path(__file__).resolve().parents[2] / "app.py"
FAILURE = "HTTP 400 unknown method 'default'"


def _import(store, folder: Path, n, method, right=lambda i: True, error=None):
    folder.mkdir()
    rows = []
    for i in range(n):
        row = {"question_id": f"q{i}", "question": f"Colour of item {i}?", "ground_truth": f"item {i} is blue",
               "method": method, "latency_ms": 5.0 if error else 4000.0}
        row.update({"error": error, "error_kind": "http"} if error else
                   {"answer": f"item {i} is blue" if right(i) else "no idea"})
        rows.append(row)
    path = folder / "answers.jsonl"  # one dataset name: the runs are ranked together
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run_id = import_recorded(store, path, name=method).run_id
    score_run(store, run_id, metrics=["token_f1", "latency_ms", "weighted_score"])
    return run_id


def test_runs_page_lists_tiny_runs_apart_and_flags_failures(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    store = RunStore(tmp_path / "runs")
    _import(store, tmp_path / "a", 12, "one_right", right=lambda i: i == 0)
    _import(store, tmp_path / "b", 12, "default", error=FAILURE)
    _import(store, tmp_path / "c", 3, "lucky")
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    boards = [d.value for d in at.dataframe if "method" in d.value.columns]
    assert len(boards) == 2, [list(b.columns) for b in boards]
    ranked, unranked = boards
    assert list(ranked["method"]) == ["one_right", "default"]  # one correct answer beats 12 errors
    assert ranked.set_index("method").loc["default", "weighted_score"] == 0.0
    assert ranked.set_index("method").loc["default", "failure_flag"] == f"12/12 failed: {FAILURE}"
    assert ranked.set_index("method").loc["default", "error_rate"] == 1.0
    assert list(unranked["method"]) == ["lucky"] and list(unranked["not ranked"]) == ["too few questions to rank (n=3)"]
    assert "Too few questions to rank" in [h.value for h in at.subheader]
    assert any("failed on more than half" in e.value for e in at.error)
    # both rules are visible by default: the flag in full under the red box (a table cell would
    # cut it) with the system's errors in the default columns; the unranked, apart under their heading
    frames = [d for d in at.dataframe if "method" in d.value.columns]
    assert "error_rate" in frames[0].proto.column_order
    assert list(frames[1].proto.column_order)[:2] == ["system", "weighted_score"]  # the heading says why
    assert "weighted_score_ci95" not in frames[1].proto.column_order  # never shown below 10 questions
    assert any(t.value.endswith(f"/ default: 12/12 failed: {FAILURE}") for t in at.text)
    at.selectbox(key="url_sort").select("weighted_score_ci_low").run()
    assert not at.exception, at.exception
    assert [d.value for d in at.dataframe if "method" in d.value.columns][1]["method"].tolist() == ["lucky"]
