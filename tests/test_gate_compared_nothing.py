"""A gate that compared nothing fails (issue 34, item 3), through the CLI as a CI job runs it.

`evalcore compare BASE CAND --fail-on-regression METRIC` used to exit 0 when METRIC was all NaN
on a side, or when the two runs' question ids differed only in Unicode form (0 pairs), and
`token_f1:nan` switched the gate off. Now: 0 pairs, or fewer than --min-paired of the questions
with a value on either side, fail it (exit 1, a NOT COMPARED line saying why); bad thresholds
and unknown names are usage errors (exit 2, one line); ids pair under the id rule even between
runs stored by an older evalcore. The pytest plugin's gate (evalcore.outputs.gate) follows the
same rule. Real questions: SQuAD 2.0 dev, the Normans article.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.errors import EvalcoreError

runner = CliRunner()
N = 24


def _cli(root, *args):
    return runner.invoke(app, ["--store", str(root), *args])


def _code(res) -> int:
    """The exit code `evalcore` (cli.main.main) gives: an EvalcoreError is one line, exit 2."""
    return 2 if isinstance(res.exception, EvalcoreError) else res.exit_code


def _records(qas, form="NFC", truth=True, wrong_every=0, keep=lambda i: True):
    out = []
    for i, qa in enumerate(qas):
        if not keep(i):
            continue
        rec = {"question_id": unicodedata.normalize(form, f"normandie-é-{qa['id']}"), "question": qa["question"],
               "method": "reader",
               "answer": "the Vikings of Scandinavia" if wrong_every and i % wrong_every == 0 else qa["answers"][0]["text"]}
        if truth:
            rec["ground_truth"] = [a["text"] for a in qa["answers"]]
        out.append(rec)
    return out


def _import(root, folder, name, records, *score_args):
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    res = _cli(root, "import", str(path), "--name", name)
    assert res.exit_code == 0, res.output
    run_id = res.stdout.strip().splitlines()[-1]
    res = _cli(root, "score", run_id, *(score_args or ("--metrics", "token_f1,squad_em")), "--no-progress")
    assert res.exit_code == 0, res.output
    return run_id


def _stored_by_older_version(store, name, records):
    """A run as an evalcore before the id rule stored it: ids exactly as given (NFD stays NFD)."""
    from evalcore import __version__
    from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
    from evalcore.store import FORMAT_VERSION, new_run_id

    try:
        from evalcore.schemas.ids import STORED
    except ImportError:  # an evalcore before the rule stored ids as given anyway
        STORED = None

    questions = [EvalQuestion.model_validate({"id": r["question_id"], "question": r["question"],
                                              "ground_truth": r["ground_truth"]}, context=STORED) for r in records]
    responses = [EvalResponse.model_validate({"question_id": r["question_id"], "method": r["method"],
                                              "answer": r["answer"]}, context=STORED) for r in records]
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=new_run_id(name), name=name, status="complete",
                           evalcore_version=__version__, methods=sorted({r.method for r in responses}),
                           counts={"questions": len(questions), "responses": len(responses), "errors": 0})
    with store.staged_run(manifest) as writer:
        writer.write_questions(questions)
        writer.write_responses(responses)
        writer.write_manifest(manifest)
    return manifest.run_id


@pytest.fixture(scope="module")
def runs(shared_data, tmp_path_factory):
    from evalcore.store import RunStore

    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for p in data["data"][0]["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]][:N]
    root = tmp_path_factory.mktemp("gate") / "runs"
    folder = tmp_path_factory.mktemp("answers")
    ids = {
        "good": _import(root, folder, "good", _records(qas)),
        "no_truth": _import(root, folder, "no_truth", _records(qas, truth=False)),  # token_f1 all NaN
        "nfd": _import(root, folder, "nfd", _records(qas, form="NFD")),
        "half": _import(root, folder, "half", _records(qas, keep=lambda i: i % 2 == 0)),
        "f1_only": _import(root, folder, "f1_only", _records(qas), "--metrics", "token_f1"),
    }
    store = RunStore(root)
    for name, form, wrong in (("old_nfc", "NFC", 0), ("old_nfd", "NFD", 0), ("old_nfd_worse", "NFD", 2)):
        ids[name] = _stored_by_older_version(store, name, _records(qas, form=form, wrong_every=wrong))
        res = _cli(root, "score", ids[name], "--metrics", "token_f1,squad_em", "--no-progress")
        assert res.exit_code == 0, res.output
    return root, ids


def test_a_metric_all_nan_on_either_side_fails_the_gate(runs):
    root, ids = runs
    for base, cand, side in ((ids["good"], ids["no_truth"], "candidate"), (ids["no_truth"], ids["good"], "baseline")):
        res = _cli(root, "compare", base, cand, "--fail-on-regression", "token_f1")
        assert _code(res) == 1, res.output
        line = next(x for x in res.stderr.splitlines() if x.startswith("NOT COMPARED"))
        assert "token_f1 compared nothing" in line and f"the {side} has no value" in line, line


def test_a_metric_missing_from_one_side_fails_the_gate(runs):
    """squad_em: scored for `good`, never for `f1_only` (and the other way round)."""
    root, ids = runs
    for base, cand in ((ids["good"], ids["f1_only"]), (ids["f1_only"], ids["good"])):
        res = _cli(root, "compare", base, cand, "--metrics", "token_f1", "--fail-on-regression", "squad_em")
        assert _code(res) == 1, res.output
        assert "NOT COMPARED" in res.stderr and "squad_em compared nothing" in res.stderr
    out = json.loads(_cli(root, "compare", ids["good"], ids["f1_only"], "--fail-on-regression", "squad_em",
                          "--json").stdout)
    assert out["not_compared"] and out["regressions"] == []


def test_ids_differing_only_in_unicode_form_pair(runs):
    """Imported now: NFD ids are stored in NFC, so the two runs pair on every question."""
    root, ids = runs
    res = _cli(root, "compare", ids["good"], ids["nfd"], "--metrics", "token_f1", "--fail-on-regression", "token_f1",
               "--json")
    assert _code(res) == 0, res.output
    row = json.loads(res.stdout)["metrics"][0]
    assert row["n_pairs"] == N and row["missing"] == 0


def test_stored_runs_whose_ids_pair_only_after_normalisation_pair(runs):
    """Two runs stored by an older evalcore, one NFC and one NFD: compare pairs them (and the
    gate sees a real regression through those pairs); the NFD run scored its own ids."""
    from evalcore.store import RunStore, query_df

    root, ids = runs
    store = RunStore(root)
    qids = query_df(store, "SELECT DISTINCT question_id FROM metrics WHERE run_id = ?", [ids["old_nfd"]]).question_id
    assert all(unicodedata.is_normalized("NFD", q) and not unicodedata.is_normalized("NFC", q) for q in qids)
    res = _cli(root, "compare", ids["old_nfc"], ids["old_nfd"], "--metrics", "token_f1",
               "--fail-on-regression", "token_f1", "--json")
    assert _code(res) == 0, res.output
    out = json.loads(res.stdout)
    assert out["metrics"][0]["n_pairs"] == N and out["unpaired"][f"{ids['old_nfd']}:reader"] == {
        "only_in_baseline": [], "only_in_candidate": []}
    res = _cli(root, "compare", ids["good"], ids["old_nfd_worse"], "--metrics", "token_f1",
               "--fail-on-regression", "token_f1")
    assert _code(res) == 1 and "REGRESSION" in res.stderr and "NOT COMPARED" not in res.stderr, res.output


def test_too_few_pairs_fail_unless_the_share_is_lowered(runs):
    root, ids = runs
    res = _cli(root, "compare", ids["good"], ids["half"], "--fail-on-regression", "token_f1")
    assert _code(res) == 1, res.output
    assert "token_f1 compared too little: 12 of the 24 questions" in res.stderr
    res = _cli(root, "compare", ids["good"], ids["half"], "--fail-on-regression", "token_f1", "--min-paired", "0.5")
    assert _code(res) == 0, res.output


@pytest.mark.parametrize("args", [
    ["--fail-on-regression", "token_f1:nan"], ["--fail-on-regression", "token_f1:inf"],
    ["--fail-on-regression", "token_f1:-inf"], ["--fail-on-regression", "token_f1:-0.1"],
    ["--fail-on-regression", "token_f1:"], ["--fail-on-regression", ":0.1"], ["--fail-on-regression", "token_f1:x"],
    ["--fail-on-regression", "token_f1", "--alpha", "nan"], ["--fail-on-regression", "token_f1", "--alpha", "1"],
    ["--fail-on-regression", "token_f1", "--min-paired", "0"],
    ["--fail-on-regression", "token_f1", "--min-paired", "nan"],
    ["--fail-on-regression", "token_f1", "--min-paired", "1.5"],
])
def test_thresholds_that_would_switch_the_gate_off_are_refused(runs, args):
    root, ids = runs
    res = _cli(root, "compare", ids["good"], ids["no_truth"], *args)
    assert _code(res) == 2, res.output
    assert len(str(res.exception).splitlines()) == 1


def test_unknown_names_are_usage_errors(runs):
    root, ids = runs
    res = _cli(root, "compare", ids["good"], ids["nfd"], "--fail-on-regression", "tokn_f1")
    assert _code(res) == 2 and "did you mean token_f1" in str(res.exception)
    res = _cli(root, "compare", f"{ids['good']}:reader", f"{ids['nfd']}:nosuch", "--fail-on-regression", "token_f1")
    assert _code(res) == 2 and "has no method 'nosuch'" in str(res.exception)


def test_the_pytest_gate_fails_when_it_compared_nothing(runs):
    """evalcore.outputs.gate (the pytest plugin's check): a threshold metric all NaN, a baseline
    without the run's method, a metric with no value on one side, NaN bounds."""
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    root, ids = runs
    store = RunStore(root)
    out = check_gate(store, ids["no_truth"], {"token_f1": 0.1})
    assert not out.ok and "token_f1 was not scored" in out.failures[0]
    out = check_gate(store, ids["no_truth"], {"token_f1": 0.0}, baseline=ids["good"])
    assert any("token_f1 vs baseline" in f and "compared nothing" in f for f in out.failures), out.failures
    out = check_gate(store, ids["half"], {"token_f1": 0.0}, baseline=ids["good"])
    assert any("compared too little" in f for f in out.failures), out.failures
    assert check_gate(store, ids["half"], {"token_f1": 0.0}, baseline=ids["good"], min_paired=0.5).ok
    assert check_gate(store, ids["old_nfd"], {"token_f1": 0.5}, baseline=ids["good"]).ok  # pairs after NFC
    out = check_gate(store, ids["f1_only"], {"squad_em": {"max": 1.0}}, baseline=ids["good"])
    assert any("squad_em vs baseline" in f and "compared nothing" in f for f in out.failures), out.failures
    for bad in ({"token_f1": float("nan")}, {"token_f1": {"min": float("inf")}}, {"token_f1": {}}):
        with pytest.raises(EvalcoreError):
            check_gate(store, ids["good"], bad)
    with pytest.raises(EvalcoreError):
        check_gate(store, ids["good"], {"token_f1": 0.1}, baseline=ids["nfd"], alpha=float("nan"))


@pytest.mark.parametrize("thresholds", [{"token_f1": float("nan")}, {"token_f1": ".inf"}, {"token_f1": {"min": "-inf"}},
                                        {"token_f1": True}, {"token_f1": {}}, {"token_f1": {"minimum": 0.5}}])
def test_a_config_threshold_that_is_no_finite_bound_is_refused(thresholds):
    """The pytest plugin reads its thresholds from the eval config: refused when it is read."""
    from pydantic import ValidationError

    from evalcore.runner.config import EvalConfig

    with pytest.raises(ValidationError):
        EvalConfig(target="http://127.0.0.1:9", dataset="q.jsonl", thresholds=thresholds)
    with pytest.raises(ValidationError):
        EvalConfig(target="http://127.0.0.1:9", dataset="q.jsonl", min_paired=float("nan"))


def test_the_pytest_gate_fails_when_no_method_overlaps(runs, tmp_path):
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    root, ids = runs
    out = check_gate(RunStore(root), ids["old_nfc"], {}, baseline=ids["good"])
    assert out.ok, out.failures  # same method, same answers: compared and passed
    other = _import(root, tmp_path, "other_method", [dict(r, method="other") for r in _answers(root, ids["good"])])
    out = check_gate(RunStore(root), other, {}, baseline=ids["good"])
    assert not out.ok and "baseline" in out.failures[0] and "has no method 'other'" in out.failures[0]


def _answers(root, run_id):
    from evalcore.store import RunStore, query_df

    df = query_df(RunStore(root), """SELECT r.question_id, q.question, q.ground_truth, r.answer FROM responses r
                                     JOIN questions q USING (run_id, question_id) WHERE r.run_id = ?""", [run_id])
    return [{"question_id": q, "question": t, "ground_truth": g, "answer": a, "method": "reader"}
            for q, t, g, a in df.itertuples(index=False)]
