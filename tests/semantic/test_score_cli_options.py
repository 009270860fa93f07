"""The score command passes BERTScore settings through to the metric (and records them)."""

import json

from typer.testing import CliRunner

from evalcore.cli.main import app


def test_bertscore_layer_flag_reaches_the_metric(tmp_path):
    root = str(tmp_path / "runs")
    runner = CliRunner()
    assert runner.invoke(app, ["--store", root, "import", "--example"]).exit_code == 0
    res = runner.invoke(app, ["--store", root, "score", "latest", "--metrics", "bert_score_f1",
                              "--bertscore-layer", "3", "--no-progress"])
    assert res.exit_code == 0, res.output
    from evalcore.store import query_df
    from evalcore.store import RunStore

    details = query_df(RunStore(root), "SELECT details FROM metrics WHERE metric = 'bert_score_f1' "
                                       "AND NOT isnan(value)")["details"]
    assert len(details) == 10 and all("layer 3" in json.loads(d)["model"] for d in details)


def test_embedding_model_is_recorded_in_the_manifest(tmp_path):
    root = str(tmp_path / "runs")
    runner = CliRunner()
    assert runner.invoke(app, ["--store", root, "import", "--example"]).exit_code == 0
    res = runner.invoke(app, ["--store", root, "score", "latest", "--metrics", "semantic_similarity",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    from evalcore.store import RunStore

    store = RunStore(root)
    history = store.manifest(store.resolve("latest")).config["scoring"]
    assert "all-MiniLM-L6-v2" in history[-1]["options"]["embedding_model"]
