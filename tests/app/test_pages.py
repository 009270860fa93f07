"""AppTest of every page through the real entry point (app.py + st.navigation): rendering,
deep links from the URL, bad URL values, and untrusted text staying inert."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.analysis.questions.question_drilldown import question_detail
from evalcore.ui.entry import PAGES as ENTRY_PAGES
from tests.app.claims_store import claims_store


PAGES = [module for module, _, _ in ENTRY_PAGES]  # the one page list: evalcore.ui.entry.PAGES
TITLES = {module: title for module, title, _ in ENTRY_PAGES}


def texts(at) -> list[str]:
    return [t.value for t in at.text]


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def shown(markdown_source: str) -> str:
    """What an escaped Markdown source displays: each backslash-escaped character as itself."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown_source).replace("\u2060", "")  # escapes; autolink breakers


def synthetic_runs(store) -> list[str]:
    return [r for r in store.run_ids() if r.startswith("synthetic-")]


def test_entry_point_opens_the_leaderboard(make_app, app_store):
    at = make_app()
    assert not at.exception
    assert at.title[0].value == "Runs"
    board = at.dataframe[0].value
    assert set(synthetic_runs(app_store)) <= set(board["run_id"])
    assert {"cost_per_query_usd", "latency_p50_ms", "judges", "n"} <= set(board.columns)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_exception(make_app, page):
    at = make_app(page)
    assert not at.exception, at.exception
    assert at.title[0].value == TITLES[page]


def test_runs_search_filters_and_bad_sort_is_rejected(make_app, app_store):
    run = synthetic_runs(app_store)[1]
    at = make_app("runs", q=run, sort="drop table runs")
    assert not at.exception
    assert set(at.dataframe[0].value["run_id"]) == {run}
    assert any("sort" in w for w in warnings(at))


def test_leaderboard_columns_read_system_then_quality_then_cost(make_app):
    """The default columns (issue 24, item 4): which system, how good and how surely, on how many
    questions with how many errors, judged by whom (one short label), the picked metrics, cost
    and latency — the rest is one pick away ("More columns") and in the CSV."""
    import json

    at = make_app("runs", cols=["faithfulness", "token_f1"])
    frame = at.dataframe[0]
    shown = list(frame.proto.column_order)
    assert shown == ["system", "weighted_score", "weighted_score_ci95", "n", "error_rate", "judge", "faithfulness",
                     "token_f1", "cost_per_query_usd", "latency_p50_ms"]
    board = frame.value
    assert set(board["judge"]) == {"heuristic (word overlap)"}  # not ten prompt ids per row
    assert board["judges"].str.contains("heuristic:synthetic/").all()  # the full ids are kept (CSV, details)
    assert (board["system"] == board["name"] + " / " + board["method"]).all()
    config = json.loads(frame.proto.columns)
    assert config["n"]["type_config"]["format"] == "%d"  # counts are integers
    at = make_app("runs", cols=["faithfulness"], more=["run_id", "n_errors"])
    assert list(at.dataframe[0].proto.column_order)[-2:] == ["run_id", "n_errors"]


def test_leaderboard_means_match_the_store_views(app_store):
    """The run summaries written at compaction agree with a direct query on the metric rows."""
    from evalcore.analysis.runs.leaderboard import leaderboard
    from evalcore.store import query_df

    board = leaderboard(app_store, ("faithfulness",))
    direct = query_df(app_store, """SELECT run_id, method, avg(value) AS m FROM metrics
                                    WHERE metric = 'faithfulness' AND NOT isnan(value) GROUP BY ALL""")
    merged = board.merge(direct, on=["run_id", "method"])
    assert len(merged) == len(direct) > 0
    assert (merged["faithfulness"] - merged["m"]).abs().max() < 1e-12
    # the ± is half of the CI every mean gets (means.summarize: one definition)
    from evalcore.analysis.runs.means import summarize

    checked = 0
    for row in board.dropna(subset=["weighted_score_ci95"]).itertuples():
        s = summarize(app_store, row.run_id, methods=[row.method], metrics=["weighted_score"]).iloc[0]
        assert row.weighted_score_ci95 == pytest.approx((s.ci_high - s.ci_low) / 2, abs=1e-12)
        assert (row.weighted_score_ci_low, row.weighted_score_ci_high) == pytest.approx((s.ci_low, s.ci_high))
        checked += 1
    assert checked > 0


