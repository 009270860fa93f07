"""first_wide equals pivot_table(aggfunc='first', dropna=False) on duplicated, NaN-holding rows."""

import numpy as np
import pandas as pd

from evalcore.analysis.read.wide import first_wide


def test_first_wide_matches_pivot_table_first():
    rng = np.random.default_rng(0)
    n = 400
    rows = pd.DataFrame({"system": rng.choice(["r:a", "r:b"], n), "question_id": rng.choice([f"q{i}" for i in range(40)], n),
                         "metric": rng.choice(["m1", "m2", "m3"], n), "value": rng.random(n)})
    rows.loc[rng.random(n) < 0.3, "value"] = np.nan  # NaNs, and duplicated keys with NaN first
    want = rows.pivot_table(index=["system", "question_id"], columns="metric", values="value", aggfunc="first",
                            dropna=False)
    want.columns.name = None
    got = first_wide(rows, ["system", "question_id"]).reindex(want.index)
    pd.testing.assert_frame_equal(got[list(want.columns)], want, check_dtype=False)
