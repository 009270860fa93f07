"""`evalcore report A B [C…] -o report.html` (issue 27, item 4): one self-contained HTML file.

- the numbers are `evalcore compare --json`'s for the same selections and flags: the JSON block
  embedded in the page equals compare's output, and the visible metric table shows the same
  figures in compare's formats;
- every untrusted string is escaped: hostile method and answer text appears only as text;
- 2,000 questions × 2 systems stay under 1.5 MB (Plotly's basic bundle, 1.2 MB, inlined once);
- a bad run name is one line on stderr, exit 2, and no file.
The file in a real browser with the network off: tests/app/test_report_browser.py.
"""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalcore.cli.main import app
from evalcore.demo.synthetic import build_store, write_run
from evalcore.scoring.queries import run_questions

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
HOSTILE = '<img src="x-evil" onerror="window.__p=1"></script><script>window.__p=2</script>'


def _cli(root: Path, *args: str):
    return runner.invoke(app, ["--store", str(root), *args])


def _embedded(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="evalcore-data">(.*?)</script>', page, re.S)
    assert found, "no embedded data block"
    assert "<" not in found.group(1) and ">" not in found.group(1), "raw markup inside the data block"
    return json.loads(found.group(1))


def _finite(value):
    """compare --json prints NaN (Python's json reads it); the page's JSON has null there."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


@pytest.fixture(scope="module")
def store_root(tmp_path_factory) -> Path:
    """Two runs over the same questions, two methods each, plus a run with hostile names."""
    root = tmp_path_factory.mktemp("report") / "runs"
    store = build_store(root, n_runs=2, n_questions=40, n_metrics=12, judge_calls=False)
    questions = run_questions(store, store.run_ids()[0])
    write_run(store, "hostile", questions, ["plain", HOSTILE], ["faithfulness", "token_f1", "factual_accuracy"],
              seed=5, answers={(m, q.id): f"{q.id} {HOSTILE}" for q in questions for m in ("plain", HOSTILE)},
              judge_calls=False)
    return root


def test_report_numbers_equal_compare_json(store_root, tmp_path):
    runs = sorted(r.name for r in store_root.iterdir() if r.name.startswith("synthetic"))
    sels = [f"{runs[0]}:local_search", f"{runs[0]}:basic_search", f"{runs[1]}:local_search"]  # A B C
    flags = ["--metrics", "faithfulness,token_f1,context_precision", "--seed", "3", "--alpha", "0.1"]
    out = tmp_path / "report.html"
    res = _cli(store_root, "report", *sels, "-o", str(out), *flags)
    assert res.exit_code == 0, res.output
    cmp = _cli(store_root, "compare", *sels, *flags, "--json")
    assert cmp.exit_code == 0, cmp.output
    expected = _finite(json.loads(cmp.stdout))
    page = out.read_text(encoding="utf-8")
    data = _embedded(page)["compare"]
    for key in ("baseline", "candidates", "alpha", "metrics", "unpaired", "run_level", "verdicts"):
        assert data[key] == expected[key], key
    assert len(data["metrics"]) == 6  # two candidates × three metrics
    # the visible table: the same numbers in compare's formats, one row per (candidate, metric)
    for r in expected["metrics"]:
        row = re.search(rf'<tr data-candidate="{re.escape(html.escape(r["candidate"]))}" '
                        rf'data-metric="{re.escape(r["metric"])}">(.*?)</tr>', page, re.S)
        assert row, (r["candidate"], r["metric"])
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
        assert f"{r['mean_a']:.3f}" == cells[4] and f"{r['mean_b']:.3f}" == cells[5]
        assert f"{r['delta']:.4f}" == cells[6]
        assert f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]" == cells[7]
        assert f"{r['p_holm']:.4f}" == cells[8]
    for cand, verdict in expected["verdicts"].items():
        assert html.escape(verdict["summary"]) in page
        # the forest plot draws the same Δ, CI and Holm p, with the verdict's outcome
        rows = {r["metric"]: r for r in expected["metrics"] if r["candidate"] == cand}
        outcome = {line["metric"]: line["outcome"] for line in verdict["lines"]}
        for f in _embedded(page)["forest"][cand]:
            r = rows[f["metric"]]
            assert (f["delta"], f["ci_low"], f["ci_high"], f["p_holm"], f["n"]) == \
                (r["delta"], r["ci_low"], r["ci_high"], r["p_holm"], r["n_pairs"])
            assert f["outcome"] == outcome[f["metric"]]
    # the judge named on judged numbers: faithfulness is judged, token_f1 computed
    assert "judged by heuristic:synthetic" in page and "computed, no judge" in page
    # the questions that regressed most, each with both systems' answers as stored
    from evalcore.analysis.comparison.compare import answers
    from evalcore.store import RunStore

    first = _embedded(page)["regressed"]["by_candidate"][sels[1]][0]["question_id"]
    said = answers(RunStore(store_root), (sels[0], sels[1]), first).set_index("system")["answer"]
    regressed = page[page.index('<section id="regressed">'):]
    assert html.escape(said[sels[0]]) in regressed and html.escape(said[sels[1]]) in regressed
    for section in ("verdict", "metrics", "distributions", "pareto", "failure-modes", "regressed"):
        assert f'<section id="{section}">' in page
    assert page.count("Plotly.newPlot(") >= 7  # two forests, 2 distributions, 2 fronts, failure modes
    assert page.count("function(") > 1000 and page.count('<script type="text/javascript">') == 1  # Plotly once
    # every figure is of a trace type the inlined bundle draws (evalcore.outputs.report_plotly)
    from evalcore.outputs.report_plotly import BASIC_TRACES

    found = set(re.findall(r'"type":\s*"(\w+)"', page[page.index("</head>"):]))
    assert found - {"linear", "log", "date", "category", "multicategory"} <= BASIC_TRACES  # axis types aside


def test_untrusted_text_is_escaped_everywhere(store_root, tmp_path):
    run = next(r.name for r in store_root.iterdir() if r.name.startswith("hostile"))
    out = tmp_path / "hostile.html"
    res = _cli(store_root, "report", f"{run}:plain", f"{run}:{HOSTILE}", "-o", str(out))
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    body = page[page.index("</head>"):]  # Plotly's own code is in the head
    assert "x-evil" in body, "the hostile text is not shown at all"
    assert "<img" not in body and 'src="x-evil"' not in body
    assert body.count("<script") == body.count("Plotly.newPlot(") + 1  # only the figures' and the data block
    assert html.escape(f"{HOSTILE}") in body  # the answers, as text
    assert "questions that regressed most" in body.lower()


def test_2000_questions_two_systems_under_1_5_mb(tmp_path):
    """Bigger than the demo (3 systems x 40 questions: 1.26 MB); the full Plotly bundle alone was 4.8 MB."""
    store = build_store(tmp_path / "runs", n_runs=1, n_questions=2000, n_metrics=12, judge_calls=False)
    out = tmp_path / "big.html"
    res = _cli(tmp_path / "runs", "report", store.run_ids()[0], "-o", str(out))
    assert res.exit_code == 0, res.output
    size = out.stat().st_size
    assert size < 1_500_000, f"{size:,} bytes"
    assert _embedded(out.read_text(encoding="utf-8"))["compare"]["metrics"][0]["n_pairs"] == 2000


def test_bad_run_name_is_one_line_and_writes_nothing(store_root, tmp_path):
    out = tmp_path / "never.html"
    proc = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store_root), "report", "no-such-run",
                           "also-missing", "-o", str(out)], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "no-such-run" in lines[0], proc.stderr
    assert not out.exists()


def test_without_plotly_the_command_says_how_to_install_it(store_root, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)  # as if the `app` extra were not installed
    out = tmp_path / "never.html"
    res = _cli(store_root, "report", "synthetic-00", "-o", str(out))
    assert res.exit_code != 0 and "pip install 'evalcore[app]'" in str(res.exception)
    assert not out.exists()
