"""`evalcore labels import|export` and `show/compare --corrected`.

Labels from a labelling tool are checked whole before anything is stored (a bad record is one
line naming file, record and field; the store is unchanged); an export re-imports to the same
labels; and the corrected numbers the CLI prints are the analysis function's (the pages call it).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from typer.testing import CliRunner


from evalcore.analysis.labels import corrected as C  # noqa: E402
from evalcore.analysis.labels import label_sampling as S  # noqa: E402
from evalcore.cli.main import app  # noqa: E402
from evalcore.store import query_df  # noqa: E402

runner = CliRunner()
METHODS = ("local_search", "basic_search")


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _child(*args) -> subprocess.CompletedProcess:
    """`python -m evalcore ARGS...`, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "evalcore", *map(str, args)], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A synthetic run and a CSV of 60 randomly sampled answer_class labels per method (the
    seeded order's first 60; the person disagrees with the judge on every 3rd)."""
    from evalcore.demo.synthetic import build_store

    root = tmp_path_factory.mktemp("lab") / "runs"
    store = build_store(root, n_runs=1, n_questions=80, n_metrics=4)
    run = store.run_ids()[0]
    rows = []
    for method in METHODS:
        judged = query_df(store, "SELECT question_id, label FROM metrics WHERE run_id = ? AND method = ? "
                                 "AND metric = 'answer_class'", [run, method])
        judge = dict(zip(judged.question_id, judged.label))
        order = S.order(list(judge), 0)
        for pos, q in enumerate(order[:60]):
            label = ("wrong" if judge[q] == "CORRECT" else "correct") if pos % 3 == 0 else judge[q].lower()
            rows.append({"run": run, "method": method, "question_id": q, "metric": "answer_class", "target": "",
                         "label": label, "who": "studio", "sample_id": "srs:0",
                         "inclusion_prob": S.inclusion_prob(pos, len(order))})
    path = tmp_path_factory.mktemp("csv") / "labels.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = _cli(root, "labels", "import", str(path))
    assert res.exit_code == 0, res.output
    assert "imported 120 labels" in res.output
    return store, run, path


def test_import_maps_tool_words_and_keeps_the_sample(labelled):
    store, run, _ = labelled
    got = query_df(store, "SELECT label, sample_id, inclusion_prob, judge_label FROM annotations")
    assert len(got) == 120
    assert set(got.label) <= {"CORRECT", "WRONG", "DONT_KNOW"}  # lower-case words from the tool, upper in the store
    assert set(got.sample_id) == {"srs:0"} and got.inclusion_prob.between(0, 1).all()
    assert got.judge_label.notna().all()  # filled from the store's verdict, not from the file


def test_show_and_compare_corrected_print_the_analysis_numbers(labelled):
    store, run, _ = labelled
    table = C.corrected_means(store, run)
    row = table[(table.method == "basic_search") & (table.metric == "answer_class")].iloc[0]
    res = _cli(store.root, "show", run, "--corrected")
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "basic_search" in ln and "answer_class" in ln
                and "[" in ln)
    assert f"{row.corrected:.3f}" in line and f"[{row.ci_low:.3f}, {row.ci_high:.3f}]" in line
    assert "60/80" in line
    res = _cli(store.root, "show", run, "--corrected", "--json")
    payload = json.loads(res.output)
    assert any(r["corrected"] == pytest.approx(row.corrected) for r in payload["corrected"])

    delta = C.corrected_delta(store, (run, METHODS[0]), (run, METHODS[1]), "answer_class")
    res = _cli(store.root, "compare", f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}", "--metrics", "answer_class",
               "--corrected")
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "corrected" in ln and "answer_class" in ln and "judge" in ln)
    assert f"{delta['corrected_delta']:+.3f} [{delta['ci_low']:.3f}, {delta['ci_high']:.3f}]" in line
    assert f"judge {delta['judge_delta']:+.3f}" in line


