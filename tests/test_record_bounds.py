"""An answer's numbers and free-form JSON are bounded by the contracts, so every way in (the
answers import, a live run, traces: tests/traces/test_trace_bounds.py) refuses the same values
in one line naming the record and field (issue 34, round 4, F5/F6).

Before: `"token_usage": {"input_tokens": 10000000000000000000}` crashed the import as
"unexpected OverflowError" (Parquet's int64), 400 nines as "int too large to convert to float",
a cost of 1e308 was stored, and `metadata` / `raw` / `retrieved[0].metadata` nested ~260 levels
deep crashed pydantic's serializer when the record was written ("Maximum serialization depth
exceeded"), exit 1.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.bounds import MAX_JSON_DEPTH
from evalcore.schemas.ids import STORED
from evalcore.store import RunStore

runner = CliRunner()
BASE = {"question_id": "q1", "question": "q?", "method": "m", "answer": "a"}
NINES = int("9" * 400)


def _nest(levels: int) -> list:
    value: object = "x"
    for _ in range(levels - 1):
        value = [value]
    return [value]


def _import(tmp_path, record: dict, *flags):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(record) + "\n")
    root = tmp_path / "runs"
    return root, runner.invoke(app, ["--store", str(root), "import", str(path), *flags])


def _refused(tmp_path, record, field, fragment, *flags):
    root, res = _import(tmp_path, record, *flags)
    assert isinstance(res.exception, InputError), res.output  # one line, exit 2
    assert res.exception.record == 1 and res.exception.field == field, str(res.exception)
    assert fragment in str(res.exception), str(res.exception)
    assert not root.exists() or RunStore(root).run_ids() == []


NUMBERS = {
    "tokens-1e19": ({"token_usage": {"input_tokens": 10**19}}, "token_usage.input_tokens", "past the bound of 1e12"),
    "tokens-400-digits": ({"token_usage": {"output_tokens": NINES}}, "token_usage.output_tokens", "about 10^400"),
    "tokens-float": ({"token_usage": {"input_tokens": 1e20}}, "token_usage.input_tokens", "past the bound"),
    "cost-1e308": ({"token_usage": {"cost_usd": 1e308}}, "token_usage.cost_usd", "past the bound of 1,000,000"),
    "cost-400-digits": ({"token_usage": {"cost_usd": NINES}}, "token_usage.cost_usd", "about 10^400"),
    "latency": ({"latency_ms": 1e300}, "latency_ms", "past the bound of 1e10"),
    "latency-400-digits": ({"latency_ms": NINES}, "latency_ms", "about 10^400"),
    "timing": ({"timings": {"retrieval_ms": -1e300}}, "timings.retrieval_ms", "in magnitude"),
    "score": ({"retrieved": [{"text": "t", "score": NINES}]}, "retrieved.0.score", "about 10^400"),
    "score-negative": ({"retrieved": [{"text": "t", "score": -1e16}]}, "retrieved.0.score", "past the bound of 1e15"),
    "rank": ({"retrieved": [{"text": "t", "rank": 10**19}]}, "retrieved.0.rank", "past the bound of 1e09"),
}


@pytest.mark.parametrize("extra, field, fragment", list(NUMBERS.values()), ids=list(NUMBERS))
def test_a_number_past_its_bound_is_refused_by_field(tmp_path, extra, field, fragment):
    _refused(tmp_path, {**BASE, **extra}, field, fragment)


DEEP = {
    "metadata": ({"metadata": {"x": _nest(300)}}, "metadata", "'x' is nested more than 64 levels deep"),
    "raw": ({"raw": {"x": _nest(300)}}, "metadata", "'raw' is nested more than 64 levels deep"),  # kept in metadata
    "retrieved-metadata": ({"retrieved": [{"text": "t", "metadata": {"x": _nest(300)}}]}, "retrieved.0.metadata",
                           "'x' is nested more than 64 levels deep"),
    "just-past": ({"metadata": {"x": _nest(MAX_JSON_DEPTH)}}, "metadata", "nested more than 64 levels deep"),
}


@pytest.mark.parametrize("extra, field, fragment", list(DEEP.values()), ids=list(DEEP))
def test_free_form_json_nested_past_the_bound_is_refused_by_field(tmp_path, extra, field, fragment):
    _refused(tmp_path, {**BASE, **extra}, field, fragment, "--allow-extra")


def test_an_answers_raw_nested_past_the_bound_is_refused():
    with pytest.raises(ValueError, match="'x' is nested more than 64 levels deep"):
        EvalResponse(question_id="q", method="m", raw={"x": _nest(MAX_JSON_DEPTH)})
    assert EvalResponse(question_id="q", method="m", raw={"x": _nest(MAX_JSON_DEPTH - 1)}).model_dump_json()


def test_values_at_the_bounds_are_stored_and_read_back(tmp_path):
    from evalcore.scoring.queries import run_responses

    record = {**BASE, "token_usage": {"input_tokens": 10**12, "output_tokens": 0, "cost_usd": 1e6},
              "latency_ms": 1e10, "timings": {"x": -1e10},
              "retrieved": [{"text": "t", "score": -1e15, "rank": 10**9, "metadata": {"m": _nest(MAX_JSON_DEPTH - 1)}}],
              "metadata": {"x": _nest(MAX_JSON_DEPTH - 1)}}
    root, res = _import(tmp_path, record, "--allow-extra")
    assert res.exit_code == 0, res.output
    [response] = run_responses(RunStore(root), res.stdout.split()[-1])
    assert response.token_usage.input_tokens == 10**12
    assert response.retrieved[0].metadata["m"] == _nest(MAX_JSON_DEPTH - 1)


def test_a_question_file_with_deep_metadata_is_refused(tmp_path):
    from evalcore.datasets import load_questions

    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": "q?", "metadata": {"x": _nest(300)}}) + "\n")
    with pytest.raises(InputError, match="nested more than 64 levels") as info:
        load_questions(path)
    assert info.value.field == "metadata"


def test_a_live_target_reply_past_a_bound_is_a_malformed_answer():
    """The live runner's way in: the reply becomes a per-question `malformed` error, not a crash."""
    from evalcore.targets.parse import MalformedResponse, parse_response
    from evalcore.targets.spec import ResponseMap

    rmap = ResponseMap()
    for payload in ({"answer": "a", "token_usage": {"input_tokens": 10**19}},
                    {"answer": "a", "debug": {"x": _nest(300)}}):
        with pytest.raises(MalformedResponse, match="past the bound|nested more than"):
            parse_response(payload, rmap, "q1", "m")


