"""Repeated question ids: by default an error that names both records and says how to go on;
with keep_first the later copies are dropped and a DuplicateIdsDropped warning names each one.
Covered for every file format, the registry, `evalcore stats` and `evalcore import --dataset`."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.datasets.graphrag_bench import graphrag_question
from evalcore.datasets.native import check_unique, noting_dropped
from evalcore.datasets.registry import FORMATS, DatasetFormat, load_questions, register
from evalcore.errors import DroppedDuplicate, DuplicateIdsDropped, InputError
from evalcore.schemas import EvalQuestion
from evalcore.store import RunStore

runner = CliRunner()
NOVEL_DUP = "Novel-55f0c0e2"


def keep_first(path: Path, fmt: str | None = None) -> tuple[list[EvalQuestion], list[DuplicateIdsDropped]]:
    """Load with keep_first; the questions and the DuplicateIdsDropped warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        questions = load_questions(path, fmt, on_duplicate="keep_first")
    return questions, [w.message for w in caught if isinstance(w.message, DuplicateIdsDropped)]


# ---- the real GraphRAG-Bench file ------------------------------------------------------

@pytest.fixture(scope="module")
def novel(shared_data) -> Path:
    return shared_data / "graphrag_bench" / "novel_questions.json"


def test_keep_first_on_the_real_file_keeps_record_330(novel):
    raw = json.loads(novel.read_text(encoding="utf-8"))
    assert [i for i, r in enumerate(raw, start=1) if r["id"] == NOVEL_DUP] == [330, 872]
    questions, warned = keep_first(novel)
    assert len(questions) == len(raw) - 1
    assert [q.id for q in questions] == [r["id"] for i, r in enumerate(raw, start=1) if i != 872]
    (kept,) = [q for q in questions if q.id == NOVEL_DUP]
    assert kept == graphrag_question(raw[329], str(novel), 330)
    assert kept.ground_truth != raw[871]["answer"]   # the corrupt copy is the one that went
    (warning,) = warned
    assert warning.file == str(novel)
    assert warning.dropped == (DroppedDuplicate(id=NOVEL_DUP, record=872, kept_record=330),)
    assert f"'{NOVEL_DUP}' first kept at record 330, dropped record 872" in str(warning)


def test_default_is_an_error_naming_both_records_and_the_way_out(novel):
    with pytest.raises(InputError) as info:
        load_questions(novel)
    err = info.value
    assert (err.record, err.field) == (872, "id")
    assert f"duplicate question id '{NOVEL_DUP}' (first at record 330)" in str(err)
    assert "--on-duplicate keep-first" in str(err) and "on_duplicate: keep_first" in str(err)


def test_stats_flag_keeps_the_first_copy_and_prints_one_line_per_drop(novel):
    res = runner.invoke(app, ["stats", str(novel), "--json", "--on-duplicate", "keep-first"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["n_questions"] == 2009   # stdout stays pure JSON
    assert res.stderr.splitlines() == [
        f"warning: {novel}: dropped record 872, a repeated question id '{NOVEL_DUP}' (first kept at record 330)"]


def test_stats_default_still_stops_with_the_hint(novel):
    res = runner.invoke(app, ["stats", str(novel)])
    assert res.exit_code != 0 and isinstance(res.exception, InputError)
    assert "--on-duplicate keep-first" in str(res.exception)


@pytest.mark.parametrize("value", ["keep_last", "drop", ""])
def test_stats_flag_refuses_other_values_as_a_usage_error(tmp_path, value):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q?"}\n', encoding="utf-8")
    res = runner.invoke(app, ["stats", str(path), "--on-duplicate", value])
    assert res.exit_code == 2 and "--on-duplicate" in res.output


# ---- every file format -----------------------------------------------------------------

def _squad(*qas: tuple[str, str]) -> str:
    return json.dumps({"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [
        {"id": qid, "question": text, "answers": [{"text": "c"}]} for qid, text in qas]}]}]})


# format -> (file name, text with id "a" twice (first, then second), dropped record, kept record)
DUPLICATED = {
    "native": ("q.jsonl", '{"id": "a", "question": "first?"}\n\n{"id": "a", "question": "second?"}\n', 3, 1),
    "korean_plan": ("eval_questions.yaml", "single_hop:\n  - id: a\n    query: first?\n"
                    "inference:\n  - id: a\n    query: second?\n", "inference #1", "single_hop #1"),
    "graphrag_bench": ("g.json", json.dumps([{"id": "a", "question": "first?", "answer": "A"},
                                             {"id": "a", "question": "second?", "answer": "B"}]), 2, 1),
    "hotpotqa": ("h.json", json.dumps([{"_id": "a", "question": "first?", "answer": "A"},
                                       {"_id": "a", "question": "second?", "answer": "B"}]), 2, 1),
    "squad_v2": ("s.json", _squad(("a", "first?"), ("a", "second?")),
                 "article 1 paragraph 1 question 2", "article 1 paragraph 1 question 1"),
    "ragchecker": ("r.json", json.dumps({"results": [{"query_id": "a", "query": "first?"},
                                                     {"query_id": "a", "query": "second?"}]}), 2, 1),
    "trec": ("topics.t.txt", "a\tfirst?\na\tsecond?\n", 2, 1),
}