def test_export_reimports_to_the_same_labels(labelled, tmp_path):
    store, run, _ = labelled
    res = _cli(store.root, "labels", "export", "--run", run, "--format", "jsonl", "-o", str(tmp_path / "out.jsonl"))
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    stored = query_df(store, "SELECT count(*) AS n FROM annotations WHERE run_id = ?", [run]).n[0]
    assert len(recs) == stored >= 120 and "answer_class" in {r["metric"] for r in recs}
    from evalcore.analysis.labels.labels_io import parse

    again = parse(store, tmp_path / "out.jsonl")
    before = query_df(store, "SELECT method, question_id, label, sample_id, inclusion_prob, who FROM annotations "
                             "ORDER BY method, question_id")
    after = sorted((a.method, a.question_id, a.label, a.sample_id, a.inclusion_prob, a.who) for a in again)
    assert after == sorted(map(tuple, before.itertuples(index=False)))


@pytest.mark.parametrize("change, field", [
    ({"label": "maybe"}, "label"),
    ({"question_id": "q99999"}, "question_id"),
    ({"metric": "faithfulness", "target": "7"}, "target"),
    ({"method": "nope"}, "method"),
    ({"who": ""}, "who"),
    ({"inclusion_prob": ""}, "inclusion_prob"),
    ({"inclusion_prob": "1.5"}, "inclusion_prob"),
])
def test_a_bad_record_is_one_line_and_nothing_is_stored(labelled, tmp_path, console, change, field):
    store, run, good = labelled
    rows = list(csv.DictReader(good.open()))[:5]
    rows[3] = {**rows[3], **change}
    path = tmp_path / "bad.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    before = query_df(store, "SELECT count(*) AS n FROM annotations").n[0]
    # one case as a user runs it; the others through the same entry point in this process (a
    # child per case cost 1-4 s)
    args = ("--store", store.root, "labels", "import", path)
    res = _child(*args) if field == "label" else console(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(path) in lines[0] and "record 4" in lines[0] and f"field '{field}'" in lines[0], lines[0]
    assert query_df(store, "SELECT count(*) AS n FROM annotations").n[0] == before


def test_corrected_views_need_no_ppi_python(labelled, monkeypatch):
    """The estimators are evalcore's own (evalcore/stats/ppi_mean.py, equal to ppi-python's to
    1e-12): with the package absent, `show --corrected` and `compare --corrected` print the same
    corrected numbers (they used to stop at "pip install 'evalcore[labels]'")."""
    store, run, _ = labelled
    table = C.corrected_means(store, run)
    monkeypatch.setitem(sys.modules, "ppi_py", None)  # `import ppi_py` now raises ImportError
    res = _cli(store.root, "show", run, "--corrected", "--json")
    assert res.exit_code == 0, res.output
    got = {(r["method"], r["metric"]): r for r in json.loads(res.output)["corrected"]}
    for row in table.itertuples(index=False):
        assert got[(row.method, row.metric)]["corrected"] == pytest.approx(row.corrected, abs=1e-12)
    assert any(r["status"] == "ok" for r in got.values())
    res = _cli(store.root, "compare", f"{run}:{METHODS[0]}", f"{run}:{METHODS[1]}", "--metrics", "answer_class",
               "--corrected")
    assert res.exit_code == 0, res.output
    assert any("corrected" in ln and "answer_class" in ln for ln in res.output.splitlines())


def test_claim_labels_import_by_claim_index_and_complete_the_answer(labelled, tmp_path):
    from evalcore.analysis.labels import label_units as U

    store, run, _ = labelled
    draw = S.next_answer(store, run, "local_search", "faithfulness")  # the sample's next answer and its probability
    q = draw.question_id
    assert len(U.items_of_answer(store, run, "local_search", "faithfulness", q)) == 3
    recs = [{"run": run, "method": "local_search", "question_id": q, "metric": "faithfulness", "target": i,
             "label": word, "who": "argilla", "sample_id": "srs:0", "inclusion_prob": draw.inclusion_prob}
            for i, word in enumerate(["yes", "no", "supported"])]
    path = tmp_path / "claims.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = _cli(store.root, "labels", "import", str(path))
    assert res.exit_code == 0, res.output
    ans = U.answers(store, run, "local_search", "faithfulness").set_index("question_id").loc[q]
    assert ans.sampled and ans.human == pytest.approx(2 / 3)
