"""One rule for the names people type (issue 34, items 7b and 3): NFC, no outer whitespace.

A method imported as "alpha " could be labelled, but `labels import` strips its cells, so its
labels never re-imported; question ids in NFC and NFD never met. Now evalcore.schemas.ids is
the one rule, applied on every way in (answers and question files, traces, TREC files, labels,
configs, run names, judge specs, `RUN:method` arguments, dashboard URLs), and names stored by an
older evalcore are still found (by their canonical form) and kept as stored.
"""

from __future__ import annotations

import csv
import json
import unicodedata

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import INVISIBLE, SPACES, canonical_id, id_sql, match_name
from evalcore.store import RunStore, query_df

runner = CliRunner()
CAFE_NFD = unicodedata.normalize("NFD", "café")
NAMES = ["q1", " q1", "q1\t", "\u00a0q1\u3000", "\u2000q\u2001", CAFE_NFD, f" {CAFE_NFD}\n", "a  b", "Å", "A\u030a",
         "\u1100\u1161\u11a8", "x\u0301\u0301", " \u0301x", "", "\ufeffq1\u200b", "a\u200bb"]


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _code(res) -> int:
    return 2 if isinstance(res.exception, EvalcoreError) else res.exit_code


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _labels_csv(path, rows):
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["run", "method", "question_id", "metric", "target", "label", "who"])
        w.writeheader()
        w.writerows(rows)
    return path


def test_the_rule_is_pythons_whitespace_and_nfc_and_sql_agrees():
    import duckdb

    assert set(SPACES) == {chr(c) for c in range(0x110000) if chr(c).isspace()} | set(INVISIBLE)
    for name in NAMES:
        once = canonical_id(name)
        assert once == unicodedata.normalize("NFC", name).strip().strip(INVISIBLE) and canonical_id(once) == once
    con = duckdb.connect()
    got = [r[0] for r in con.execute(f"SELECT {id_sql('x')} FROM unnest($n) WITH ORDINALITY t(x, i) ORDER BY i",
                                     {"n": NAMES}).fetchall()]
    assert got == [canonical_id(n) for n in NAMES]
    assert match_name("alpha", ["alpha ", "beta"]) == "alpha " and match_name("alpha ", ["alpha"]) == "alpha"
    assert match_name("alpha", ["alpha ", " alpha"]) is None  # two stored spellings: only an exact name


def test_a_method_with_outer_spaces_imports_canonical_and_its_labels_round_trip(tmp_path):
    root = tmp_path / "runs"
    answers = _jsonl(tmp_path / "a.jsonl", [
        {"question_id": f" q{i}\u00a0", "question": f"Question {i}?", "answer": "Paris", "ground_truth": "Paris",
         "method": "alpha "} for i in range(3)])
    res = _cli(root, "import", str(answers))
    assert res.exit_code == 0, res.output
    run = res.stdout.strip().splitlines()[-1]
    assert _cli(root, "score", run, "--metrics", "token_f1", "--no-progress").exit_code == 0
    store = RunStore(root)
    stored = query_df(store, "SELECT DISTINCT method, question_id FROM responses ORDER BY question_id")
    assert list(stored.method) == ["alpha"] * 3 and list(stored.question_id) == ["q0", "q1", "q2"]
    labels = _labels_csv(tmp_path / "l.csv", [{"run": run, "method": "alpha ", "question_id": f"q{i} ",
                                               "metric": "token_f1", "target": "", "label": "1", "who": " ann "}
                                              for i in range(3)])
    assert _cli(root, "labels", "import", str(labels)).exit_code == 0
    out = tmp_path / "out.csv"
    assert _cli(root, "labels", "export", "-o", str(out)).exit_code == 0
    res = _cli(root, "labels", "import", str(out))  # the export re-imports
    assert res.exit_code == 0, res.output
    ann = query_df(store, "SELECT DISTINCT method, who FROM annotations")
    assert list(ann.method) == ["alpha"] and list(ann.who) == ["ann"]


def _older_run(store, name, method, qids):
    """A run as an evalcore before the rule stored it: names exactly as given."""
    from evalcore import __version__
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    from evalcore.schemas.ids import STORED
    from evalcore.store import FORMAT_VERSION, new_run_id

    qs = [EvalQuestion.model_validate({"id": q, "question": f"About {q}?", "ground_truth": "Paris"}, context=STORED)
          for q in qids]
    rs = [EvalResponse.model_validate({"question_id": q, "method": m, "answer": "Paris" if m == method else "Rome"},
                                      context=STORED) for q in qids for m in (method, "beta")]
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=new_run_id(name), name=name, status="complete",
                           evalcore_version=__version__, methods=sorted({method, "beta"}),
                           counts={"questions": len(qs), "responses": len(rs), "errors": 0})
    with store.staged_run(manifest) as writer:
        writer.write_questions(qs)
        writer.write_responses(rs)
        writer.write_manifest(manifest)
    return manifest.run_id


