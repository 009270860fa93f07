"""Format detection on every real file, and `evalcore stats` / `evalcore datasets` through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.datasets.registry import FORMATS, DatasetFormat, detect_format, load_questions, register
from evalcore.errors import InputError

FIXTURE = Path(__file__).parent / "fixtures" / "eval_questions_ko.yaml"
EXAMPLES = Path(__file__).resolve().parents[2] / "evalcore" / "examples"
runner = CliRunner()
REAL_KEYS = {"hotpot": "hotpotqa_dev_distractor/hotpot_dev_distractor_v1_first53.json",
             "squad": "squad_v2_dev/dev-v2.0_Normans.json"}

REAL = {  # path under ../shared/data -> (format, n_questions, answerable)
    "graphrag_bench/novel_questions_Novel-44557_cornwall.json": ("graphrag_bench", 103, 103),
    "hotpotqa_dev_distractor/hotpot_dev_distractor_v1_first53.json": ("hotpotqa", 53, 53),
    "squad_v2_dev/dev-v2.0_Normans.json": ("squad_v2", 208, 96),
    "ragchecker/checking_inputs.json": ("ragchecker", 2, 2),
}


def stats(path: Path, *extra: str):
    return runner.invoke(app, ["stats", str(path), "--json", *extra])


@pytest.mark.parametrize("rel", sorted(REAL))
def test_stats_on_each_real_file(shared_data, rel):
    fmt, n, answerable = REAL[rel]
    path = shared_data / rel
    assert detect_format(path) == fmt
    result = stats(path)
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    assert (got["n_questions"], got["answerable"]) == (n, answerable)


def test_stats_reports_breakdowns_from_the_mapping(shared_data):
    hotpot = json.loads(stats(shared_data / REAL_KEYS["hotpot"]).output)
    assert hotpot["by_question_type"] == {"bridge": 39, "comparison": 14}
    assert hotpot["by_difficulty"] == {"hard": 53} and hotpot["with_support_groups"] == 53
    squad = json.loads(stats(shared_data / REAL_KEYS["squad"]).output)
    assert squad["with_gold_passages"] == 96 and squad["by_category"] == {"Normans": 208}


def test_stats_on_the_full_graphrag_file_reports_its_duplicate_id(shared_data):
    result = stats(shared_data / "graphrag_bench" / "novel_questions.json")
    assert result.exit_code != 0 and isinstance(result.exception, InputError)
    assert "record 872, field 'id': duplicate question id 'Novel-55f0c0e2'" in str(result.exception)


def test_console_entry_prints_one_line_without_traceback(shared_data):
    """`main()` (not `app`) turns EvalcoreError into a message: check it end to end once."""
    proc = subprocess.run([sys.executable, "-m", "evalcore", "stats",
                           str(shared_data / "graphrag_bench" / "novel_questions.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "duplicate question id 'Novel-55f0c0e2'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_stats_on_the_korean_files():
    for path, n in ((FIXTURE, 13), (EXAMPLES / "eval_questions_ko.yaml", 7)):
        result = stats(path)
        assert result.exit_code == 0, result.output
        got = json.loads(result.output)
        assert got["n_questions"] == n
        assert set(got["by_category"]) == {"single_hop", "multi_hop_2", "multi_hop_3", "aggregation",
                                           "inference", "negative"}
    plain = runner.invoke(app, ["stats", str(FIXTURE)])
    assert plain.exit_code == 0 and "negative" in plain.output


def test_forcing_a_format_by_name(shared_data):
    path = shared_data / REAL_KEYS["squad"]
    assert stats(path, "--format", "squad_v2").exit_code == 0
    wrong = stats(path, "--format", "hotpotqa")
    assert wrong.exit_code != 0 and isinstance(wrong.exception, InputError)


def test_datasets_lists_formats_and_public_sets():
    result = runner.invoke(app, ["datasets", "--json"])
    assert result.exit_code == 0
    got = json.loads(result.output)
    assert list(got["formats"])[-1] == "native"
    assert {"korean_plan", "graphrag_bench", "hotpotqa", "squad_v2", "ragchecker"} <= set(got["formats"])
    assert {"ragbench", "squad_v2", "hotpotqa", "msmarco", "qasper"} == set(got["public"])


def test_native_files_still_fall_through_to_native():
    assert detect_format(EXAMPLES / "questions.yaml") == "native"
    assert len(load_questions(EXAMPLES / "questions.yaml")) >= 4


def test_native_json_mentioning_a_foreign_key_once_is_not_misdetected(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([{"id": "1", "question": "What is the context?", "metadata": {"data": 1}}]))
    assert detect_format(path) == "native"


def test_unreadable_or_odd_files_sniff_as_native_and_fail_there(tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(b'[{"_id": "x", "question": "q", "supporting_facts": [["A", 0]], "context": [')
    assert detect_format(path) == "hotpotqa"
    with pytest.raises(InputError, match="invalid JSON"):
        load_questions(path)
    binary = tmp_path / "x.parquet"
    binary.write_bytes(b"not parquet")
    assert detect_format(binary) == "native"  # the sniffer's read error is swallowed


def test_registering_later_keeps_native_last(monkeypatch):
    monkeypatch.setattr("evalcore.datasets.registry.FORMATS", dict(FORMATS))
    from evalcore.datasets import registry

    register(DatasetFormat("trec_like", lambda p: [], lambda p: False, "test only"))
    assert list(registry.FORMATS)[-2:] == ["trec_like", "native"]
