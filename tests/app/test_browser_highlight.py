"""Highlights on the Questions page in a real browser (headless Chromium, the machinery of
tests/app/test_browser.py): one HTML <mark> per highlighted claim or evidence span, and untrusted
text inside and around the highlights stays inert: a canary `<img src=http://127.0.0.1:PORT/canary>`
in an answer, a claim, a judge's reason and a cited passage fetches nothing.

Skips with a reason when chromium is missing, fails under CI=true (as test_browser.py).
"""

from __future__ import annotations

import collections
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.optional import requires

from evalcore.analysis.questions.claim_evidence import answer_evidence
from evalcore.analysis.questions.question_drilldown import question_detail
from tests.app.claims_store import claims_store
from tests.app.test_browser import BAD_MARKERS, DevTools, _wait_for, chromium, serve_app



def _script_done(and_also: str = "true") -> str:
    """JS: the page's script run has ended (stApp's data-test-script-state), both method columns
    are drawn, and `and_also` holds."""
    return ("(() => { const app = document.querySelector('[data-testid=stApp]') || document.querySelector('.stApp');"
            " return !!app && app.getAttribute('data-test-script-state') === 'notRunning'"
            " && !document.querySelector('[data-testid=stAppSkeleton]')"
            " && document.querySelectorAll('.st-key-answers [data-testid=stColumn]').length === 2"
            f" && ({and_also}) }})()")
MARKS = "Array.from(document.querySelectorAll('mark')).map(m => [m.className, m.textContent])"


class _Canary:
    """An HTTP server on 127.0.0.1 that counts every request it receives."""

    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _expected_marks(store, run: str) -> collections.Counter:
    """(class, text) of every span the analysis layer asks the page to highlight, for q1."""
    detail = question_detail(store, run, "q1")
    out: collections.Counter = collections.Counter()
    for method in ("alpha", "beta"):
        ev = answer_evidence(detail, method)
        answer = detail["responses"].set_index("method").loc[method, "answer"]
        out.update((s.kind, answer[s.start:s.end]) for s in ev["answer_spans"])
        for c in ev["claims"]:
            out.update((s.kind, c["sentence"][s.start:s.end]) for s in c["sentence_spans"])
        texts = {c["rank"]: c["text"] for c in __import__("json").loads(
            detail["responses"].set_index("method").loc[method, "record"])["retrieved"]}
        for rank, spans in ev["context_spans"].items():
            out.update((s.kind, texts[rank][s.start:s.end]) for s in spans)
    return out


def test_highlights_are_marks_and_a_canary_inside_them_fetches_nothing(tmp_path):
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    with _Canary() as canary:
        bait = f" <img src=http://127.0.0.1:{canary.port}/canary>"
        store, run = claims_store(tmp_path / "runs", extra=bait)
        expected = _expected_marks(store, run)
        # the bait sits inside highlighted spans: the unsupported claim and the cited sentence
        assert any(bait.strip() in text for _, text in expected)
        assert {k for k, _ in expected} >= {"supported", "unsupported", "cited", "match"}
        with serve_app(store.root, tmp_path / "streamlit.log") as base:
            tools = DevTools(browser, tmp_path / "profile")
            try:
                tools.window()
                tools.dom_after(f"{base}/questions?run={run}&qid=q1", "Questions")
                # the script run has ended and its st.html blocks are drawn (a condition, not a sleep;
                # on timeout the comparison below shows what is missing)
                drawn = f"document.querySelectorAll('mark').length >= {sum(expected.values())}"
                _wait_for(tools, _script_done(drawn), 60)
                assert _wait_for(tools, _script_done(), 5), "the Questions script run did not end"
                dom = tools.call("Runtime.evaluate", returnByValue=True,
                                 expression="document.documentElement.outerHTML")["result"]["value"]
                assert not any(m in dom for m in BAD_MARKERS)
                # the bait is shown as text, never as an element, and nothing asked the canary for it
                assert tools.call("Runtime.evaluate", returnByValue=True, expression=(
                    "document.querySelectorAll('img[src*=canary]').length"))["result"]["value"] == 0
                shown = tools.call("Runtime.evaluate", returnByValue=True, expression=(
                    "document.body.innerText.split('<img src=http://127.0.0.1').length - 1"))["result"]["value"]
                assert shown >= 4  # answer, claim, reason, passage: each displayed as the characters it is
                assert canary.hits == []
                # one <mark> per span the analysis layer highlights, with its class and exactly its text
                marks = tools.call("Runtime.evaluate", returnByValue=True, expression=MARKS)["result"]["value"]
                assert collections.Counter((cls, text) for cls, text in marks) == expected
            finally:
                tools.close()
        assert canary.hits == []
