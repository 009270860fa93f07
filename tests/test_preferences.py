"""Pairwise preferences, corrected (issue 35, item 4).

A preference label says which of two systems' answers to one question is better (A, B or tie).
It has a kind of its own in the annotation store (the pair in its target_ref, in one spelling,
the side shown left beside it), `labels import` takes it (`kind` column or `--kind preference`),
its random sample walks the seeded order over the pair's questions and is checked like every
sample, and `compare --corrected` gives the PPI++-corrected win rate (ties half) with the judge's
per-question preference by each compared metric as the prediction, beside the judge's own.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys

import numpy as np
import pytest

from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels import sample_order as O
from evalcore.analysis.labels import win_rate as W
from evalcore.analysis.labels.ppi_estimate import estimate
from evalcore.store import RunStore, query_df

BASE, CAND = "local_search", "basic_search"  # the comparison's order; the pair's A is basic_search
N = 60


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from evalcore.demo.synthetic import build_store

    root = tmp_path_factory.mktemp("prefs") / "runs"
    build_store(root, n_runs=1, n_questions=N, n_metrics=4)
    return root


@pytest.fixture
def lab(built, tmp_path):
    """A fresh copy of the small store: (store, run id, the pair, its seed-0 order)."""
    root = tmp_path / "runs"
    shutil.copytree(built, root)
    store = RunStore(root)
    run = store.run_ids()[0]
    pair, flipped = PF.pair_of((run, BASE), (run, CAND))
    assert flipped and pair.a == (run, CAND)  # the pair's one spelling: A sorts first
    return store, run, pair, O.order(PF.population(store, pair).question_id.tolist(), 0)


def main(capsys, root, *args) -> tuple[int, str, str]:
    """The CLI in this process, as the console script runs it: (exit code, stdout, stderr)."""
    from evalcore.cli.main import main as cli

    capsys.readouterr()
    old, sys.argv = sys.argv, ["evalcore", "--store", str(root), *args]
    try:
        cli()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old
    out = capsys.readouterr()
    return code, out.out, out.err


def write(path, rows) -> str:
    if str(path).endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
            w.writeheader()
            w.writerows(rows)
    return str(path)


def prefs(run, order, labels, kind=True, **extra) -> list[dict]:
    """Preference records naming BASE first (the other way round from the stored pair), sampled
    at seed 0 from the top of the order."""
    return [{**({"kind": "preference"} if kind else {}), "run": run, "method": BASE, "other_method": CAND,
             "question_id": q, "label": label, "who": "ann", "sample_id": "srs:0",
             "inclusion_prob": O.inclusion_prob(k, N), **extra}
            for k, (q, label) in enumerate(zip(order, labels))]


def stored(store):
    return query_df(store, "SELECT method, question_id, target_kind, target_ref, label, shown_left, sample_id "
                           "FROM annotations ORDER BY arrival")


@pytest.mark.parametrize("how", ["kind column", "--kind flag"])
def test_labels_import_takes_preferences_in_one_spelling_and_export_round_trips(lab, tmp_path, capsys, how):
    """`labels import` reads kind=preference (a column, or --kind for a file without one); the
    pair is stored once spelled (A sorts first), the label turned round with it; the export
    re-imports to the same labels."""
    store, run, pair, order = lab
    rows = prefs(run, order[:3], ["a", "B", "TIE"], kind=how == "kind column", shown_left="A")
    path = write(tmp_path / "prefs.csv", rows)
    code, out, err = main(capsys, store.root, "labels", "import", path,
                          *(["--kind", "preference"] if how == "--kind flag" else []))
    assert code == 0 and "imported 3 labels" in out, err
    got = stored(store)
    assert list(got.method) == [CAND] * 3 and set(got.target_kind) == {"preference"}
    assert set(got.target_ref) == {f"preference:{run}:{BASE}"}
    assert list(got.label) == ["B", "A", "tie"] and list(got.shown_left) == ["B"] * 3  # turned round
    exported = tmp_path / "out.jsonl"
    assert main(capsys, store.root, "labels", "export", "-f", "jsonl", "-o", str(exported))[0] == 0
    first = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    assert first["kind"] == "preference" and first["other_method"] == BASE and first["metric"] is None
    assert main(capsys, store.root, "labels", "import", str(exported))[0] == 0
    again = stored(store).iloc[3:].reset_index(drop=True)
    assert again[["method", "question_id", "target_ref", "label", "shown_left", "sample_id"]].equals(
        got[["method", "question_id", "target_ref", "label", "shown_left", "sample_id"]])


BAD = [  # (field changed, its value, the field the error names)
    ("label", "x", "label"),
    ("other_method", "nope", "other_method"),
    ("other_method", BASE, "other_method"),  # the same system twice
    ("question_id", "q99999", "question_id"),
    ("metric", "faithfulness", "metric"),
    ("shown_left", "left", "shown_left"),
    ("kind", "pairwise", "kind"),
    ("other_run", "no-such-run", "other_run"),
    ("inclusion_prob", "0.5", "inclusion_prob"),  # not the probability of its place
    ("sample_id", "srs:03", "sample_id"),
]


@pytest.mark.parametrize("field,value,named", BAD, ids=[f"{f}={v}" for f, v, _ in BAD])
def test_a_bad_preference_record_is_one_line_naming_file_record_and_field(built, tmp_path, capsys, field, value,
                                                                         named):
    store = RunStore(built)
    run = store.run_ids()[0]
    pair = PF.pair_of((run, BASE), (run, CAND))[0]
    order = O.order(PF.population(store, pair).question_id.tolist(), 0)
    rows = prefs(run, order[:3], ["A", "B", "tie"])
    rows[1][field] = value
    path = write(tmp_path / "bad.csv", rows)
    before = len(stored(store))
    code, _, err = main(capsys, store.root, "labels", "import", path)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert f"{path}, record 2, field '{named}'" in lines[0], lines[0]
    assert len(stored(store)) == before


def test_a_label_of_a_metric_naming_a_second_system_is_refused(built, tmp_path, capsys):
    """other_method on a record that is no preference is an error, not ignored."""
    store = RunStore(built)
    run = store.run_ids()[0]
    path = write(tmp_path / "mixed.csv", [{"run": run, "method": BASE, "question_id": "q00000",
                                           "metric": "answer_class", "label": "CORRECT", "who": "ann",
                                           "other_method": CAND}])
    code, _, err = main(capsys, store.root, "labels", "import", path)
    assert code == 2 and f"{path}, record 1, field 'other_method'" in err and "kind preference" in err, err


def test_a_preference_sample_is_the_top_of_its_seeds_order_and_store_check_rechecks_it(lab, tmp_path, capsys):
    """A sample of preferences walks the seeded order over the pair's questions: a gap is refused
    naming the record; a stored sample broken later (a label taken back) feeds nothing and `store
    check` names it."""
    store, run, pair, order = lab
    rows = prefs(run, order[:4], ["A", "B", "tie", "A"])
    del rows[2]  # the third question of the order left out: a gap before the fourth
    path = write(tmp_path / "gap.csv", rows)
    code, _, err = main(capsys, store.root, "labels", "import", path)
    assert code == 2 and f"{path}, record 3, field 'sample_id'" in err and "no gap" in err, err
    store.append_annotations([PF.build(pair, q, "ann", "A", sample=("srs:0", O.inclusion_prob(k, len(order))))
                              for k, q in enumerate(order[:5])])
    assert PF.answers(store, pair).sampled.sum() == 5
    code, out, err = main(capsys, store.root, "store", "check", run)
    assert "WARNING" not in out + err, out + err
    store.append_annotations([PF.build(pair, order[1], "ann", "(retracted)")])  # a label taken back mid-sample
    assert PF.answers(store, pair).sampled.sum() == 0
    assert PF.next_question(store, pair, 0).question_id == order[1]  # offered again, to mend the sample
    code, out, err = main(capsys, store.root, "store", "check", run)
    lines = [ln for ln in (out + err).splitlines() if ln.startswith("WARNING")]
    assert code == 0 and len(lines) == 1 and "'srs:0' of preference" in lines[0] and "hand-picked" in lines[0]


def test_left_and_right_are_drawn_per_question_from_the_seed_and_stored(lab):
    store, run, pair, order = lab
    sides = [PF.left_side(0, q) for q in order]
    assert sides == [PF.left_side(0, q) for q in order]  # reproducible
    assert 0.25 < sides.count("A") / len(sides) < 0.75  # both sides, about half each
    assert sides != [PF.left_side(1, q) for q in order]  # another seed, other sides
    draw = PF.next_question(store, pair, 0)
    assert draw.question_id == order[0] and draw.left == sides[0]
    PF.save(store, pair, draw, "ann", "tie")
    got = stored(store)
    assert list(got.shown_left) == [sides[0]] and list(got.sample_id) == ["srs:0"]
    assert PF.next_question(store, pair, 0).question_id == order[1]


def _judged(store, run, metric):
    values = query_df(store, "SELECT question_id, method, value FROM metrics WHERE run_id = ? AND metric = ?",
                      [run, metric]).pivot(index="question_id", columns="method", values="value")
    return values


def test_the_corrected_win_rate_is_ppi_on_preferences_with_the_judges_preference_as_prediction(lab):
    """Y = 1 when people prefer the candidate, 0.5 for a tie, 0 otherwise, on the sampled
    questions; Yhat = the same from the metric's values (the judge-side Δ) on every question."""
    store, run, pair, order = lab
    labels = ["A", "B", "tie", "B"] * 15
    store.append_annotations([PF.build(pair, q, "ann", lab_, sample=("srs:0", O.inclusion_prob(k, N)))
                              for k, (q, lab_) in enumerate(zip(order, labels[:55]))])
    row = W.win_rate(store, (run, BASE), (run, CAND), "faithfulness")
    values = _judged(store, run, "faithfulness")
    yhat = np.sign(values[CAND] - values[BASE]).map({1.0: 1.0, 0.0: 0.5, -1.0: 0.0})
    human = {q: {"A": 1.0, "B": 0.0, "tie": 0.5}[x] for q, x in zip(order, labels[:55])}  # A is the candidate
    lab_q = [q for q in order[:55]]
    want = estimate([human[q] for q in lab_q], yhat[lab_q], yhat.drop(lab_q))
    assert row["status"] == "ok" and row["n_labelled"] == 55 and row["N"] == N
    for key in ("corrected", "ci_low", "ci_high", "rho", "lam"):
        assert row[key] == pytest.approx(want[key], abs=1e-12), key
    assert row["judge_win_rate"] == pytest.approx(yhat.mean(), abs=1e-12)
    # the other way round, the baseline's win rate: the complement, interval mirrored
    back = W.win_rate(store, (run, CAND), (run, BASE), "faithfulness")
    assert back["corrected"] == pytest.approx(1 - row["corrected"], abs=1e-12)
    assert back["ci_low"] == pytest.approx(1 - row["ci_high"], abs=1e-12)
    assert list(W.judge_preference(np.array([0.2, 0.5, 0.9]), np.array([0.5, 0.5, 0.1]), False)) == [0.0, 0.5, 1.0]


