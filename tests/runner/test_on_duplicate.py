"""`on_duplicate` in live runs: the config key and the `--on-duplicate` flag reach the loader,
the manifest lists what keep_first dropped, and a resumed run re-reads the file the same way."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.runner.config import EvalConfig, load_config
from evalcore.errors import DuplicateIdsDropped, EvalcoreError, InputError
from evalcore.scoring.queries import run_questions
from evalcore.pipeline import resume_run
from evalcore.runner.question_selection import collect_questions

runner = CliRunner()
DROPPED = [{"id": "q1", "record": 3, "kept_record": 1}]
NOVEL_DUP = "Novel-55f0c0e2"


@pytest.fixture
def dup_file(tmp_path):
    """Native JSONL: q1, q2, then q1 again (line 3, a different question), then q3."""
    path = tmp_path / "dup.jsonl"
    rows = [("q1", "Who built the Tarn observatory?"), ("q2", "When did it open?"),
            ("q1", "A corrupt copy?"), ("q3", "What is the population of Lantern Point?")]
    path.write_text("".join(json.dumps({"id": i, "question": t, "ground_truth": "x"}) + "\n" for i, t in rows),
                    encoding="utf-8")
    return path


def _config(dataset, **extra) -> EvalConfig:
    return EvalConfig(target="http://127.0.0.1:9", dataset=str(dataset), progress=False, **extra)


# ---- plumbing through collect_questions --------------------------------------------------

def test_default_stops_with_the_hint(dup_file):
    with pytest.raises(InputError, match="--on-duplicate keep-first"):
        collect_questions(_config(dup_file))


def test_keep_first_records_the_drops_in_the_dataset_entry(dup_file):
    with pytest.warns(DuplicateIdsDropped, match="first kept at record 1, dropped record 3"):
        questions, info = collect_questions(_config(dup_file, on_duplicate="keep_first"))
    assert [q.id for q in questions] == ["q1", "q2", "q3"]
    assert questions[0].question == "Who built the Tarn observatory?"
    assert info["duplicates_dropped"] == DROPPED and info["n_total"] == 3


def test_several_datasets_each_list_their_own_drops(dup_file, tmp_path):
    clean = tmp_path / "clean.jsonl"
    clean.write_text('{"id": "z", "question": "Z?"}\n', encoding="utf-8")
    with pytest.warns(DuplicateIdsDropped):
        questions, info = collect_questions(EvalConfig(target="http://127.0.0.1:9", datasets=[str(dup_file), str(clean)],
                                                       on_duplicate="keep_first"))
    assert [p["duplicates_dropped"] for p in info["parts"]] == [DROPPED, []]
    assert len(questions) == 4


def test_config_key_accepts_both_spellings_and_nothing_else(dup_file, tmp_path):
    config = tmp_path / "eval.yaml"
    for value in ("keep_first", "keep-first"):
        config.write_text(f"target: http://127.0.0.1:9\ndataset: {dup_file.name}\non_duplicate: {value}\n",
                          encoding="utf-8")
        assert load_config(config).on_duplicate == "keep_first"
    assert load_config(config, on_duplicate="error").on_duplicate == "error"   # a flag wins
    config.write_text("target: http://127.0.0.1:9\ndataset: x.jsonl\non_duplicate: keep_last\n", encoding="utf-8")
    with pytest.raises(InputError, match="on_duplicate"):
        load_config(config)


# ---- evalcore run against the demo server ------------------------------------------------

def _run(store, *args):
    return runner.invoke(app, ["--store", str(store.root), "run", "--no-progress", "--no-score",
                               "--methods", "basic_search", *args])


def test_run_flag_keeps_the_first_copy(demo_server, store, dup_file):
    res = _run(store, "--target", demo_server.url, "--dataset", str(dup_file), "--on-duplicate", "keep-first")
    assert res.exit_code == 0, res.output
    assert (f"warning: {dup_file}: dropped record 3, a repeated question id 'q1' (first kept at record 1)"
            in res.stderr.splitlines())
    manifest = store.manifest(res.stdout.strip().splitlines()[-1])
    assert manifest.dataset["duplicates_dropped"] == DROPPED
    assert manifest.config["on_duplicate"] == "keep_first" and manifest.counts["questions"] == 3


def test_run_flag_overrides_the_config(demo_server, store, dup_file, tmp_path):
    config = tmp_path / "eval.yaml"
    config.write_text(f"target: {demo_server.url}\ndataset: {dup_file}\non_duplicate: keep_first\n",
                      encoding="utf-8")
    res = _run(store, "--config", str(config))
    assert res.exit_code == 0, res.output
    assert store.manifest(res.stdout.strip().splitlines()[-1]).dataset["duplicates_dropped"] == DROPPED
    res = _run(store, "--config", str(config), "--on-duplicate", "error")
    assert res.exit_code != 0 and "duplicate question id 'q1'" in str(res.exception)


def test_run_refuses_a_bad_flag_value(demo_server, store, dup_file):
    res = _run(store, "--target", demo_server.url, "--dataset", str(dup_file), "--on-duplicate", "keep_first")
    assert res.exit_code == 2 and store.run_ids() == []


def test_run_on_the_real_graphrag_file(demo_server, store, shared_data):
    novel = shared_data / "graphrag_bench" / "novel_questions.json"
    res = _run(store, "--target", demo_server.url, "--dataset", str(novel), "--samples", "3",
               "--on-duplicate", "keep-first")
    assert res.exit_code == 0, res.output
    assert f"dropped record 872, a repeated question id '{NOVEL_DUP}' (first kept at record 330)" in res.stderr
    dataset = store.manifest(res.stdout.strip().splitlines()[-1]).dataset
    assert dataset["duplicates_dropped"] == [{"id": NOVEL_DUP, "record": 872, "kept_record": 330}]
    assert dataset["n_total"] == 2009 and dataset["n_questions"] == 3


def test_resume_rereads_the_file_with_the_runs_own_setting(demo_server, store, dup_file):
    """A crash before the questions were stored makes resume read the file again; it must use
    the run's keep_first (from its manifest), or the duplicate would stop it."""
    res = _run(store, "--target", demo_server.url, "--dataset", str(dup_file), "--on-duplicate", "keep-first")
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    pointer_path = store.root / run_id / "tables.json"   # as if killed before the questions were written
    pointer = json.loads(pointer_path.read_text())
    (store.root / run_id / pointer["files"].pop("questions")).unlink()
    pointer_path.write_text(json.dumps(pointer))
    assert run_questions(store, run_id) == []
    with pytest.warns(DuplicateIdsDropped):
        again = resume_run(run_id, store, progress=False)
    assert again.status == "complete" and again.asked == 0
    assert [q.id for q in run_questions(store, run_id)] == ["q1", "q2", "q3"]
    # The flag alone cannot change how a run reads its dataset.
    res = runner.invoke(app, ["--store", str(store.root), "run", "--resume", run_id, "--on-duplicate", "error"])
    assert res.exit_code != 0 and isinstance(res.exception, EvalcoreError)
    assert "on_duplicate" in str(res.exception)
