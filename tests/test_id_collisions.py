"""Two stored ids of one run that are one id under the id rule are named, never silently merged
(issue 34, item 3, round 4).

A run stored by an older evalcore holding the right answer under "q0" and a wrong one under
"q0 " (for every question) compared as n_pairs 10, Δ = -1.0, REGRESSION: pairing kept the copy
that sorted last, with no warning, while `show` counted both. Which copy is meant cannot be
known: compare, report and both gates refuse the run in one line naming the ids, `show` and
`store check` warn. Variants: a trailing space, a no-break space, a tab, a byte-order mark,
NFC against NFD. Real questions: SQuAD 2.0 dev.
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from tests.optional import requires

from evalcore.errors import EvalcoreError
from tests.test_gate_compared_nothing import _cli, _code, _import, _records, _stored_by_older_version

N = 6
VARIANTS = {"space": lambda q: q + " ", "nbsp": lambda q: "\u00a0" + q, "tab": lambda q: q + "\t",
            "bom": lambda q: "\ufeff" + q, "nfd": lambda q: unicodedata.normalize("NFD", q)}


@pytest.fixture(scope="module")
def runs(shared_data, tmp_path_factory):
    """(root, base id, {variant: id of an old run with a right copy and a wrong colliding copy})."""
    from evalcore.store import RunStore

    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text())
    qas = [qa for p in data["data"][0]["paragraphs"] for qa in p["qas"] if not qa["is_impossible"]][:N]
    root = tmp_path_factory.mktemp("collide") / "runs"
    base = _import(root, tmp_path_factory.mktemp("answers"), "base", _records(qas))
    store, old = RunStore(root), {}
    right = _records(qas)
    for name, spell in VARIANTS.items():
        wrong = [dict(r, question_id=spell(r["question_id"]), answer="the Vikings of Scandinavia")
                 for r in _records(qas)]
        assert all(w["question_id"] != r["question_id"] for w, r in zip(wrong, right))
        old[name] = _stored_by_older_version(store, f"old_{name}", right + wrong)
        res = _cli(root, "score", old[name], "--metrics", "token_f1", "--no-progress")
        assert res.exit_code == 0, res.output
    return root, base, old


def _one_line_naming_both(text: str, first: str, second: str) -> None:
    assert len(text.splitlines()) == 1, text
    assert repr(first) in text and repr(second) in text, text


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_compare_refuses_a_run_whose_ids_collide(runs, variant):
    root, base, old = runs
    first = next(r for r in _records_of(root, old[variant]))
    for args in (["--metrics", "token_f1", "--fail-on-regression", "token_f1", "--json"], ["--metrics", "token_f1"],
                 ["--metrics", "token_f1", "--markdown"]):
        for pair in ((base, old[variant]), (old[variant], base)):
            res = _cli(root, "compare", *pair, *args)
            assert _code(res) == 2 and isinstance(res.exception, EvalcoreError), res.output
            _one_line_naming_both(str(res.exception), *first)


def test_the_report_refuses_it_too(runs, tmp_path):
    requires("plotly")
    root, base, old = runs
    res = _cli(root, "report", base, old["space"], "--metrics", "token_f1", "-o", str(tmp_path / "r.html"))
    assert _code(res) == 2 and "one id under the id rule" in str(res.exception), res.output
    assert not (tmp_path / "r.html").exists()


def test_the_pytest_gate_fails_naming_the_ids(runs):
    from evalcore.outputs.gate import check_gate
    from evalcore.store import RunStore

    root, base, old = runs
    store = RunStore(root)
    first = next(r for r in _records_of(root, old["nbsp"]))
    for run, baseline in ((old["nbsp"], base), (base, old["nbsp"]), (old["nbsp"], None)):
        out = check_gate(store, run, {"token_f1": 0.1}, baseline=baseline)
        assert not out.ok and not out.regressions, out.failures
        hits = [f for f in out.failures if "one id under the id rule" in f]
        assert hits, out.failures
        assert repr(first[0]) in hits[0] and repr(first[1]) in hits[0]


def test_show_and_store_check_warn(runs):
    root, _, old = runs
    first = next(r for r in _records_of(root, old["bom"]))
    res = _cli(root, "show", old["bom"])
    assert res.exit_code == 0, res.output
    warned = [line for line in res.stderr.splitlines() if "one id under the id rule" in line]
    assert len(warned) == 2 and all(line.startswith("WARNING") for line in warned), res.stderr  # answers, questions
    assert f"and {N - 1} more" in warned[0] and repr(first[0]) in warned[0] and repr(first[1]) in warned[0]
    res = _cli(root, "show", old["bom"], "--json")
    assert res.exit_code == 0 and "one id under the id rule" in res.stderr
    assert json.loads(res.stdout)["id_collisions"][0]["ids"] == list(first)
    res = _cli(root, "store", "check", old["bom"])
    assert res.exit_code == 0, res.output  # a warning, not damage: every file reads whole
    assert "one id under the id rule" in res.stdout and repr(first[1]) in res.stdout
    res = _cli(root, "store", "check")
    assert sum("one id under the id rule" in line for line in res.stdout.splitlines()) == 2 * len(VARIANTS)


def test_a_run_without_collisions_is_silent(runs):
    root, base, _ = runs
    for args in (["show", base], ["store", "check", base]):
        res = _cli(root, *args)
        assert res.exit_code == 0 and "id rule" not in res.output, res.output


def _records_of(root, run_id):
    """The colliding groups of a run's answers, as the store holds them, in id order."""
    from evalcore.analysis.read.id_collisions import colliding_ids
    from evalcore.store import RunStore

    return [c.ids for c in colliding_ids(RunStore(root), run_id, questions=False)]


def test_the_compare_page_says_why_it_does_not_compare(runs, monkeypatch):
    requires("streamlit")
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root, base, old = runs
    monkeypatch.setenv("EVALCORE_STORE", str(root))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params.update({"sys": [f"{base}:reader", f"{old['tab']}:reader"], "tm": ["token_f1"]})
    at.run()
    assert not at.exception, at.exception
    assert any("one id under the id rule" in e.value for e in at.error), [e.value for e in at.error]
