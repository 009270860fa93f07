"""dont_know: the seeds' phrases, the no-answer forms rule in both directions, and the options
reaching the metrics from the run config and the `score` CLI (issue 16, item 3)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.runner.config import EvalConfig
from evalcore.errors import EvalcoreError
from evalcore.scoring.importer import import_recorded
from evalcore.metrics.abstention import detect_dont_know
from evalcore.metrics.options import check_options, parse_option
from evalcore.store import query_df
from evalcore.schemas import EvalResponse
from evalcore.scoring.engine import score_run


def dk(answer, options=None):
    return detect_dont_know(EvalResponse(question_id="q", method="m", answer=answer), options)


# Seed 000's uncertainty phrases ("unknown", "not sure", "cannot determine", "insufficient data",
# "not available", "no data"), as answers actually phrase them.
@pytest.mark.parametrize("answer", [
    "Unknown.", "unknown", "UNKNOWN!", "The founding year is unknown.", "It's unknown.",
    "Not sure.", "I'm not sure which year that was.", "I cannot determine this from the documents.",
    "Insufficient data to answer.", "Not available.", "The 2023 revenue is not available.",
    "No data.", "There is no data on ticket prices.", "N/A", "None.", "null",
    "I looked at the sources. The answer remains unknown.",
])
def test_seed_phrases_are_abstentions(answer):
    flag, how = dk(answer)
    assert flag is True, how


# The same words inside real answers are not abstentions.
@pytest.mark.parametrize("answer", [
    "The Tomb of the Unknown Soldier is at Arlington.",
    "The unknown soldier was buried in 1921.",
    "The author is unknown to most readers, but it was Voss.",
    "The model is not available in Europe, only in Asia.",
    "The probe sent no data after 2003, when its radio failed.",
    "Na",  # the symbol of sodium, not "n/a"
    "Make sure to book ahead; tickets cost 12 euros.",
    "Nonetheless, the ferry ran until 1954.",
])
def test_answers_using_the_words_are_not_abstentions(answer):
    flag, how = dk(answer)
    assert flag is False, how


def test_details_name_the_rule():
    assert dk("Unknown.")[1]["by"] == "short_answer"
    sentence = dk("I checked. The population is unknown.")[1]
    assert sentence["by"] == "no_answer_sentence" and sentence["form"] == "unknown"
    assert dk("Not sure.")[1] == {"by": "phrase", "lang": "en", "phrase": "not sure"}
    assert dk("  ")[1]["by"] == "empty_answer"


def test_lists_are_options_and_malformed_lists_are_errors():
    assert dk("Unknown.", {"dont_know_forms": {"en": []}})[0] is False
    assert dk("Pas de réponse.", {"dont_know_forms": {"fr": ["pas de réponse"]}})[0] is True
    assert dk("모름")[0] is True
    assert dk("모름", {"dont_know_forms": {"ko": []}, "dont_know_phrases": {"ko": []}})[0] is False
    with pytest.raises(EvalcoreError, match="dont_know_phrases"):
        dk("x", {"dont_know_phrases": ["no idea"]})  # a list, not {language: list}


def test_option_names_are_checked():
    assert check_options({"match_snippets": False, "budgets": {"latency": 10}})
    with pytest.raises(EvalcoreError, match="did you mean 'dont_know_phrases'"):
        check_options({"dont_know_phrase": {"en": []}})
    with pytest.raises(EvalcoreError, match="match_snippets"):
        check_options({"match_snippets": "no"})
    with pytest.raises(EvalcoreError, match="weights"):
        check_options({"weights": {"accuracy": -1}})
    assert parse_option("dont_know_phrases={en: [no idea]}") == ("dont_know_phrases", {"en": ["no idea"]})
    assert parse_option("match_snippets=false") == ("match_snippets", False)


def test_run_config_takes_score_options():
    base = {"target": "http://localhost:1", "dataset": "x.yaml"}
    config = EvalConfig.model_validate({**base, "score_options": {"dont_know_phrases": {"en": ["no idea"]},
                                                                  "weights": {"accuracy": 1.0}}})
    assert config.snapshot()["score_options"]["dont_know_phrases"] == {"en": ["no idea"]}
    with pytest.raises(ValueError, match="unknown option 'negative_rule'"):
        EvalConfig.model_validate({**base, "score_options": {"negative_rule": {}}})
    with pytest.raises(ValueError, match="config field `judge`"):
        EvalConfig.model_validate({**base, "score_options": {"judge": "heuristic"}})


@pytest.fixture
def recorded(tmp_path, store):
    rows = [{"question_id": "q1", "question": "Who designed the lens?", "ground_truth": "Ada Pellow",
             "answer": "No idea, sorry.", "method": "m"},
            {"question_id": "q2", "question": "Is the fund guaranteed?", "ground_truth": "No.",
             "answer": "There is risk.", "method": "m", "negative_check": "should_provide_accurate_disclaimer"}]
    path = tmp_path / "rec.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return store, import_recorded(store, path).run_id


def _value(store, run_id, qid, metric):
    df = query_df(store, "SELECT value FROM metrics WHERE run_id=? AND question_id=? AND metric=?",
                  [run_id, qid, metric])
    return float(df.value[0])


def test_score_cli_options_reach_the_metrics(recorded, tmp_path):
    store, run_id = recorded
    runner = CliRunner()
    res = runner.invoke(app, ["--store", str(store.root), "score", run_id, "--metrics", "dont_know,negative_detection",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert _value(store, run_id, "q1", "dont_know") == 0.0
    assert _value(store, run_id, "q2", "negative_detection") == 0.0
    options = tmp_path / "options.yaml"
    options.write_text("dont_know_phrases:\n  en: [no idea]\n")
    res = runner.invoke(app, ["--store", str(store.root), "score", run_id, "--metrics", "dont_know,negative_detection",
                              "--no-progress", "--options-file", str(options),
                              "--option", "negative_rules={should_provide_accurate_disclaimer: {en: [[risk]]}}"])
    assert res.exit_code == 0, res.output
    assert _value(store, run_id, "q1", "dont_know") == 1.0
    assert _value(store, run_id, "q2", "negative_detection") == 1.0
    assert store.manifest(run_id).config["scoring"][-1]["options"]["dont_know_phrases"] == {"en": ["no idea"]}
    bad = runner.invoke(app, ["--store", str(store.root), "score", run_id, "--option", "dont_know_phrase={en: []}"])
    assert bad.exit_code != 0 and "did you mean 'dont_know_phrases'" in str(bad.exception)


def test_score_run_refuses_unknown_options(recorded):
    store, run_id = recorded
    with pytest.raises(EvalcoreError, match="unknown option 'match_snippet'"):
        score_run(store, run_id, metrics=["dont_know"], options={"match_snippet": False}, progress=False)


def test_no_answer_rule_of_lexical_metrics_uses_the_same_options():
    """exact_match/squad_em/token_f1 credit an abstention on an unanswerable question: with the
    run's phrase lists, not the defaults."""
    from evalcore.metrics.base import ScoringContext
    from evalcore.metrics.registry import METRICS
    from evalcore.schemas import EvalQuestion

    q = EvalQuestion(id="q", question="What did the 2031 report say?", answerable=False)
    r = EvalResponse(question_id="q", method="m", answer="No idea, sorry.")
    for name in ("exact_match", "squad_em", "token_f1"):
        default = METRICS[name].compute([(q, r)], ScoringContext(run_id="t"))[0]
        custom = METRICS[name].compute([(q, r)], ScoringContext(
            run_id="t", options={"dont_know_phrases": {"en": ["no idea"]}}))[0]
        assert (default.value, custom.value) == (0.0, 1.0), name