def test_names_stored_before_the_rule_are_still_found_and_kept(tmp_path):
    """The issue's case on a run an older evalcore wrote: method "alpha ", NFD question ids.
    Labels naming "alpha" / NFC ids (or the export's own spelling) attach to the stored answers;
    RUN:alpha selects the stored method; a re-score keeps the stored keys."""
    root = tmp_path / "runs"
    store = RunStore(root)
    qids = [f"{CAFE_NFD}-{i}" for i in range(4)]
    run = _older_run(store, "old", "alpha ", qids)
    assert _cli(root, "score", run, "--metrics", "token_f1", "--no-progress").exit_code == 0
    keys = query_df(store, "SELECT DISTINCT method, question_id FROM metrics WHERE method <> 'beta'")
    assert set(keys.method) == {"alpha "} and set(keys.question_id) == set(qids)  # re-score kept the stored keys
    labels = _labels_csv(tmp_path / "l.csv", [{"run": run, "method": "alpha", "question_id": canonical_id(q),
                                               "metric": "token_f1", "target": "", "label": "0.5", "who": "ann"}
                                              for q in qids])
    res = _cli(root, "labels", "import", str(labels))
    assert res.exit_code == 0, res.output
    ann = query_df(store, "SELECT method, question_id FROM annotations")
    assert set(ann.method) == {"alpha "} and set(ann.question_id) == set(qids)
    out = tmp_path / "out.csv"
    assert _cli(root, "labels", "export", "-o", str(out)).exit_code == 0
    assert _cli(root, "labels", "import", str(out)).exit_code == 0
    assert len(query_df(store, "SELECT * FROM annotations")) == 8
    for ref in (f"{run}:alpha", f"{run}:alpha ", f"{run}: alpha"):
        res = _cli(root, "compare", ref, f"{run}:beta", "--metrics", "token_f1", "--json")
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["baseline"] == f"{run}:alpha "


def test_answers_and_dataset_ids_meet_in_any_unicode_form(tmp_path):
    root = tmp_path / "runs"
    dataset = _jsonl(tmp_path / "q.jsonl", [{"id": f"café-{i}", "question": f"Question {i}?", "ground_truth": "Paris"}
                                            for i in range(3)])
    answers = _jsonl(tmp_path / "a.jsonl", [{"question_id": f" {CAFE_NFD}-{i}", "answer": "Paris"} for i in range(3)])
    res = _cli(root, "import", str(answers), "--dataset", str(dataset))  # no question text: found by id
    assert res.exit_code == 0, res.output
    rows = query_df(RunStore(root), "SELECT question_id, ground_truth FROM questions ORDER BY question_id")
    assert list(rows.question_id) == [f"café-{i}" for i in range(3)] and set(rows.ground_truth) == {"Paris"}
    # derived ids: the same question text in NFC and NFD is one question
    from evalcore.schemas.ids import text_question_id

    assert text_question_id("Où est le café ?") == text_question_id(unicodedata.normalize("NFD", " Où est le café ?"))


def test_trace_ids_and_methods_follow_the_rule(tmp_path):
    import pandas as pd

    from tests.traces.test_trace_files import dataframe_rows

    rows = dataframe_rows(method="dense ")
    for row in rows:
        if row["span_kind"] == "CHAIN":
            meta = row["attributes.metadata"]
            row["attributes.metadata"] = {**meta, "question_id": f"{CAFE_NFD}-{meta['question_id']}\t"}
    spans = tmp_path / "spans.parquet"
    pd.DataFrame(rows).to_parquet(spans)
    dataset = _jsonl(tmp_path / "q.jsonl", [{"id": f"café-q{i}", "question": f"Question {i}?", "ground_truth": "x"}
                                            for i in (1, 2, 3)])
    root = tmp_path / "runs"
    res = _cli(root, "import", str(spans), "--method-from", "metadata.method", "--dataset", str(dataset),
               "--id-from", "metadata.question_id")
    assert res.exit_code == 0, res.output
    got = query_df(RunStore(root), "SELECT method, question_id FROM responses ORDER BY question_id")
    assert list(got.question_id) == ["café-q1", "café-q2", "café-q3"] and set(got.method) == {"dense"}


def test_trec_topics_and_qrels_pair_in_any_form(tmp_path):
    from evalcore.datasets.trec import load_trec

    topics = tmp_path / "topics.t.txt"
    topics.write_text(f"{CAFE_NFD}1\tWhere is the café?\n", encoding="utf-8")
    qrels = tmp_path / "qrels.t.txt"
    qrels.write_text("café1 0 doc-7 1\n", encoding="utf-8")
    (question,) = load_trec(topics, qrels)
    assert question.id == "café1" and question.gold_chunk_ids == ["doc-7"]


def test_typed_names_run_names_judges_configs_and_urls(tmp_path):
    from evalcore.runner.config import EvalConfig
    from evalcore.judges import make_judge
    from evalcore.schemas import Annotation, EvalQuestion
    from evalcore.ui.safe_widgets import _url_choice

    assert EvalQuestion(id=" q1\n", question="x").id == "q1"
    with pytest.raises(ValueError):
        EvalQuestion(id="\u3000", question="x")
    assert Annotation(annotation_id="a", who=f" {CAFE_NFD} ", run_id="r", target_kind="metric", target_ref="m",
                      label="1").who == "café"
    config = EvalConfig(target="http://127.0.0.1:9", dataset="q.jsonl", methods=[" alpha ", "beta\t"])
    assert [m.name for m in config.methods] == ["alpha", "beta"]
    assert make_judge(" heuristic\n").__class__.__name__ == "HeuristicJudge"
    root = tmp_path / "runs"
    answers = _jsonl(tmp_path / "a.jsonl", [{"question": "Why?", "answer": "Because."}])
    res = _cli(root, "import", str(answers), "--name", " nightly ")
    assert res.exit_code == 0, res.output
    store = RunStore(root)
    run = res.stdout.strip().splitlines()[-1]
    assert store.manifest(run).name == "nightly" and store.resolve(" nightly\t") == run
    options = {"r1:alpha ": 1, "r1:beta": 2}
    assert _url_choice("r1:alpha", options) == "r1:alpha " and _url_choice(f"r1:{CAFE_NFD}", options) is None
    assert _url_choice(" r1:beta ", options) == "r1:beta" and _url_choice("r2:beta", options) is None