def _meta(at) -> str:
    return next(t for t in texts(at) if t.startswith("question_id: "))


def test_questions_deep_link_and_next_previous(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, method="local_search", i="3")
    assert not at.exception
    assert _meta(at).startswith("question_id: q00003")
    assert at.query_params["i"] == "3" and at.query_params["qid"] == "q00003"
    next_button = next(b for b in at.button if b.label.startswith("Next"))
    next_button.click().run()
    assert at.query_params["i"] == "4" and _meta(at).startswith("question_id: q00004")
    prev_button = next(b for b in at.button if b.label.startswith("Previous"))
    prev_button.click().run()
    assert at.query_params["i"] == "3"
    # the picker shows the question's text, not only its id
    picker = at.selectbox(key="q_index")
    assert picker.format_func(3).startswith("4/24 · q00003 · ") and len(picker.format_func(3)) > 20


def _html_texts(at) -> list[str]:
    """The text of each st.html block as a reader sees it (tags dropped, entities decoded)."""
    import html
    import re

    return [html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", h.proto.body, flags=re.S)) for h in at.get("html")]


def test_questions_side_by_side_with_claims_contexts_and_judge(make_app, app_store):
    """One question, every method in its own column: answer, key scores in importance order,
    every claim in full with its verdict and reason, contexts with relevance verdicts, one short
    judge badge (full prompt ids in an expander), raw calls."""
    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, qid="q00002")
    assert not at.exception
    heads = [h.value for h in at.html if 'class="ec-heading"' in h.value]  # names are data: inert_html
    assert [h.rsplit("</h4>", 1)[0].rsplit(">", 1)[1] for h in heads] == \
        ["basic&#95;search", "local&#95;search"]  # both methods, one column each
    assert at.query_params.get("layout") is None  # two methods: side by side is the default
    scores = [d.value for d in at.dataframe if list(d.value.columns) == ["metric", "value", "label", "basis"]]
    assert len(scores) == 2
    assert set(scores[0].loc[scores[0].metric == "faithfulness", "basis"]) == {"judge"}
    assert set(scores[0]["basis"]) <= {"judge", "gold passages", "computed"}
    assert scores[0]["metric"].iloc[0] in ("answer_correctness", "factual_accuracy", "answer_class", "token_f1")
    assert list(scores[0]["metric"]).index("faithfulness") < list(scores[0]["metric"]).index("context_precision")
    detail = question_detail(app_store, run, "q00002")
    claims = detail["claims"][detail["claims"].method == "basic_search"]
    shown_html = "\n".join(_html_texts(at))
    for c in claims.itertuples():  # every claim and reason in full, numbered, with its verdict
        verdict = "supported" if c.verdict == "supported" else "not supported"
        assert f"{c.idx + 1} · {verdict} {c.text}" in shown_html and f"Judge's reason: {c.reason}" in shown_html
    verdicts = detail["contexts"][(detail["contexts"].method == "basic_search")]
    for v in verdicts.itertuples():  # each context with the judge's relevance verdict and reason
        assert f"Rank {v.rank} · judge: {v.verdict}" in shown_html and v.reason in shown_html
    # one short judge badge per method; the heuristic one explains itself on hover
    badges = [m.value for m in at.markdown if "badge[" in m.value and "heuristic" in m.value]
    assert len(badges) == 2 and all("heuristic \\(word overlap\\)" in b for b in badges)
    ids = [e for e in at.expander if e.label.startswith("Judge prompt ids")]
    assert len(ids) == 2 and ids[0].text[0].value == "heuristic:synthetic/synthetic@1"
    raw = next(e for e in at.expander if e.label.startswith("Raw judge calls"))
    assert not raw.code, "drawn only when opened"
    at.session_state["raw_calls"] = True
    at.run()
    raw = next(e for e in at.expander if e.label.startswith("Raw judge calls"))
    assert any("Judge:" in c.value for c in raw.code)  # the stored judge request, one click away


