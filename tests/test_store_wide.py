"""The metric_wide table (store/wide.py): one row per answer, written at compaction, equal to
the pivot of the metrics rows — and computed on the fly for runs compacted before it existed."""

import json
import math

import pandas as pd
from evalcore.schemas import EvalQuestion, EvalResponse, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, query_df
from evalcore.store.wide import label_column, value_column

# metric names are data: quotes, spaces and SQL must stay names
ODD = 'it\'s "odd"; DROP TABLE metrics; --'


def _run(store: RunStore, run_id: str = "r1") -> None:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name=run_id,
                                          evalcore_version="test", methods=["a", "b"]))
    writer.write_questions([EvalQuestion(id=q, question=f"{q}?") for q in ("q1", "q2", "q3")])
    writer.write_responses([EvalResponse(question_id=q, method=m, answer="x", latency_ms=1.0)
                            for q in ("q1", "q2", "q3") for m in ("a", "b")])
    rows = []
    for m in ("a", "b"):
        for i, q in enumerate(("q1", "q2")):
            base = dict(run_id=run_id, method=m, question_id=q, group="lexical")
            rows.append(MetricValue(metric="token_f1", value=0.25 * (i + 1) + (m == "b") * 0.1, **base))
            rows.append(MetricValue(metric=ODD, value=float(i), **base))
            rows.append(MetricValue(metric="answer_class", value=float(i), label=["WRONG", "CORRECT"][i],
                                    **{**base, "group": "llm_judge"}))
    # a NaN with its reason: missing in the wide table, the reason kept in metrics
    rows.append(MetricValue(metric="faithfulness", value=math.nan, reason="no claims", run_id=run_id, method="a",
                            question_id="q1", group="llm_judge"))
    writer.write_metrics(rows)
    writer.publish()


def _pivot(store: RunStore) -> pd.DataFrame:
    long = query_df(store, "SELECT run_id, method, question_id, metric, value, label FROM metrics")
    long["value"] = long["value"].where(~long["value"].isna(), None)
    values = long.pivot(index=["run_id", "method", "question_id"], columns="metric", values="value")
    values.columns = [value_column(c) for c in values.columns]
    labels = long[long.label.notna()].pivot(index=["run_id", "method", "question_id"], columns="metric", values="label")
    labels.columns = [label_column(c) for c in labels.columns]
    return values.join(labels).reset_index()


def _two_runs(tmp_path) -> tuple[RunStore, pd.DataFrame]:
    store = RunStore(tmp_path / "runs")
    _run(store, "r1")
    _run(store, "r2")
    return store, _wide(store)


def _forget_derived(store: RunStore, run_id: str, *names: str):
    """The run's pointer as an older evalcore wrote it: without these derived tables."""
    from evalcore.store.views import forget_connections

    pointer_path = store.root / run_id / "tables.json"
    pointer = json.loads(pointer_path.read_text())
    for name in names:
        pointer["files"].pop(name)
    pointer_path.write_text(json.dumps(pointer))
    forget_connections()
    return pointer_path


def _wide(store: RunStore) -> pd.DataFrame:
    return query_df(store, "SELECT * FROM metric_wide ORDER BY run_id, method, question_id")


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = sorted(a.columns)
    assert cols == sorted(b.columns)
    pd.testing.assert_frame_equal(a[cols].sort_values(["run_id", "method", "question_id"]).reset_index(drop=True),
                                  b[cols].sort_values(["run_id", "method", "question_id"]).reset_index(drop=True),
                                  check_dtype=False)


def test_written_at_compaction_and_equal_to_the_pivot(tmp_path):
    store = RunStore(tmp_path / "runs")
    _run(store)
    pointer = json.loads((store.root / "r1" / "tables.json").read_text())
    assert pointer["files"]["metric_wide"].startswith("data/metric_wide-")
    wide = _wide(store)
    assert len(wide) == 4  # answers with metric rows (q3 has none)
    _same(wide, _pivot(store))
    nan_row = wide[(wide.method == "a") & (wide.question_id == "q1")].iloc[0]
    assert pd.isna(nan_row[value_column("faithfulness")])
    assert wide[label_column("answer_class")].tolist() == ["WRONG", "CORRECT"] * 2
    assert label_column("token_f1") not in wide  # no labels: no label column


def test_a_rescore_replaces_the_wide_row(tmp_path):
    store = RunStore(tmp_path / "runs")
    _run(store)
    writer = store.open_run("r1")
    writer.write_metrics([MetricValue(metric="token_f1", value=0.9, run_id="r1", method="a", question_id="q2",
                                      group="lexical")])
    writer.publish()
    wide = _wide(store)
    assert wide.loc[(wide.method == "a") & (wide.question_id == "q2"), value_column("token_f1")].item() == 0.9
    _same(wide, _pivot(store))


def test_runs_without_the_file_are_computed_when_read(tmp_path):
    """A run compacted before metric_wide existed (its pointer names no such file) reads the
    same rows, computed on the fly, beside a run that has the file."""
    store, before = _two_runs(tmp_path)
    pointer_path = _forget_derived(store, "r2", "metric_wide")
    after = _wide(store)
    assert set(after.run_id) == {"r1", "r2"}
    _same(after, before)
    # the next compaction writes the file again
    from evalcore.store.compaction import compact

    compact(store.root / "r2")
    assert "metric_wide" in json.loads(pointer_path.read_text())["files"]


def test_an_empty_store_has_the_key_columns(tmp_path):
    store = RunStore(tmp_path / "runs")
    wide = _wide(store)
    assert wide.empty and list(wide.columns) == ["run_id", "method", "question_id"]


def test_metric_names_are_quoted_not_executed(tmp_path):
    store = RunStore(tmp_path / "runs")
    _run(store)
    wide = _wide(store)
    assert sorted(wide[value_column(ODD)].tolist()) == [0.0, 0.0, 1.0, 1.0]
    assert query_df(store, "SELECT count(*) AS n FROM metrics")["n"][0] == 13


def test_store_upgrade_writes_what_an_older_compaction_left_out(tmp_path):
    """`evalcore store upgrade` compacts exactly the runs lacking a derived table, once."""
    from typer.testing import CliRunner

    from evalcore.cli.main import app
    from evalcore.store.views import forget_connections

    store, before = _two_runs(tmp_path)
    pointer_path = _forget_derived(store, "r1", "metric_wide", "summary_labels")
    cli = CliRunner()
    out = cli.invoke(app, ["--store", str(store.root), "store", "upgrade"])
    assert out.exit_code == 0, out.output
    assert "upgraded r1" in out.output and "upgraded r2" not in out.output and "1 run(s) upgraded" in out.output
    files = json.loads(pointer_path.read_text())["files"]
    assert {"metric_wide", "summary_labels"} <= set(files)
    forget_connections()
    _same(_wide(store), before)
    again = cli.invoke(app, ["--store", str(store.root), "store", "upgrade"])
    assert again.exit_code == 0 and "0 run(s) upgraded" in again.output
