"""A random sample cannot be faked by accident (issue 35, item 1).

A label naming a sample is a claim; `labels import` checks it against the sample as a whole: the
sample's labelled answers (stored and new) are the first answers of the seed's order, each with
the inclusion probability its place gives, under one sample id grammar. Anything else is one
`error:` line naming file, record and field (nothing stored), or is imported `--as-hand-picked`
and never feeds an estimate. Stored samples that fail (written before the check, or broken
since) feed nothing, and `store check` names them; two samples in one population are never
averaged together.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys

import numpy as np
import pytest


from evalcore.analysis.labels import annotations as A
from evalcore.analysis.labels import corrected as C
from evalcore.analysis.labels import label_sampling as S
from evalcore.analysis.labels import label_units as U
from evalcore.store import RunStore, query_df

METHOD, OTHER = "basic_search", "local_search"
N = 30  # questions: inclusion probabilities 20/30 for the first batch, 1.0 after


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from evalcore.demo.synthetic import build_store

    root = tmp_path_factory.mktemp("samples") / "runs"
    build_store(root, n_runs=1, n_questions=N, n_metrics=4)
    return root


@pytest.fixture
def lab(base, tmp_path):
    """A fresh copy of the small store for each test: (store, run id)."""
    root = tmp_path / "runs"
    shutil.copytree(base, root)
    store = RunStore(root)
    return store, store.run_ids()[0]


def main(capsys, root, *args) -> tuple[int, str, str]:
    """The CLI in this process, as the console script runs it: (exit code, stdout, stderr)."""
    from evalcore.cli.main import main as cli

    capsys.readouterr()
    old = sys.argv
    sys.argv = ["evalcore", "--store", str(root), *args]
    try:
        cli()
        code = 0
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old
    out = capsys.readouterr()
    return code, out.out, out.err


def judge(store, run, method=METHOD) -> dict[str, str]:
    got = query_df(store, "SELECT question_id, label FROM metrics WHERE run_id = ? AND method = ? "
                          "AND metric = 'answer_class'", [run, method])
    return dict(zip(got.question_id, got.label))


def seq(store, run, metric="answer_class", seed=0, method=METHOD) -> list[str]:
    return S.order(U.answers(store, run, method, metric).question_id.tolist(), seed)


def records(store, run, qids, sample="srs:0", prob=None, method=METHOD, seed=0) -> list[dict]:
    """answer_class records for `qids`; `prob`: a fixed (made-up) probability, else the right one."""
    order = seq(store, run, seed=seed, method=method)
    labels = judge(store, run, method)
    return [{"run": run, "method": method, "question_id": q, "metric": "answer_class", "target": "",
             "label": labels[q].lower(), "who": "ann", "sample_id": sample,
             "inclusion_prob": prob if prob is not None else S.inclusion_prob(order.index(q), len(order))}
            for q in qids]


def write(path, rows) -> str:
    if str(path).endswith(".jsonl"):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    return str(path)


def stored(store) -> int:
    return int(query_df(store, "SELECT count(*) AS n FROM annotations").n[0])


def refused(capsys, store, path, record, field, *words, extra=()):
    """The import is one `error:` line naming file, record and field, exit 2, nothing stored."""
    before = stored(store)
    code, _, err = main(capsys, store.root, "labels", "import", path, *extra)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert f"{path}, record {record}, field '{field}'" in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert stored(store) == before
    return lines[0]


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_hand_picked_answers_with_a_real_seed_are_refused_or_imported_as_hand_picked(lab, tmp_path, capsys, ext):
    """The issue's case: the answers the judge called CORRECT, labelled, claimed as `srs:3` with a
    made-up probability. Refused at the first record breaking the order; `--as-hand-picked`
    stores them without sample fields, and no estimate counts them."""
    store, run = lab
    labels = judge(store, run)
    order = seq(store, run, seed=3)
    picked = [q for q in sorted(labels) if labels[q] == "CORRECT"]
    assert 0 < len(picked) < N and set(picked) != set(order[:len(picked)])
    path = write(tmp_path / f"picked.{ext}", records(store, run, picked, "srs:3", prob=0.5))
    first_gap = next(p for p, q in enumerate(order) if q not in set(picked))
    want = next(i for i, q in enumerate(picked, 1) if order.index(q) > first_gap)
    refused(capsys, store, path, want, "sample_id", "srs:3", "no gap")

    code, out, err = main(capsys, store.root, "labels", "import", path, "--as-hand-picked")
    assert code == 0 and f"imported {len(picked)} labels as hand-picked" in out, err
    got = query_df(store, "SELECT sample_id, inclusion_prob FROM annotations")
    assert len(got) == len(picked) and got.sample_id.isna().all() and got.inclusion_prob.isna().all()
    est = C.system_estimate(store, run, METHOD, "answer_class")
    assert est["n_labelled"] == 0 and est["corrected"] is None


def test_a_true_sample_imports_and_grows_only_from_where_it_stopped(lab, tmp_path, capsys):
    store, run = lab
    order = seq(store, run)
    first = write(tmp_path / "a.csv", records(store, run, order[:12]))
    code, out, err = main(capsys, store.root, "labels", "import", first)
    assert code == 0 and "imported 12 labels" in out, err
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 12
    # skipping answers 13-14 and going on at 15 leaves a gap: refused, naming the first record after it
    refused(capsys, store, write(tmp_path / "b.csv", records(store, run, order[14:20])), 1, "sample_id",
            f"answer 13 ({order[12]!r}) is not labelled")
    more = write(tmp_path / "c.csv", records(store, run, order[12:25]))
    code, out, err = main(capsys, store.root, "labels", "import", more)
    assert code == 0, err
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 25


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_a_valid_prefix_with_wrong_probabilities_is_refused(lab, tmp_path, capsys, ext):
    store, run = lab
    order = seq(store, run)
    rows = records(store, run, order[:24])
    assert rows[0]["inclusion_prob"] == pytest.approx(20 / 30) and rows[23]["inclusion_prob"] == 1.0
    refused(capsys, store, write(tmp_path / f"flat.{ext}", records(store, run, order[:24], prob=0.2565)), 1,
            "inclusion_prob", "0.2565", "answer 1 of 30", repr(20 / 30))
    rows[21]["inclusion_prob"] = 20 / 30  # the last batch's answer claiming the first batch's probability
    refused(capsys, store, write(tmp_path / f"one.{ext}", rows), 22, "inclusion_prob", "answer 22 of 30")


@pytest.mark.parametrize("bad", ["hello", "srs: 0", "srs:00", "srs:\uff10", "\u0455rs:0", "srs:0\u200b", "SRS:0",
                                 "srs:-0", "srs:0.0", "srs:+0", "srs:", "srs:0:1"])
def test_sample_ids_follow_one_grammar(lab, tmp_path, capsys, bad):
    """Anything but `srs:<seed>` in ASCII digits is refused naming the field: never counted random
    (full-width digits, a Cyrillic look-alike, a zero-width space, a sign, a leading zero)."""
    store, run = lab
    rows = records(store, run, seq(store, run)[:3])
    rows[1]["sample_id"] = bad
    refused(capsys, store, write(tmp_path / "ids.jsonl", rows), 2, "sample_id", "srs:<seed>")


def test_outer_whitespace_of_a_sample_id_is_dropped_as_for_every_id(lab, tmp_path, capsys):
    store, run = lab
    rows = records(store, run, seq(store, run)[:2], sample=" srs:0\t")
    code, _, err = main(capsys, store.root, "labels", "import", write(tmp_path / "ws.jsonl", rows))
    assert code == 0, err
    assert set(query_df(store, "SELECT sample_id FROM annotations").sample_id) == {"srs:0"}


def test_duplicated_records_count_once_and_each_copy_is_checked(lab, tmp_path, capsys):
    store, run = lab
    order = seq(store, run)
    rows = records(store, run, order[:10])
    twice = [r for pair in zip(rows, rows) for r in pair]  # 20 records, 10 answers
    code, _, err = main(capsys, store.root, "labels", "import", write(tmp_path / "twice.csv", twice))
    assert code == 0, err
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 10
    again = records(store, run, order[:10])  # a re-import of the same sample is fine...
    copy = dict(again[4], inclusion_prob=1.0)  # ...but a copy claiming another probability is not
    refused(capsys, store, write(tmp_path / "dup.csv", again + [copy]), 11, "inclusion_prob")


def test_labels_for_answers_not_in_the_run_are_refused(lab, tmp_path, capsys):
    store, run = lab
    rows = records(store, run, seq(store, run)[:3])
    rows[2] = dict(rows[2], question_id="q99999")
    refused(capsys, store, write(tmp_path / "ghost.csv", rows), 3, "question_id")
    # and the rule itself: a label of an answer outside the population never passes
    from evalcore.analysis.labels import sample_order as O

    problems = O.verify("srs:0", ["a", "b"], {"a", "b", "zz"}, [(1, "a", 1.0), (2, "zz", 1.0)])
    assert [(p.tag, p.field) for p in problems] == [(2, "question_id")]


def test_two_sample_ids_for_one_population_are_refused(lab, tmp_path, capsys):
    store, run = lab
    rows = records(store, run, seq(store, run)[:3]) + records(store, run, seq(store, run, seed=1)[:2], "srs:1", seed=1)
    refused(capsys, store, write(tmp_path / "two.csv", rows), 4, "sample_id", "srs:0", "srs:1")
    # one seed per population; another population of the same file may walk another seed
    ok = records(store, run, seq(store, run)[:3]) + records(store, run, seq(store, run, seed=1, method=OTHER)[:2],
                                                             "srs:1", method=OTHER, seed=1)
    code, _, err = main(capsys, store.root, "labels", "import", write(tmp_path / "ok.csv", ok))
    assert code == 0, err
    # a second seed beside a stored sample of the population is refused too
    refused(capsys, store, write(tmp_path / "second.csv", records(store, run, seq(store, run, seed=2)[:2], "srs:2",
                                                                  seed=2)), 1, "sample_id", "already holds")


def test_an_answer_labelled_in_part_may_only_end_a_sample(lab, tmp_path, capsys):
    """faithfulness: a sample's answer with some claims unlabelled is "not yet labelled"; a fully
    labelled answer after it is refused, one at the end is fine."""
    store, run = lab
    order = seq(store, run, "faithfulness")

    def claims(qs, keep=None):
        out = []
        for q in qs:
            items = U.items_of_answer(store, run, METHOD, "faithfulness", q)
            for i, ref in enumerate(items.target_ref[: keep if q == qs[1] else None]):
                out.append({"run": run, "method": METHOD, "question_id": q, "metric": "faithfulness",
                            "target": ref.rsplit(":", 1)[1], "label": "supported", "who": "ann", "sample_id": "srs:0",
                            "inclusion_prob": S.inclusion_prob(order.index(q), len(order))})
        return out

    rows = claims(order[:3], keep=1)
    where = next(i for i, r in enumerate(rows, 1) if r["question_id"] == order[2])
    refused(capsys, store, write(tmp_path / "part.csv", rows), where, "sample_id", "not fully labelled")
    code, _, err = main(capsys, store.root, "labels", "import", write(tmp_path / "end.csv", claims(order[:2], keep=1)))
    assert code == 0, err
    ans = U.answers(store, run, METHOD, "faithfulness").set_index("question_id")
    assert ans.loc[order[0], "sampled"] and ans.loc[order[1], "human"] != ans.loc[order[1], "human"]  # NaN


def _sample(store, run, qids, sid, order, label="CORRECT", method=METHOD):
    """Labels appended straight to the store (as the Annotate page does, no import check)."""
    labels = judge(store, run, method)
    rows = [A.build(dict(run_id=run, method=method, question_id=q, target_kind="answer_class",
                         target_ref="answer_class", judge_label=labels[q]), "ann", label, None,
                    (sid, S.inclusion_prob(order.index(q), len(order)) if order else 0.2565)) for q in qids]
    store.append_annotations(rows)


def test_two_samples_in_one_population_are_never_averaged(lab):
    """The page can walk another seed (?seed=): each verified sample is random, their union is
    not. The estimate is one sample's (the larger), equal to the estimator on its labels alone."""
    from evalcore.analysis.labels.ppi_estimate import estimate

    store, run = lab
    o0, o5 = seq(store, run, seed=0), seq(store, run, seed=5)
    _sample(store, run, o0[:25], "srs:0", o0, "CORRECT")
    _sample(store, run, o5[:12], "srs:5", o5, "WRONG")
    assert len(set(o0[:25]) | set(o5[:12])) > 25
    est = C.system_estimate(store, run, METHOD, "answer_class", withhold=False)  # 25 < 50: shown unwithheld
    assert est["n_labelled"] == 25
    ans = U.answers(store, run, METHOD, "answer_class").set_index("question_id")
    lab_q = list(o0[:25])
    assert set(ans.index[ans.sampled]) == set(lab_q)
    y = ans.loc[lab_q, "human"].to_numpy(float)
    rest = ans.drop(index=lab_q).judge.to_numpy(float)
    # the estimator on the larger sample's labels alone (all CORRECT: its interval is the honest
    # one near the scale's edge, not ppi_py's, docs/labels.md)
    alone = estimate(y, ans.loc[lab_q, "judge"].to_numpy(float), rest, withhold=False)
    assert (est["ci_low"], est["ci_high"]) == pytest.approx((alone["ci_low"], alone["ci_high"]))
    assert est["ci_low"] is not None