def test_questions_marks_claims_and_cited_evidence(make_app, tmp_path, monkeypatch):
    """A claim found in the answer is marked with its verdict; the sentence of the passage the
    judge cited is marked in that passage and quoted under the claim with its shared words."""
    store, run = claims_store(tmp_path / "runs")
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = make_app("questions", run=run, qid="q1")
    assert not at.exception
    bodies = [h.proto.body for h in at.get("html")]
    answer = next(b for b in bodies if "Nile" in b and "mark class=\"supported\"" in b)
    assert answer.count("<mark") == 2 and 'class="unsupported"' in answer
    claims_block = next(b for b in bodies if "Judge&#39;s reason" in b)
    assert "Passage rank 2, cited by the judge" in claims_block and 'class="match"' in claims_block
    ctx = next(b for b in bodies if "Rank 2" in b)
    assert ctx.count('<mark class="cited"') == 1
    # a model judge's badge is the model's name; its prompt ids one click away
    badges = [shown(m.value) for m in at.markdown if m.value.startswith(":blue-badge[")]
    assert badges == [":blue-badge[:material/gavel: claude-haiku-4-5]"] * 2
    ids = next(e for e in at.expander if e.label.startswith("Judge prompt ids"))
    assert ids.text[0].value == "anthropic:claude-haiku-4-5/context_review@1"


def test_questions_grid_colours_and_opens_a_row(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, view="grid", gm="token_f1")
    assert not at.exception
    grid = next(d.value for d in at.dataframe if "spread" in d.value.columns)
    assert {"basic_search", "local_search"} <= set(grid.columns) and len(grid) == 24
    at.selectbox(key="url_rows").select("only rows where the methods differ").run()
    assert at.query_params["rows"] == "only rows where the methods differ"
    differ = next(d.value for d in at.dataframe if "spread" in d.value.columns)
    assert (differ["spread"] > 0).all() and len(differ) <= 24


def test_questions_filter_unsupported_claims_and_sort_by_delta(make_app, app_store):
    from evalcore.analysis.questions.question_drilldown import question_deltas, questions_with_unsupported_claims

    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, view="list", verdict="answers with an unsupported claim")
    assert not at.exception
    flagged = set(questions_with_unsupported_claims(app_store, run)["question_id"])
    assert any(t.startswith(f"{len(flagged)} questions match") for t in texts(at))
    at = make_app("questions", run=run, dm_sort="token_f1", da="basic_search", db="local_search")
    assert not at.exception
    first = question_deltas(app_store, run, "token_f1", "basic_search", "local_search")["question_id"].iloc[0]
    assert _meta(at).startswith(f"question_id: {first}")  # the biggest change first


def test_questions_rejects_bad_url_values(make_app):
    at = make_app("questions", run="../../etc", method="nope", i="abc", metric="x; drop", cat="zzz")
    assert not at.exception
    joined = " ".join(warnings(at))
    for param in ("run", "method", "i", "metric", "cat"):
        assert f"{param}=" in joined


def test_untrusted_answer_is_plain_text_not_markdown(make_app, app_store, hostile_text):
    HOSTILE = hostile_text
    hostile_run = next(r for r in app_store.run_ids() if r.startswith("hostile"))
    at = make_app("questions", run=hostile_run, i="0")
    assert not at.exception
    assert HOSTILE in _html_texts(at)  # shown as exactly its characters...
    body = next(h.proto.body for h in at.get("html") if "BOLD" in h.proto.body)
    for raw in ("<script", "<b>", "**", "[link](", "http://"):  # ...with none of them left as syntax
        assert raw not in body
    assert not any("<script>" in m.value or "**BOLD**" in m.value for m in at.markdown)
    assert not any("<script>" in str(getattr(c, "value", "")) for c in at.caption)


