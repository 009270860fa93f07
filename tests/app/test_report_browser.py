"""`evalcore report`'s file opened in headless Chromium with the network off (issue 27, item 4).

The report must work as a file on a laptop without a server or a connection: opened from disk
in a browser whose network is emulated offline, it logs no console error or exception, draws
every figure (a `.js-plotly-plot` with its SVG per figure div), and requests nothing: a canary
`<img src=...>` written into an answer stays text, no element is built from it, and the browser
reports no request at all besides the file itself. Once loaded, no figure is wider than its box.
Driven over the DevTools protocol with the helpers of tests/app/test_browser.py (DevTools keeps
the events it reads); skips with a reason without Chromium, fails under CI=true.
"""

from __future__ import annotations

import json
import time

import pytest

from evalcore.demo.synthetic import build_store, write_run
from tests.optional import requires

from .test_browser import DevTools, chromium

CANARY = '<img src="http://127.0.0.1:9/canary.png" onerror="window.__pwned=1">'
PROBE = """(() => JSON.stringify({
  figures: document.querySelectorAll('.plotly-graph-div').length,
  drawn: [...document.querySelectorAll('.plotly-graph-div')].filter(d =>
      d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg')).length,
  imgs: [...document.querySelectorAll('img,image,iframe,link,a')].map(e => e.outerHTML.slice(0, 120)),
  // a figure wider than its box (drawn before the page's scrollbar appeared, never refitted)
  overflowing: [...document.querySelectorAll('.js-plotly-plot')].filter(d =>
      d.querySelector('svg.main-svg').getBoundingClientRect().width > d.parentElement.clientWidth + 1).length,
  loaded: document.readyState === 'complete',
  pwned: !!window.__pwned,
  text: document.body.innerText,
  data: document.getElementById('evalcore-data').textContent}))()"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    """A report over a small synthetic run whose regressed answers all carry the canary."""
    from evalcore.outputs.html_report import render
    from evalcore.analysis.report.report_data import report_data
    from evalcore.scoring.queries import run_questions

    tmp = tmp_path_factory.mktemp("report")
    store = build_store(tmp / "runs", n_runs=1, n_questions=30, n_metrics=12, judge_calls=False)
    questions = run_questions(store, store.run_ids()[0])
    answers = {(m, q.id): f"Answer {q.id}. {CANARY} [x](http://127.0.0.1:9/link)" for q in questions
               for m in ("local_search", "basic_search")}
    run = write_run(store, "canary", questions, ["local_search", "basic_search"],
                    ["faithfulness", "factual_accuracy", "answer_class", "token_f1", "context_precision"],
                    seed=11, answers=answers, judge_calls=False)
    path = tmp / "report.html"
    path.write_text(render(report_data(store, [run])), encoding="utf-8")
    return path


def test_report_opens_offline_draws_every_figure_and_fetches_nothing(report_file, tmp_path):
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    tools = DevTools(browser, tmp_path / "profile")
    try:
        for domain in ("Network", "Runtime", "Log", "Page"):
            tools.call(f"{domain}.enable")
        tools.call("Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                   uploadThroughput=-1)
        tools.call("Page.navigate", url=report_file.as_uri())
        deadline, seen = time.time() + 30, {}
        while time.time() < deadline:  # wait for a condition: every figure drawn
            seen = json.loads(tools.call("Runtime.evaluate", expression=PROBE, returnByValue=True)
                              .get("result", {}).get("value") or "{}")
            if seen.get("figures") and seen["drawn"] == seen["figures"] and seen["loaded"] and not seen["overflowing"]:
                break
            time.sleep(0.3)
        tools.call("Runtime.evaluate", expression="1", returnByValue=True)  # flush pending events
    finally:
        tools.close()
    (tmp_path / "page.txt").write_text(seen.get("text", ""))
    assert seen.get("figures", 0) >= 5, f"expected the forest, 2 distributions, 2 fronts and failure modes: {seen.get('figures')}"
    assert seen["drawn"] == seen["figures"], f"only {seen['drawn']} of {seen['figures']} figures drawn"
    assert seen["overflowing"] == 0, f"{seen['overflowing']} figures wider than their box once the page loaded"
    errors = [e for e in tools.events if e["method"] == "Runtime.exceptionThrown"
              or (e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == [], f"console errors: {json.dumps(errors)[:2000]}"
    requests = [e["params"]["request"]["url"] for e in tools.events if e["method"] == "Network.requestWillBeSent"]
    assert requests == [report_file.as_uri()], f"the page requested {requests}"
    assert CANARY in seen["text"], "the canary is not shown as its literal text"
    assert seen["imgs"] == [] and not seen["pwned"], f"elements built from answer text: {seen['imgs']}"
    assert json.loads(seen["data"])["compare"]["metrics"], "the embedded numbers do not parse in the browser"