def test_records_read_back_from_the_store_are_not_checked_again():
    """What an older evalcore stored (a count above today's bound) still reads."""
    old = json.dumps({**{k: BASE[k] for k in ("question_id", "method", "answer")},
                      "token_usage": {"input_tokens": 10**15}, "raw": {"x": _nest(100)}})
    assert EvalResponse.model_validate_json(old, context=STORED).token_usage.input_tokens == 10**15
    with pytest.raises(ValueError, match="past the bound"):
        EvalResponse.model_validate_json(old)
    assert EvalQuestion.model_validate({"id": "q", "question": "q?", "metadata": {"x": _nest(100)}},
                                       context=STORED).metadata


def test_the_reported_overflow_is_one_line_exit_2_in_a_real_process(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps({**BASE, "token_usage": {"input_tokens": 10**19}}) + "\n")
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(tmp_path / "runs"), "import", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {path}, record 1, field 'token_usage.input_tokens': ")


def test_depth_of_a_value_sharing_its_parts_is_found_without_walking_every_route():
    """`x = [x, x]` 40 times: 2**40 routes to the innermost list, 41 levels. Walked route by
    route this never ended (2**22 routes took ~10 s); each list is now walked at most once per
    level it is reached at. A list that holds itself nests without end."""
    from evalcore.schemas.bounds import json_depth_over

    x: list = [1]
    for _ in range(40):
        x = [x, x]
    assert not json_depth_over(x, 41) and json_depth_over(x, 40)
    assert not json_depth_over({"a": x, "b": [x]}, 43) and json_depth_over({"a": x, "b": [x]}, 42)  # via "b": 2 + 41
    shallow_then_deep = [1]
    assert json_depth_over([shallow_then_deep, [[[shallow_then_deep]]]], 4)  # reached deeper later: walked again
    assert not json_depth_over([shallow_then_deep, [[[shallow_then_deep]]]], 5)
    holds_itself: list = []
    holds_itself.append(holds_itself)
    assert json_depth_over(holds_itself, 64)