def test_compare_table_counts_and_diff(make_app, app_store):
    a, b = synthetic_runs(app_store)
    at = make_app("compare", sys=[f"{a}:local_search", f"{b}:local_search"], cm="token_f1", out="improved")
    assert not at.exception
    at.session_state["all_metrics"] = True  # the full table is drawn when its expander opens
    at.run()
    table = next(d.value for d in at.dataframe if "p_holm" in d.value.columns)
    row = table[table.metric == "token_f1"].iloc[0]
    assert row.improved + row.regressed + row.unchanged + row.missing == 24
    assert abs(row.delta - (row.mean_cand - row.mean_base)) < 1e-9
    tested = table[table.metric.isin(["faithfulness", "factual_accuracy"])]
    assert tested["p_holm"].notna().all(), "stats module present: Holm p-values expected"
    assert (tested["ci_low"] <= tested["delta"]).all() and (tested["delta"] <= tested["ci_high"]).all()
    assert any(t.startswith(f"{int(row.improved)} questions improved") for t in texts(at))
    assert any("[-" in t or "{+" in t for t in texts(at))  # the word diff, as plain text
    # Tested metrics come first and their effect, CI and p precede the counts.
    assert set(table.metric.iloc[:2]) <= set(table.metric[table.p_holm.notna()])
    assert table.p_holm.notna().tolist() == sorted(table.p_holm.notna().tolist(), reverse=True)
    cols = list(table.columns)
    assert cols.index("delta") < cols.index("ci_low") < cols.index("p_holm") < cols.index("improved")


def test_compare_question_by_question_is_drawn_when_opened_or_linked(make_app, app_store):
    """Closed on a plain visit (nothing of it is computed), open from a count link (?cm=&out=)
    and when the reader opens it."""
    a, b = synthetic_runs(app_store)
    systems = [f"{a}:local_search", f"{b}:local_search"]
    at = make_app("compare", sys=systems)
    assert not at.exception
    assert not any("questions improved" in t or "questions regressed" in t for t in texts(at))
    assert "url_cq" not in [s.key for s in at.selectbox]
    at.session_state["by_question"] = True  # the reader opens it
    at.run()
    assert any(" questions regressed on " in t for t in texts(at)), "the default outcome's list"
    linked = make_app("compare", sys=systems, cm="token_f1", out="improved")
    assert any(t.endswith("questions improved on token_f1") or " questions improved on token_f1 · " in t
               for t in texts(linked))


# The verdict's sentences are boxes coloured by outcome: success = better, error = worse,
# warning = not significant after Holm / too few questions, info = no significant difference.
_BOX_OUTCOMES = {"success": {"better"}, "error": {"worse"}, "warning": {"not significant", "too few questions"},
                 "info": {"no significant difference"}}


def verdict_sentences(at) -> list[tuple[set[str], str]]:
    """(possible outcomes, sentence as displayed) of every verdict box (comparability warnings
    and empty states are not verdict sentences: they do not start with `metric:`)."""
    import re

    out = []
    for kind, outcomes in _BOX_OUTCOMES.items():
        for box in getattr(at, kind):
            text = shown(box.value)
            if re.match(r"^[\w@.]+: ", text) and " · n = " in text:
                out.append((outcomes, text))
    return out


def test_compare_verdict_says_who_wins_in_words(make_app, app_store):
    """The verdict block names the better system per tested metric, in the metric's direction,
    with its CI and Holm p, and agrees with the statistics table."""
    run = synthetic_runs(app_store)[0]
    at = make_app("compare", sys=[f"{run}:basic_search", f"{run}:local_search"], tm=["faithfulness", "token_f1"])
    assert not at.exception
    lines = verdict_sentences(at)
    at.session_state["all_metrics"] = True  # the full table is drawn when its expander opens
    at.run()
    table = next(d.value for d in at.dataframe if "p_holm" in d.value.columns).set_index("metric")
    assert len(lines) == 2
    for outcomes, verdict in lines:
        metric = verdict.split(":", 1)[0]
        t = table.loc[metric]
        assert f"Holm p = {t.p_holm:.2g}" in verdict
        if t.p_holm < 0.05:
            winner = "local_search" if (t.delta > 0) == bool(t.higher_is_better) else "basic_search"
            assert verdict.startswith(f"{metric}: {winner} is better than") and outcomes <= {"better", "worse"}
            assert (outcomes == {"better"}) == (winner == "local_search")
        elif t.ci_low > 0 or t.ci_high < 0:  # the unadjusted CI says more than Holm does
            assert outcomes == {"not significant", "too few questions"}
            assert "not significant after testing 2 metrics" in verdict or "too few questions" in verdict
        else:
            assert "detectable" in verdict and outcomes & {"no significant difference", "too few questions"}
    assert any("local_search against basic_search (baseline)" in shown(c.value) for c in at.caption)


