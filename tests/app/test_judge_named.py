"""Every judged score names the judge that produced it (a project rule): Compare's verdict,
the Charts overview, the Questions grid and Annotate's verdict, not only the side-by-side view.
The synthetic store's judged metrics (faithfulness, context_precision, factual_accuracy) come
from the offline heuristic judge `heuristic:synthetic`; token_f1 is computed, not judged."""

from __future__ import annotations

from tests.app.test_pages import shown, synthetic_runs, texts

NAMED = "heuristic:synthetic (word overlap, not a model)"


def _everything(at) -> str:
    return "\n".join([*texts(at), *(shown(c.value) for c in at.caption)])


def test_compare_verdict_names_the_judge_of_judged_metrics(make_app, app_store):
    from tests.app.test_pages import verdict_sentences

    run = synthetic_runs(app_store)[0]
    at = make_app("compare", sys=[f"{run}:basic_search", f"{run}:local_search"], tm=["faithfulness", "token_f1"])
    assert not at.exception
    lines = {text.split(":", 1)[0]: text for _, text in verdict_sentences(at)}
    assert lines["faithfulness"].endswith(f" · judged by {NAMED}")
    assert "judged by" not in lines["token_f1"]  # computed, not judged
    at.session_state["all_metrics"] = True  # the full table is drawn when its expander opens
    at.run()
    table = next(d.value for d in at.dataframe if "p_holm" in d.value.columns).set_index("metric")
    assert table.loc["faithfulness", "judged_by"] == NAMED


def test_charts_overview_names_the_grade_judge(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("charts", sys=[f"{run}:local_search", f"{run}:basic_search"], section="overview")
    assert not at.exception
    assert f"Grades: judged by {NAMED}" in _everything(at)
    # answer_class is a judged metric (its spec), so the synthetic store records its judge too
    assert f"Answer classes: judged by {NAMED}" in _everything(at)


def test_questions_grid_names_the_judge_of_its_metric(make_app, app_store):
    run = synthetic_runs(app_store)[0]
    at = make_app("questions", run=run, view="grid", gm="faithfulness")
    assert not at.exception
    assert f"faithfulness: judged by {NAMED}" in _everything(at)
    at = make_app("questions", run=run, view="grid", gm="token_f1")
    assert "judged by" not in _everything(at)


def test_annotate_verdict_names_its_judge(make_app, app_store):
    run = synthetic_runs(app_store)[1]
    at = make_app("annotate", run=run, kind="claim", who="bob")
    assert not at.exception
    assert f"judged by {NAMED}" in texts(at)
