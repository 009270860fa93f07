"""A metric compared on no question says "not compared" wherever a comparison is shown
(issue 34, item 3, round 4).

`compare BASE DISJOINT --metrics token_f1 --markdown` (runs that share no question id) printed
"no significant difference" for token_f1, the text a CI job puts into $GITHUB_STEP_SUMMARY,
while the terminal left the verdict blank. A comparison on 0 pairs found nothing because it
looked at nothing: the verdict (evalcore.analysis.comparison.verdict, the one place its words are
decided) now has an outcome of its own for it, and every renderer — terminal, Markdown, JSON,
the HTML report, the forest plot, the Compare page — shows it. Real questions: SQuAD 2.0 dev.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.optional import requires

from evalcore.analysis.comparison import verdict as V
from evalcore.analysis.comparison.forest import forest_rows
from tests.test_gate_compared_nothing import _cli, _code, _import, _records

N = 10
WRONG = "no significant difference"


@pytest.fixture(scope="module")
def runs(shared_data, tmp_path_factory):
    """(root, ids): `base` and `other` answer the same questions with other ids (no pair);
    `f1_only` answers base's questions, scored on token_f1 alone (squad_em: 0 pairs)."""
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for p in data["data"][0]["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]][:N]
    root = tmp_path_factory.mktemp("nc") / "runs"
    folder = tmp_path_factory.mktemp("answers")
    renamed = [dict(r, question_id="other-" + r["question_id"]) for r in _records(qas)]
    return root, {"base": _import(root, folder, "base", _records(qas)),
                  "other": _import(root, folder, "other", renamed),
                  "f1_only": _import(root, folder, "f1_only", _records(qas, wrong_every=2), "--metrics", "token_f1")}


def test_the_verdict_has_an_outcome_for_no_pairs():
    table = pd.DataFrame([
        {"metric": "token_f1", "higher_is_better": True, "n_pairs": 0, "delta": float("nan"), "ci_low": float("nan"),
         "ci_high": float("nan"), "p_holm": float("nan"), "n_baseline": 10, "n_candidate": 10},
        {"metric": "squad_em", "higher_is_better": True, "n_pairs": 12, "delta": 0.0, "ci_low": -0.1, "ci_high": 0.1,
         "p_holm": 1.0, "n_baseline": 12, "n_candidate": 12, "sd_diff": 0.2, "span": 1.0}])
    lines = V.verdict_lines(table, "A", "B").set_index("metric")
    assert lines.loc["token_f1", "outcome"] == V.NOT_COMPARED == "not compared"
    assert lines.loc["token_f1", "verdict"].startswith("token_f1: not compared")
    assert WRONG not in lines.loc["token_f1", "verdict"]
    # the Holm family is the metrics compared: squad_em's sentence counts 1 tested metric
    assert lines.loc["squad_em", "outcome"] != V.NOT_COMPARED
    summary = V.verdict_summary(lines.reset_index(), table, "A", "B")
    assert "1 not compared" in summary and "of 1 tested metric" in summary, summary
    only = V.verdict_summary(V.verdict_lines(table.iloc[:1], "A", "B"), table.iloc[:1], "A", "B")
    assert "nothing compared" in only and "not compared" in only, only


def test_the_forest_plot_marks_it_not_compared():
    table = pd.DataFrame([{"metric": "token_f1", "higher_is_better": True, "n_pairs": 0, "delta": float("nan"),
                           "ci_low": float("nan"), "ci_high": float("nan"), "p_holm": float("nan"), "span": float("nan")}])
    rows = forest_rows(table, V.verdict_lines(table, "A", "B"))
    assert rows.loc[0, "shade"] == "not compared" and "not compared" in rows.loc[0, "label"]
    requires("plotly")
    from evalcore.analysis.charts.figures import forest_figure

    spec = forest_figure(rows).to_plotly_json()
    shown = [t for t in spec["data"] if rows.loc[0, "label"] in list(t.get("y", []))]
    assert shown and all(t["type"] != "bar" for t in shown)  # no CI bar for what was not compared
    assert any("not compared" in " ".join(map(str, t.get("text") or [])) for t in shown)


def test_markdown_terminal_and_json_say_not_compared(runs):
    root, ids = runs
    res = _cli(root, "compare", ids["base"], ids["other"], "--metrics", "token_f1", "--markdown")
    assert _code(res) == 0, res.output
    [row] = [line for line in res.stdout.splitlines() if "token\\_f1" in line]
    assert "not compared" in row and WRONG not in row, row
    res = _cli(root, "compare", ids["base"], ids["other"], "--metrics", "token_f1")
    assert _code(res) == 0, res.output
    assert "not compared" in res.stdout and WRONG not in res.stdout
    out = json.loads(_cli(root, "compare", ids["base"], ids["other"], "--metrics", "token_f1", "--json").stdout)
    assert out["metrics"][0]["outcome"] == "not compared"
    [verdict] = out["verdicts"].values()
    assert [line["outcome"] for line in verdict["lines"]] == ["not compared"]
    assert "nothing compared" in verdict["summary"]


def test_a_gated_metric_without_pairs_beside_a_compared_one(runs):
    """squad_em is gated but scored only for the baseline: its row says "not compared" beside
    token_f1's real verdict, and the gate fails on it."""
    root, ids = runs
    args = ["compare", ids["base"], ids["f1_only"], "--metrics", "token_f1", "--fail-on-regression", "squad_em"]
    res = _cli(root, *args, "--markdown")
    assert _code(res) == 1, res.output
    rows = {line.split("|")[2].strip(): line for line in res.stdout.splitlines() if line.startswith("| f1")}
    assert "not compared" in rows["squad\\_em"] and WRONG not in rows["squad\\_em"]
    assert "not compared" not in rows["token\\_f1"]
    out = json.loads(_cli(root, *args, "--json").stdout)
    outcome = {r["metric"]: r["outcome"] for r in out["metrics"]}
    assert outcome["squad_em"] == "not compared" and outcome["token_f1"] != "not compared"


def test_the_html_report_says_not_compared(runs, tmp_path):
    requires("plotly")
    root, ids = runs
    page = tmp_path / "r.html"
    res = _cli(root, "report", ids["base"], ids["other"], "--metrics", "token_f1", "-o", str(page))
    assert _code(res) == 0, res.output
    html = page.read_text(encoding="utf-8")
    assert "not compared" in html and WRONG not in html
    assert 'class="not-compared"' in html  # the verdict sentence, styled as such


def test_the_compare_page_says_not_compared(runs, monkeypatch):
    requires("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root, ids = runs
    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params.update({"sys": [f"{ids['base']}:reader", f"{ids['other']}:reader"], "tm": ["token_f1"]})
    at.run()
    assert not at.exception, at.exception
    said = [e.value for kind in (at.subheader, at.warning, at.info, at.success, at.error) for e in kind]
    assert any("nothing compared" in s for s in said) and any("not compared" in s for s in said), said
    assert not any(WRONG in s for s in said), said