def test_compare_opens_with_a_headline_a_forest_plot_and_metric_cards(make_app, app_store):
    """Above the fold (issue 24, item 1): the one-line headline, a forest plot with one CI bar per
    tested metric whose row label carries Holm p and n, and a card per key metric with the
    candidate's mean and Δ — the same numbers as the statistics table."""
    import json

    run = synthetic_runs(app_store)[0]
    tested = ["faithfulness", "token_f1", "context_recall"]
    at = make_app("compare", sys=[f"{run}:basic_search", f"{run}:local_search"], tm=tested)
    assert not at.exception
    at.session_state["all_metrics"] = True  # the full table is drawn when its expander opens
    at.run()
    table = next(d.value for d in at.dataframe if "p_holm" in d.value.columns).set_index("metric")
    headline = [shown(h.value) for h in at.subheader if "tested metric" in h.value]
    assert len(headline) == 1 and headline[0].startswith("local_search is better than basic_search on ")
    assert headline[0].split(", n = ")[1].startswith(str(int(table.loc[tested, "n_pairs"].max())))
    [chart] = [c for c in at.get("plotly_chart") if "forest" in c.proto.id or "forest" in str(c.proto)]
    spec = json.loads(chart.proto.spec)
    bars = [t for t in spec["data"] if t["type"] == "bar"]
    labels = [y for t in bars for y in t["y"]]
    assert len(labels) == len(tested)  # one bar per tested metric
    for metric in tested:
        [label] = [y for y in labels if y.startswith(metric + " ")]
        t = table.loc[metric]
        assert f"Holm p = {t.p_holm:.2g}" in label and f"n = {int(t.n_pairs)}" in label
    for t in bars:  # each bar spans the CI: base = CI low, length = CI width
        for y, base, width in zip(t["y"], t["base"], t["x"]):
            metric = y.split(" ", 1)[0]
            assert abs(base - table.loc[metric, "ci_low"]) < 1e-9
            assert abs(base + width - table.loc[metric, "ci_high"]) < 1e-9
    cards = {shown(m.label): m for m in at.metric}
    assert set(tested) <= set(cards)
    for metric in tested:
        assert cards[metric].value == f"{table.loc[metric, 'mean_cand']:.3f}"
        assert cards[metric].delta == f"{table.loc[metric, 'delta']:+.3f}"


def test_compare_defaults_to_the_methods_of_the_newest_scored_run(make_app, app_store):
    at = make_app("compare")
    assert not at.exception
    picked = at.multiselect(key="url_sys").value
    assert len(picked) == 2 and len({k.partition(":")[0] for k in picked}) == 1


def test_compare_needs_two_valid_systems(make_app):
    at = make_app("compare", sys=["nope:thing", "bad id!:x"])
    assert not at.exception
    assert any("sys=" in w for w in warnings(at))


def test_charts_render_and_show_empty_states(make_app, app_store):
    a = synthetic_runs(app_store)[0]
    charts = 0
    for section, expected in (("overview", 3), ("facet", 1), ("operations", 2), ("fronts", 2)):
        at = make_app("charts", sys=[f"{a}:local_search", f"{a}:basic_search"], section=section)
        assert not at.exception, section
        assert len(at.get("plotly_chart")) == expected, section
        charts += expected
    assert charts == 8
    hostile_run = next(r for r in app_store.run_ids() if r.startswith("hostile"))
    at = make_app("charts", sys=[f"{hostile_run}:local_search"])
    assert not at.exception
    infos = shown(" ".join(i.value for i in at.info))
    assert "No grade distribution" in infos
    # no judge class, but token_f1 decides the answer class (the one rule): the class bars are drawn
    assert "correct / wrong" not in infos.lower() and len(at.get("plotly_chart")) >= 1