def _write(folder: Path, fmt: str) -> Path:
    name, text, _, _ = DUPLICATED[fmt]
    path = folder / name
    path.write_text(text, encoding="utf-8")
    if fmt == "trec":
        (folder / "qrels.t.txt").write_text("a 0 d1 1\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", sorted(DUPLICATED))
def test_every_format_keeps_the_first_copy_with_its_own_record_labels(tmp_path, fmt):
    _, _, record, kept_record = DUPLICATED[fmt]
    path = _write(tmp_path, fmt)
    questions, warned = keep_first(path, fmt)
    assert [(q.id, q.question) for q in questions] == [("a", "first?")]
    assert [w.dropped for w in warned] == [(DroppedDuplicate(id="a", record=record, kept_record=kept_record),)]


@pytest.mark.parametrize("fmt", sorted(DUPLICATED))
def test_every_format_errors_by_default_with_the_hint(tmp_path, fmt):
    _, _, record, kept_record = DUPLICATED[fmt]
    with pytest.raises(InputError) as info:
        load_questions(_write(tmp_path, fmt), fmt)
    assert info.value.record == record and f"first at record {kept_record}" in str(info.value)
    assert "--on-duplicate keep-first" in str(info.value)


def test_unique_ids_give_no_warning(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q?"}\n{"id": "b", "question": "R?"}\n', encoding="utf-8")
    questions, warned = keep_first(path)
    assert [q.id for q in questions] == ["a", "b"] and warned == []


def test_every_repeat_is_named_in_one_warning_per_file():
    qs = [EvalQuestion(id=i, question=f"{i} at {n}?") for n, i in enumerate("abaab", start=1)]
    with pytest.warns(DuplicateIdsDropped) as record:
        out = check_unique(qs, "f.jsonl", "keep_first")
    assert [q.question for q in out] == ["a at 1?", "b at 2?"]
    (warning,) = [w.message for w in record]
    assert [(d.id, d.record, d.kept_record) for d in warning.dropped] == [("a", 3, 1), ("a", 4, 1), ("b", 5, 2)]
    assert len(warning.lines()) == 3 and all(line.startswith("f.jsonl: dropped record ") for line in warning.lines())


def test_an_unknown_mode_is_refused(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q?"}\n', encoding="utf-8")
    for call in (lambda: load_questions(path, on_duplicate="keep_last"),
                 lambda: check_unique([], "f", "keep-first")):  # the CLI spelling is not a mode
        with pytest.raises(ValueError, match="on_duplicate must be one of error, keep_first"):
            call()


def test_noting_dropped_lists_the_drops_and_still_warns():
    qs = [EvalQuestion(id="a", question="Q?"), EvalQuestion(id="a", question="R?")]
    with pytest.warns(DuplicateIdsDropped):
        with noting_dropped() as dropped:
            check_unique(qs, "f.jsonl", "keep_first")
    assert dropped == [DroppedDuplicate(id="a", record=2, kept_record=1)]


def test_a_loader_registered_without_on_duplicate_keeps_working(monkeypatch, tmp_path):
    monkeypatch.setattr("evalcore.datasets.registry.FORMATS", dict(FORMATS))
    register(DatasetFormat("plain", lambda p: [EvalQuestion(id="x", question="Q?")], lambda p: False, "test"))
    path = tmp_path / "anything.txt"
    path.write_text("x", encoding="utf-8")
    assert [q.id for q in load_questions(path, "plain")] == ["x"]
    with pytest.raises(InputError, match="plain loader cannot keep the first copy"):
        load_questions(path, "plain", on_duplicate="keep_first")


# ---- evalcore import --dataset ---------------------------------------------------------

def test_import_with_a_duplicated_dataset(tmp_path):
    dataset = _write(tmp_path, "native")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"question_id": "a", "method": "m", "answer": "first"}\n', encoding="utf-8")
    root = tmp_path / "runs"
    base = ["--store", str(root), "import", str(answers), "--dataset", str(dataset)]
    res = runner.invoke(app, base)
    assert res.exit_code != 0 and "--on-duplicate keep-first" in str(res.exception)
    assert runner.invoke(app, [*base, "--on-duplicate", "nope"]).exit_code == 2
    res = runner.invoke(app, [*base, "--on-duplicate", "keep-first"])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith(f"warning: {dataset}: dropped record 3, a repeated question id 'a' "
                                 "(first kept at record 1)\n")
    manifest = RunStore(root).manifest(res.stdout.strip().splitlines()[-1])
    assert manifest.dataset["duplicates_dropped"] == [{"id": "a", "record": 3, "kept_record": 1}]
    assert manifest.dataset["n_questions"] == 1