def test_compare_corrected_gives_the_win_rate_beside_the_judges_and_json_never_more_than_the_text(lab, capsys):
    store, run, pair, order = lab
    store.append_annotations([PF.build(pair, q, "ann", "B", sample=("srs:0", O.inclusion_prob(k, N)))
                              for k, q in enumerate(order[:49])])
    a, b = f"{run}:{BASE}", f"{run}:{CAND}"
    code, out, _ = main(capsys, store.root, "compare", a, b, "--corrected", "-m", "faithfulness", "--json")
    row = json.loads(out)["corrected_win_rate"][0]  # 49 labels: the text shows "49 of 50 labels", no number
    assert W.shown(row) == "49 of 50 labels" and row["n_labelled"] == 49 and row["N"] == N
    assert row["status"] == "too_few" and row["corrected"] is None and row["ci_low"] is None
    assert row["corrected_verdict"] is None and row["judge_win_rate"] is not None
    store.append_annotations([PF.build(pair, order[49], "ann", "B", sample=("srs:0", O.inclusion_prob(49, N)))])
    code, out, _ = main(capsys, store.root, "compare", a, b, "--corrected", "-m", "faithfulness")
    want = W.win_rate(store, (run, BASE), (run, CAND), "faithfulness")
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(b) and "n=50/60" in ln)
    assert f"judge {W.judge_shown(want)}" in line and f"corrected {W.shown(want)}" in line, line
    # people preferred the baseline every time: the win rate is 0, its interval never of zero width
    assert want["ci_low"] == want["corrected"] == 0.0 < 0.05 < want["ci_high"] < 0.5
    assert want["corrected_verdict"] == "worse"


