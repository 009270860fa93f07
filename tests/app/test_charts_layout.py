"""Charts at 1400x1000: no rotated, clipped or overlapping labels; latency on a log axis; an
unknown cost said to be unknown; the class bars say why their "correct" differs from the diagnosis."""

from __future__ import annotations

import json
import math

import pandas as pd
from streamlit.testing.v1 import AppTest


def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def _class_bars():
    import pandas as pd

    from evalcore.ui.charts import CLASSES, _stacked

    df = pd.DataFrame({"system": ["a_very_long_method_name_one"] * 3 + ["llm_with_corrections"] * 2,
                       "label": ["CORRECT", "WRONG", "DONT_KNOW", "CORRECT", "ERROR"],
                       "n": [97, 2, 1, 50, 50], "share": [0.97, 0.02, 0.01, 0.5, 0.5]})
    _stacked(df, CLASSES, "Correct / wrong / don't know", "", "class")


def test_share_bars_are_horizontal_fixed_to_100_percent_with_counts_inside():
    at = AppTest.from_function(_class_bars).run()
    assert not at.exception
    fig = _figures(at)[0]
    bars = [t for t in fig["data"] if t["type"] == "bar"]
    assert bars and all(t["orientation"] == "h" and t["textposition"] == "inside" for t in bars)
    layout = fig["layout"]
    assert layout["xaxis"]["range"] == [0, 1]  # nothing drawn past 100%
    assert layout["uniformtext"]["mode"] == "hide"  # a count too wide for its segment is hidden, not clipped
    assert "tickangle" not in layout.get("xaxis", {}) and layout["yaxis"]["automargin"] is True
    # each system on its own row: the y axis holds the (long) system names, not the x axis
    assert {y for t in bars for y in t["y"]} == {"a_very_long_method_name_one", "llm_with_corrections"}


def _pareto(cost: list[float]):
    import pandas as pd

    from evalcore.ui.charts import _pareto

    points = pd.DataFrame({"system": ["r:llm_with_corrections", "r:local_search", "r:basic_search"],
                           "quality": [0.8, 0.7, 0.6], "cost_per_query_usd": cost})
    _pareto(points, "cost_per_query_usd", "cost per query (USD)", "faithfulness",
            {"r:llm_with_corrections": "llm_with_corrections", "r:local_search": "local_search",
             "r:basic_search": "basic_search"})


def test_pareto_names_points_in_the_legend_and_hover_not_beside_them():
    at = AppTest.from_function(_pareto, args=([0.03, 0.04, 0.001],)).run()
    assert not at.exception
    fig = _figures(at)[0]
    assert not [t for t in fig["data"] if "text" in t.get("mode", "") or t.get("text")]
    names = {t["name"] for t in fig["data"]}
    # one legend entry per system; the cheapest (basic_search) and the best (llm_with_corrections)
    # are on the front and starred
    assert {"llm_with_corrections ★", "local_search", "basic_search ★"} <= names
    assert all(t.get("showlegend", True) for t in fig["data"])
    assert fig["layout"]["legend"]["orientation"] == "h"  # under the chart: never clipped at its side
    hovers = " ".join(t.get("hovertemplate", "") for t in fig["data"])
    assert all(n in hovers for n in ("llm_with_corrections", "local_search", "basic_search"))


def test_pareto_with_every_cost_unknown_says_unknown():
    nan = math.nan
    at = AppTest.from_function(_pareto, args=([nan, nan, nan],)).run()
    assert not at.exception and "unknown" in _infos(at) and "recorded" not in _infos(at)


def _operations(cost: list[float], latency: list[float]):
    import pandas as pd

    from evalcore.ui.charts import latency_cost_view

    latency_cost_view(pd.DataFrame({"system": ["a", "a", "b", "b"], "latency_ms": latency, "cost_usd": cost}))


def test_latency_is_on_a_log_axis_with_a_note_and_unknown_cost_is_not_called_unpaid():
    nan = math.nan
    at = AppTest.from_function(_operations, args=([nan] * 4, [300.0, 500.0, 400.0, 90000.0])).run()
    assert not at.exception
    fig = _figures(at)[0]
    assert fig["layout"]["xaxis"]["type"] == "log" and all(t["orientation"] == "h" for t in fig["data"])
    assert any("Log scale" in c.value for c in at.caption)
    infos = _infos(at)
    assert "unknown" in infos.lower() and "no judge was paid" not in infos
    # a real zero cost still reads as not recorded; a partly unknown cost draws the known answers
    at = AppTest.from_function(_operations, args=([0.0] * 4, [300.0, 500.0, 400.0, 900.0])).run()
    assert "No cost recorded" in _infos(at)
    at = AppTest.from_function(_operations, args=([0.01, nan, 0.02, 0.03], [300.0, 500.0, 400.0, 900.0])).run()
    assert len(_figures(at)) == 2 and any("1 answer(s) of unknown cost" in c.value for c in at.caption)


def test_overview_says_why_answer_classes_and_diagnosis_count_correct_differently(make_app, app_store):
    from evalcore.analysis.charts import distributions as G
    from evalcore.analysis.questions import failure_modes as FM

    run = sorted(r for r in app_store.run_ids() if r.startswith("synthetic"))[0]
    keys = (f"{run}:local_search", f"{run}:basic_search")
    differ = G.correct_differences(G.label_counts(app_store, keys, "answer_class"), FM.failure_modes(app_store, keys))
    assert differ["correct_abstention"] > 0  # the synthetic store has abstentions on unanswerable questions
    at = make_app("charts", sys=list(keys), section="overview")
    assert not at.exception
    why = [c.value for c in at.caption if c.value.startswith("Why these counts differ")]
    assert why and f"{differ['correct_abstention']} abstention(s)" in why[0]