def _progress(at) -> tuple[int, int, int]:
    """(done in this batch, reviewed in the run, verdicts in the run) from the progress line."""
    import re

    line = next(t for t in texts(at) if " verdicts in this run reviewed" in t)
    m = re.match(r"(\d+) of \d+ in this batch · (\d+) of (\d+) ", line)
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def test_annotate_queue_keyboard_flow_appends_and_reports_agreement(make_app, app_store):
    """The annotator's flow through the shortcut buttons: agree (A), correct (S) with the judge's own
    words, undo (U); every step appends a row; progress and agreement follow."""
    run = synthetic_runs(app_store)[1]
    at = make_app("annotate", run=run, kind="claim", who="alice")
    assert not at.exception
    assert any(t == "Annotating as alice" for t in texts(at))  # asked once, then shown
    _, before, total = _progress(at)
    agree = next(b for b in at.button if b.label == "Agree")
    prefix = "Judge verdict: "
    judge_label = next(t.value.removeprefix(prefix) for t in at.text if t.value.startswith(prefix))
    assert judge_label in ("supported", "not_supported")
    agree.click().run()
    correct = next(b for b in at.button if b.label.startswith("Correct → "))
    assert correct.label in ("Correct → supported", "Correct → not_supported")  # the judge's words
    correct.click().run()
    assert _progress(at) == (2, before + 2, total)
    agreement = next(d.value for d in at.dataframe if "cohen_kappa" in d.value.columns)
    claim = agreement[agreement.target_kind == "claim"].iloc[0]
    assert claim.n == 2 and claim.agreement_rate == 0.5 and claim.ci_low < 0.5 < claim.ci_high
    next(b for b in at.button if b.label == "Undo").click().run()
    assert _progress(at) == (1, before + 1, total)
    from evalcore.store import query_df

    rows = query_df(app_store, 'SELECT who, label, judge_label FROM annotations WHERE run_id = ? ORDER BY "when"', [run])
    assert len(rows) == 3 and set(rows.who) == {"alice"} and rows.label.iloc[-1] == "(retracted)"
    assert rows.judge_label.iloc[0] == judge_label == rows.label.iloc[0]


def test_annotate_opens_on_a_run_with_verdicts(make_app, app_store):
    at = make_app("annotate", mode="queue")  # random sample is the default mode (tests/app/test_annotate_sample.py)
    assert not at.exception
    _, _, total = _progress(at)
    assert total > 0  # not the newest run without judge verdicts


def test_annotating_a_claim_shows_the_contexts_the_judge_saw(make_app, app_store):
    import json

    from evalcore.store import query_df

    run = synthetic_runs(app_store)[1]
    at = make_app("annotate", run=run, kind="claim", who="alice")
    assert not at.exception
    assert any(c.value.startswith("Retrieved contexts the judge checked") for c in at.caption)
    item = next(t.value for t in at.text if t.value.count(" / ") == 2)  # "method / question / ref"
    method, qid, _ = item.split(" / ")
    record = query_df(app_store, "SELECT record FROM responses WHERE run_id = ? AND method = ? AND question_id = ?",
                      [run, method, qid])["record"].iloc[0]
    stored = [c["text"] for c in json.loads(record)["retrieved"]]
    on_page = _html_texts(at)  # each context in full, its words matching the claim marked
    assert stored and all(text in on_page for text in stored)


def _pareto_page(zero_cost: bool):
    import pandas as pd

    from evalcore.ui.charts import _pareto

    cost = [0.0, 0.0, 0.0] if zero_cost else [0.01, 0.02, 0.005]
    points = pd.DataFrame({"system": ["r:a", "r:b", "r:c"], "quality": [0.8, 0.7, 0.6],
                           "cost_per_query_usd": cost})
    _pareto(points, "cost_per_query_usd", "cost per query (USD)", "faithfulness", {"r:a": "a", "r:b": "b", "r:c": "c"})


