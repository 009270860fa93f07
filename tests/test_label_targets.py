"""`evalcore labels targets RUN METHOD METRIC [--seed S] [-n N]` (issue 35, item 5, CLI part).

The template lists what the Annotate page would offer next, numbered as the page numbers it
(answer k of N in the seeded order, item k of the answer), in the documented order a script can
reproduce (sha256 of "<seed>:<question_id>", docs/labels.md); filled in, `labels import` takes it
as it is, rows left empty at the end being "not yet labelled".
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil

import pytest


from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.store import RunStore, query_df
from tests.test_label_samples import main  # the CLI in this process

METHOD = "basic_search"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from evalcore.demo.synthetic import build_store

    root = tmp_path_factory.mktemp("targets") / "runs"
    build_store(root, n_runs=1, n_questions=30, n_metrics=4)
    return root


@pytest.fixture
def lab(base, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(base, root)
    store = RunStore(root)
    return store, store.run_ids()[0]


def targets(capsys, store, *args) -> list[dict]:
    code, out, err = main(capsys, store.root, "labels", "targets", *args)
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out)))


def documented_order(store, run, metric, seed) -> list[str]:
    """docs/labels.md's rule, computed here from the population's ids alone."""
    qids = U.answers(store, run, METHOD, metric).question_id.tolist()
    return sorted(qids, key=lambda q: hashlib.sha256(f"{seed}:{q}".encode("utf-8")).hexdigest())


@pytest.mark.parametrize("metric, seed", [("faithfulness", 0), ("context_precision", 7), ("answer_class", 3)])
def test_targets_list_the_next_answers_as_the_page_numbers_them(lab, capsys, metric, seed):
    store, run = lab
    rows = targets(capsys, store, run, METHOD, metric, "--seed", str(seed), "-n", "3")
    order = documented_order(store, run, metric, seed)
    answers = list(dict.fromkeys(r["question_id"] for r in rows))
    assert answers == order[:3]
    assert [int(r["position"]) for r in rows] == [order.index(r["question_id"]) + 1 for r in rows]
    # the page's first answer and its whole-answer form: the same question, items numbered 1..k
    page = S.next_answer(store, run, METHOD, metric, seed)
    assert rows[0]["question_id"] == page.question_id and int(rows[0]["position"]) == page.position + 1
    items = S.answer_items(store, run, METHOD, metric, page.question_id)
    first = [r for r in rows if r["question_id"] == page.question_id]
    assert [int(r["item"]) for r in first] == list(range(1, len(items) + 1))
    assert [r["judge_label"] for r in first] == [str(x) for x in items.judge_label]
    for r in rows:
        assert r["sample_id"] == f"srs:{seed}" and r["label"] == "" and r["who"] == ""
        assert float(r["inclusion_prob"]) == S.inclusion_prob(int(r["position"]) - 1, len(order))
    if metric == "faithfulness":  # the claim's index is the target, its text beside it
        assert [r["target"] for r in first] == [ref.rsplit(":", 1)[1] for ref in items.target_ref]
        assert [r["text"] for r in first] == list(items.text)
    if metric == "context_precision":
        assert all(r["text"] for r in rows) and all(r["target"].isdigit() for r in rows)


@pytest.mark.parametrize("metric", ["faithfulness", "answer_class"])
def test_a_filled_template_imports_as_it_is_and_the_next_one_goes_on(lab, capsys, tmp_path, metric):
    """Two answers filled in, the third left empty: imported as it is (the empty rows are "not yet
    labelled"), the labels feed the estimate, and the next template starts at answer 3."""
    store, run = lab
    rows = targets(capsys, store, run, METHOD, metric, "-n", "3")
    answers = list(dict.fromkeys(r["question_id"] for r in rows))
    for r in rows:
        if r["question_id"] in answers[:2]:
            r["label"], r["who"] = r["judge_label"], "ann"
    path = tmp_path / "filled.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    code, out, err = main(capsys, store.root, "labels", "import", str(path))
    filled = sum(r["question_id"] in answers[:2] for r in rows)
    assert code == 0 and f"imported {filled} labels" in out, err
    ans = U.answers(store, run, METHOD, metric).set_index("question_id")
    assert ans.loc[answers[:2], "sampled"].all() and ans.loc[answers[:2], "human"].notna().all()
    assert not ans.loc[answers[2], "sampled"]
    again = targets(capsys, store, run, METHOD, metric, "-n", "1")
    assert again[0]["question_id"] == answers[2] and again[0]["position"] == "3"


def test_an_empty_row_before_a_filled_one_is_refused_naming_it(lab, capsys, tmp_path):
    store, run = lab
    rows = targets(capsys, store, run, METHOD, "answer_class", "-n", "3")
    for r in (rows[0], rows[2]):
        r["label"], r["who"] = r["judge_label"], "ann"
    path = tmp_path / "gap.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    code, _, err = main(capsys, store.root, "labels", "import", str(path))
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}, record 2, field 'label'" in err and "left unlabelled" in err, err
    assert query_df(store, "SELECT count(*) AS n FROM annotations").n[0] == 0


@pytest.mark.parametrize("args, words", [
    (["-n", "0"], "-n 0"),
    (["--seed", "-1"], "--seed -1"),
    (["--method-typo"], "No such option"),
])
def test_bad_arguments_are_one_line(lab, capsys, args, words):
    store, run = lab
    code, _, err = main(capsys, store.root, "labels", "targets", run, METHOD, "answer_class", *args)
    assert code == 2 and words in err, err


def test_an_unknown_method_or_metric_is_one_line(lab, capsys):
    store, run = lab
    code, _, err = main(capsys, store.root, "labels", "targets", run, "nope", "answer_class")
    assert code == 2 and err.startswith("error: ") and "'nope'" in err and METHOD in err, err
    code, _, err = main(capsys, store.root, "labels", "targets", run, METHOD, "no_such_metric")
    assert code == 2 and err.startswith("error: ") and "no_such_metric" in err and "faithfulness" in err, err


def test_a_fully_labelled_population_lists_nothing_and_says_so(lab, capsys, tmp_path):
    from tests.test_label_samples import records, seq, write

    store, run = lab
    path = write(tmp_path / "all.jsonl", records(store, run, seq(store, run)))  # the whole sample, in order
    assert main(capsys, store.root, "labels", "import", path)[0] == 0
    code, out, err = main(capsys, store.root, "labels", "targets", run, METHOD, "answer_class")
    assert code == 0 and out.strip().count("\n") == 0 and "every answer" in err and "srs:0" in err, (out, err)
    assert U.answers(store, run, METHOD, "answer_class").sampled.all()
