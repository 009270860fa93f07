"""`evalcore compare` and the CI gate --fail-on-regression, both ways, on SQuAD answers."""

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError

runner = CliRunner()


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


@pytest.fixture(scope="module")
def two_runs(shared_data, tmp_path_factory):
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for p in data["data"][0]["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]]
    root = tmp_path_factory.mktemp("cmp") / "runs"
    folder = tmp_path_factory.mktemp("rec")
    ids = []
    for name, wrong_every in (("good", 0), ("worse", 2)):
        recs = []
        for i, qa in enumerate(qas):
            gold = qa["answers"][0]["text"]
            wrong = wrong_every and i % wrong_every == 0
            recs.append({"question_id": qa["id"], "question": qa["question"],
                         "ground_truth": [a["text"] for a in qa["answers"]],
                         "answer": "the Vikings of Scandinavia" if wrong else gold, "method": "reader"})
        path = folder / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in recs))
        res = _cli(root, "import", str(path), "--name", name)
        assert res.exit_code == 0, res.output
        run_id = res.stdout.strip().splitlines()[-1]
        res = _cli(root, "score", run_id, "--groups", "lexical", "--no-progress")
        assert res.exit_code == 0, res.output
        ids.append(run_id)
    return root, ids


def test_fail_on_regression_exits_1_when_significant(two_runs):
    root, (good, worse) = two_runs
    res = _cli(root, "compare", f"{good}:reader", f"{worse}:reader", "--metrics", "token_f1,squad_em",
               "--fail-on-regression", "token_f1")
    assert res.exit_code == 1 and not isinstance(res.exception, EvalcoreError), res.output
    assert "REGRESSION" in res.stderr and "token_f1" in res.stderr


def test_no_failure_on_improvement_or_small_delta(two_runs):
    root, (good, worse) = two_runs
    res = _cli(root, "compare", worse, good, "--metrics", "token_f1", "--fail-on-regression", "token_f1")
    assert res.exit_code == 0, res.output
    res = _cli(root, "compare", good, worse, "--fail-on-regression", "squad_em:0.9")
    assert res.exit_code == 0, res.output  # worse by ~0.5, under the allowed 0.9


def test_compare_json_and_pareto(two_runs):
    root, (good, worse) = two_runs
    res = _cli(root, "compare", good, worse, "--metrics", "squad_em", "--json", "--pareto")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    row = out["metrics"][0]
    assert row["metric"] == "squad_em" and row["test"] == "mcnemar_exact" and row["n_pairs"] == 96
    assert row["regressed"] == 48 and row["significant"] is True and row["delta"] < 0
    assert {p["label"] for p in out["pareto"]["points"]} == {f"{good}:reader", f"{worse}:reader"}
    res = _cli(root, "compare", good, worse, "--fail-on-regression", "not_a_metric")
    # an unknown gate metric is a usage error (main() turns it into exit code 2), not a regression
    assert isinstance(res.exception, EvalcoreError) and "not_a_metric" in str(res.exception)


def test_markdown_report_says_worse_only_when_significant(two_runs):
    from evalcore.outputs.export import _md_cell

    root, (good, worse) = two_runs
    res = _cli(root, "compare", f"{good}:reader", f"{worse}:reader", "--metrics", "token_f1,squad_em", "--markdown")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"**evalcore compare** · baseline {_md_cell(good + ':reader')} · ")
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| candidate")]
    assert len(rows) == 2 and all("▼ worse" in row for row in rows)  # wrong answers on half the questions
    back = _cli(root, "compare", f"{worse}:reader", f"{good}:reader", "--metrics", "token_f1", "--markdown")
    assert "▲ better" in back.stdout


def test_markdown_cells_are_inert():
    import pandas as pd

    from evalcore.analysis.comparison.compare import Comparison, Selection
    from evalcore.outputs.markdown_report import comparison_markdown

    hostile = Selection("run|x", "<script>alert(1)</script>")
    table = pd.DataFrame([{"candidate": hostile.label, "metric": "latency_ms", "higher_is_better": False,
                           "mean_a": 10.0, "mean_b": 8.0, "delta": -2.0, "ci_low": -3.0, "ci_high": -1.0,
                           "p_holm": 0.01, "significant": True, "improved": 9, "regressed": 1, "unchanged": 0,
                           "n_pairs": 10}])
    text = comparison_markdown(Comparison(Selection("base", "m"), [hostile], table, {}))
    assert "<script>" not in text and "&lt;script&gt;" in text and "run\\|x" in text
    assert "▲ better" in text  # lower latency is better
    quiet = table.assign(p_holm=0.5, significant=False, sd_diff=1.0, span=10.0)  # the words follow the verdict
    assert "▲ better" not in comparison_markdown(Comparison(Selection("base", "m"), [hostile], quiet, {}))