def test_pareto_needs_a_reported_cost_and_labels_its_points():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_pareto_page, args=(True,)).run()
    assert not at.exception and "No cost per query (USD) recorded." in shown(" ".join(i.value for i in at.info))
    at = AppTest.from_function(_pareto_page, args=(False,)).run()
    assert not at.exception and not at.info
    import json

    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    # named in the legend (a star on the front), not by text beside the point (tests/app/test_charts_layout.py)
    labels = [t["name"].removesuffix(" ★") for t in figure["data"] if t.get("mode") == "markers"]
    assert sorted(labels) == ["a", "b", "c"]


def test_runs_ranks_one_dataset_at_a_time(tmp_path, monkeypatch):
    """Runs of different datasets are never ranked in one list unless asked: the default is the
    newest run's dataset; '(all datasets)' lists everything with a warning."""
    from streamlit.testing.v1 import AppTest

    from evalcore.demo.synthetic import build_store
    from evalcore.scoring.importer import import_recorded
    from evalcore.cli.transfer_commands import example_files

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=12)
    answers, questions = example_files()
    newest = import_recorded(store, answers, name="example", dataset=questions).run_id
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    board = next(d.value for d in at.dataframe if "method" in d.value.columns)
    assert set(board.run_id) == {newest}
    at.selectbox(key="url_ds").select("(all datasets)").run()
    import pandas as pd  # the example's few questions are listed apart, in the unranked table

    board = pd.concat([d.value for d in at.dataframe if "method" in d.value.columns])
    assert len(set(board.run_id)) == 2 and any("not comparable" in w.value for w in at.warning)
    assert "None" not in set(board.judges.astype(str))


def test_hostile_url_values_are_echoed_inert(make_app):
    """A rejected URL value is quoted back in a warning: as escaped text, never as Markdown (no
    image fetched, no link, no colour, no KaTeX)."""
    at = make_app("runs", status="![x](http://canary.invalid/i.png)", sort=":red[boom] $x^2$ [l](http://a.invalid)")
    assert not at.exception
    joined = " ".join(warnings(at))
    # every character Markdown, :color[] or KaTeX could act on arrives backslash-escaped
    assert "\\!\\[x\\]\\(http\u2060\\:\\/\\/canary\\.invalid\\/i\\.png\\)" in joined  # escaped, autolink broken
    assert r"\:red\[boom\] \$x\^2\$ \[l\]\(http" in joined
    assert "![x](http://canary" in shown(joined)  # and displays as the characters it is


def test_compare_headline_cards_and_forest_keep_hostile_method_names_inert(tmp_path, monkeypatch):
    """Method names are data: the headline and caption escape them for Markdown, and nothing of
    them reaches the forest plot as HTML."""
    import json

    from streamlit.testing.v1 import AppTest

    from evalcore.demo.synthetic import build_store, write_run
    from evalcore.scoring.queries import run_questions

    store = build_store(tmp_path / "runs", n_runs=1, n_questions=12)
    questions = run_questions(store, store.run_ids()[0])
    evil_a, evil_b = "<img src=x onerror=alert(1)>", "**bold** [l](http://example.invalid)"
    run = write_run(store, "evil", questions, [evil_a, evil_b], ["token_f1", "faithfulness"], seed=5)
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.query_params.update({"sys": [f"{run}:{evil_a}", f"{run}:{evil_b}"], "tm": ["token_f1", "faithfulness"]})
    at.run()
    assert not at.exception, at.exception
    [headline] = [h.value for h in at.subheader if "tested metric" in h.value]
    assert shown(headline).startswith(f"{evil_b} is better than {evil_a} on ")
    import re

    assert not re.search(r"(?<!\\)[<*\[]", headline)  # every Markdown/HTML character backslash-escaped
    [chart] = [c for c in at.get("plotly_chart") if "forest" in c.proto.id]
    spec = json.dumps(json.loads(chart.proto.spec))
    assert "<img" not in spec and "onerror" not in spec
