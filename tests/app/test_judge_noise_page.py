"""The Compare page shows the judge's noise when a side was scored with `--repeats K` (issue 36
item 2), the numbers `evalcore compare` prints, and nothing of it for runs with one verdict."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.analysis.comparison.judge_noise import pair_noise
from evalcore.store import RunStore
from tests.analysis.test_judge_noise import _write
from tests.app.conftest import ROOT


@pytest.mark.parametrize("k", [1, 3])
def test_compare_page_shows_judge_noise_only_for_repeated_verdicts(tmp_path, monkeypatch, k):
    from streamlit.testing.v1 import AppTest

    rng = np.random.default_rng(2)
    truth = rng.uniform(0.2, 0.8, 10)
    store = RunStore(tmp_path / "runs")
    _write(store, "r", {m: [list(np.clip(t + s + rng.normal(0, 0.1, k), 0, 1)) for t in truth]
                        for m, s in (("a", 0.0), ("b", 0.1))})
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.query_params.update(sys=["r:a", "r:b"], tm=["answer_correctness"])
    at.run()
    assert not at.exception
    headers = [s.value for s in at.subheader]
    tables = [d.value for d in at.dataframe if "judge_share" in d.value.columns]
    if k == 1:
        assert "Judge noise" not in headers and not tables
        return
    assert "Judge noise" in headers and len(tables) == 1
    (expected,) = pair_noise(store, "r:a", "r:b", ["answer_correctness"])
    row = tables[0].iloc[0]
    assert row["judge_share"] == pytest.approx(expected["judge_share"])
    assert row["noise_delta"] == pytest.approx(expected["noise_delta"])