def test_annotation_files_written_before_preferences_read_unchanged(lab):
    """A part file without the shown_left column (every file before preferences) still reads, its
    labels as they were; the contract refuses a preference it cannot map back to two systems."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pydantic import ValidationError

    from evalcore.schemas import Annotation

    store, run, pair, order = lab
    store.annotations_dir().mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "annotation_id": ["old"], "who": ["ann"], "when": pa.array([np.datetime64("2025-01-01T00:00:00", "us")]),
        "run_id": [run], "method": [BASE], "question_id": [order[0]], "target_kind": ["answer_class"],
        "target_ref": ["answer_class"], "judge_label": ["CORRECT"], "label": ["WRONG"], "note": [None],
        "sample_id": [None], "inclusion_prob": pa.array([None], pa.float64())}),
        store.annotations_dir() / "part-20250101T000000000000-old.parquet")
    got = stored(store)
    assert list(got.label) == ["WRONG"] and got.shown_left.isna().all()
    item = dict(annotation_id="x", who="ann", run_id=run, question_id=order[0], target_kind="preference", label="A")
    for bad in (dict(method=BASE, target_ref=f"preference:{run}:{CAND}"),  # named the other way round
                dict(method=CAND, target_ref=f"preference:{run}:{CAND}"),  # one system twice
                dict(method=CAND, target_ref=f"{run}:{BASE}"),  # no pair
                dict(method=CAND, target_ref=f"preference:{run}:{BASE}", label="C")):
        with pytest.raises(ValidationError):
            Annotation(**{**item, **bad})
    with pytest.raises(ValidationError):
        Annotation(**{**item, "method": BASE, "target_kind": "answer_class", "target_ref": "answer_class",
                      "label": "CORRECT", "shown_left": "A"})