def test_stored_labels_claiming_a_sample_they_are_not_feed_nothing(lab):
    """Labels stored before the check, with probabilities 1.0 and 0.2565 on answers scattered
    over the order: not a sample, so no estimate, whatever they say."""
    store, run = lab
    o0 = seq(store, run)
    _sample(store, run, o0[3:30:2], "srs:0", None)
    _sample(store, run, o0[:2], "srs:0", [q for q in o0] + ["x"] * 10)  # N = 40: wrong for a population of 30
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 0
    assert not U.answers(store, run, METHOD, "answer_class").sampled.any()


def test_show_corrected_says_why_labels_claiming_a_sample_feed_nothing(lab, capsys):
    """Not "no randomly sampled labels yet" when there are some: the failed check, and where to
    see them all."""
    store, run = lab
    _sample(store, run, seq(store, run)[3:30:2], "srs:0", None)
    code, out, err = main(capsys, store.root, "show", run, "--corrected")
    assert code == 0, out + err
    line = next(ln for ln in (out + err).splitlines() if ln.startswith("corrected:"))
    assert "no verified random sample" in line and "'srs:0'" in line and "store check" in line, line
    assert "yet" not in line


def test_store_check_reports_a_sample_that_no_longer_walks_its_order(lab, capsys):
    store, run = lab
    order = seq(store, run)
    _sample(store, run, order[:10], "srs:0", order)
    code, out, err = main(capsys, store.root, "store", "check")
    assert code == 0 and "WARNING" not in out + err, out + err
    # a label of answer 3 taken back (the queue's Undo): the sample now has a gap before answers 4-10
    A.undo(store, A.build(dict(run_id=run, method=METHOD, question_id=order[2], target_kind="answer_class",
                               target_ref="answer_class", judge_label=None), "ann", "CORRECT", None))
    code, out, err = main(capsys, store.root, "store", "check", run)
    lines = [ln for ln in (out + err).splitlines() if ln.startswith("WARNING")]
    assert code == 0 and len(lines) == 1, out + err
    assert run in lines[0] and "'srs:0'" in lines[0] and f"{METHOD}/answer_class" in lines[0]
    assert f"answer 3 ({order[2]!r}) is not fully labelled" in lines[0] and "hand-picked" in lines[0]
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 0
    # the page offers that answer next: labelled again, the sample is whole
    assert S.next_answer(store, run, METHOD, "answer_class").question_id == order[2]


def test_store_check_names_a_sample_id_outside_the_grammar(lab, capsys):
    """A label stored with `sample_id "hello"` before the grammar existed (written as a part file
    of that time): store check names it; it never counts as random."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store, run = lab
    q = seq(store, run)[0]
    store.annotations_dir().mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "annotation_id": ["old"], "who": ["ann"], "when": pa.array([np.datetime64("2025-01-01T00:00:00", "us")]),
        "run_id": [run], "method": [METHOD], "question_id": [q], "target_kind": ["answer_class"],
        "target_ref": ["answer_class"], "judge_label": ["CORRECT"], "label": ["WRONG"], "note": [None],
        "sample_id": ["hello"], "inclusion_prob": [1.0]}), store.annotations_dir() / "part-old.parquet")
    assert query_df(store, "SELECT sample_id FROM annotations").sample_id.tolist() == ["hello"]
    assert C.system_estimate(store, run, METHOD, "answer_class")["n_labelled"] == 0
    code, out, err = main(capsys, store.root, "store", "check")
    assert code == 0 and "WARNING" in out and "'hello'" in out and "srs:<seed>" in out, out + err
