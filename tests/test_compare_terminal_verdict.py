"""`evalcore compare` in the terminal says what the Compare page says (issue 36, item 6): the
headline, then every tested metric's verdict sentence, word for word the page's (both print
verdict.pair_verdict's lines), each ending in the judge that produced the metric's values, and
each side's judge when the two sides were judged by different judges, prompts or temperatures.
Every "too few questions" / "no significant difference" names the reason that decided it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from evalcore.analysis.comparison import pair as P
from evalcore.analysis.comparison import verdict as V
from evalcore.cli.main import app
from evalcore.schemas import MetricValue
from evalcore.scoring.importer import import_recorded
from evalcore.store import RunStore

N = 5  # the smallest p any paired test can reach at n = 5 is 2·0.5⁵ = 0.0625: nothing can be significant
SAMPLING = "openai-compatible:qwen[t=1]/faithfulness@1"
PINNED = "anthropic:claude-x/faithfulness@1"


def _answers(path):
    rows = [{"question_id": f"q{i}", "method": "m", "question": f"What is item {i}?", "ground_truth": f"item {i} is blue",
             "answer": f"item {i} is blue", "latency_ms": 100.0 + i} for i in range(N)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _values(run_id, token_f1, judge_id, faithful):
    """token_f1 (computed: no judge) on every question, faithfulness judged on `faithful`."""
    computed = [MetricValue(run_id=run_id, method="m", question_id=f"q{i}", metric="token_f1", value=v,
                            group="answer") for i, v in enumerate(token_f1)]
    judged = [MetricValue(run_id=run_id, method="m", question_id=f"q{i}", metric="faithfulness",
                          value=float(i % 2), group="judged", judge_id=judge_id) for i in faithful]
    return computed + judged


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two runs of 5 questions: token_f1 computed on both; faithfulness judged by a sampling
    judge (temperature 1) on the baseline and by a temperature-0 model on the candidate, on 4
    of the 5 questions of the candidate (so the metrics differ in n)."""
    folder = tmp_path_factory.mktemp("terminal")
    store = RunStore(folder / "runs")
    keys = []
    for name, f1, judge, faithful in (("a", [0.2, 0.4, 0.1, 0.5, 0.3], SAMPLING, range(N)),
                                      ("b", [0.9, 0.8, 0.9, 0.7, 0.8], PINNED, range(1, N))):
        run_id = import_recorded(store, _answers(folder / f"{name}.jsonl"), name=name).run_id
        writer = store.open_run(run_id)
        writer.write_metrics(_values(run_id, f1, judge, faithful))
        writer.publish()
        keys.append(f"{run_id}:m")
    return store, *keys


def _cli(root, *args):
    res = CliRunner().invoke(app, ["--store", str(root), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_terminal_prints_the_pages_verdict_sentences_with_each_sides_judge(pair):
    store, base, cand = pair
    metrics = ["token_f1", "faithfulness"]
    text = _cli(store.root, "compare", base, cand, "--metrics", ",".join(metrics))
    # the Compare page's verdict (pair.pair_comparison; `compare --json` and the report print
    # the same lines), named as the page names systems of two runs
    _, page = P.pair_comparison(store, base, cand, tuple(metrics), base, cand)
    printed = [line.strip() for line in text.splitlines()]
    sentences = dict(zip(page.lines.metric, page.lines.verdict))
    for sentence in sentences.values():
        assert sentence in printed  # one line each, whole
    faith = sentences["faithfulness"]
    assert faith.endswith(" · judged by openai-compatible:qwen[t=1] on the baseline, anthropic:claude-x on the "
                          "candidate")
    assert "judged by" not in sentences["token_f1"]  # computed, not judged
    # the headline says the metrics' different n, in the terminal too
    headline = page.summary
    assert headline.endswith("n = 5 (4 for one of them) (2 too few questions to tell)"), headline
    assert headline in printed
    # the real reason of "too few questions": no p at n = 5 can reach α/2
    assert "the smallest p any result could reach, 0.062, is not below α/2 = 0.025" in sentences["token_f1"]
    assert "is detectable" not in sentences["token_f1"]


def test_judges_of_a_pair_are_said_per_side_whenever_they_differ():
    rows = pd.DataFrame([
        ("a", "same", "anthropic:claude-x/claims@1"), ("b", "same", "anthropic:claude-x/claims@1"),
        ("a", "model", "anthropic:claude-x/claims@1"), ("b", "model", "anthropic:claude-y/claims@1"),
        ("a", "prompt", "anthropic:claude-x/claims@1"), ("b", "prompt", "anthropic:claude-x/claims@2"),
        ("a", "temperature", "openai-compatible:q/claims@1"), ("b", "temperature", "openai-compatible:q[t=1]/claims@1"),
        ("a", "one side", "heuristic:lexical-v3/claims@1"),
        ("a", "two and one", "anthropic:claude-x/claims@1"), ("a", "two and one", "heuristic:lexical-v3/claims@1"),
        ("b", "two and one", "anthropic:claude-x/claims@1"),
    ], columns=["system", "metric", "judge_id"])
    said = {m: V.judges_of_pair(rows, "a", "b", m) for m in dict.fromkeys(rows.metric)}
    assert said["same"] == "anthropic:claude-x"
    assert said["model"] == "anthropic:claude-x on the baseline, anthropic:claude-y on the candidate"
    # the same model under another prompt version is another judge: the full ids say how
    assert said["prompt"] == ("anthropic:claude-x/claims@1 on the baseline, anthropic:claude-x/claims@2 on the "
                              "candidate")
    assert said["temperature"] == "openai-compatible:q on the baseline, openai-compatible:q[t=1] on the candidate"
    assert said["one side"] == ("heuristic:lexical-v3 (word overlap, not a model) on the baseline, no judge "
                                 "recorded on the candidate")
    assert said["two and one"].endswith("on the baseline, anthropic:claude-x on the candidate")
    assert V.judges_of_pair(rows, "a", "b", "computed") == ""


def _row(delta, p_holm, n, sd, span):
    return {"metric": "m", "higher_is_better": True, "n_pairs": n, "delta": delta, "ci_low": delta - 0.3,
            "ci_high": delta + 0.3, "p_holm": p_holm, "sd_diff": sd, "span": span}


def test_every_verdict_names_the_reason_that_decided_it():
    # too few because the smallest detectable Δ is over half the observed range: said so
    wide = V.verdict_lines(pd.DataFrame([_row(-0.2, 0.3, 10, 0.6, 1.0)]), "A", "B").iloc[0]
    mde = V.minimum_detectable_effect(0.6, 10, 1)
    assert wide.outcome == "too few questions"
    assert f"only |Δ| ≥ {mde:.3g} is detectable (80% power), at least half the range the values span (1)" in wide.verdict
    # a Δ beyond the MDE that the test still does not call: the Holm p against α is the reason
    beyond = V.verdict_lines(pd.DataFrame([_row(0.9, 0.09, 10, 0.6, 1.0)]), "A", "B").iloc[0]
    assert beyond.outcome == "too few questions"
    assert "this Δ is that large, but its Holm p, 0.09, is not below α = 0.05" in beyond.verdict
    # an ordinary non-difference names only the MDE
    plain = V.verdict_lines(pd.DataFrame([_row(0.01, 0.8, 40, 0.1, 1.0)]), "A", "B").iloc[0]
    assert plain.outcome == "no significant difference"
    assert "detectable (80% power)" in plain.verdict and "range" not in plain.verdict
    assert "that large" not in plain.verdict
