"""Untrusted answer text cannot inject markdown, links, images or HTML into the app.

`streamlit run app.py` on 127.0.0.1 and headless Chromium (the helpers of
tests/app/test_browser.py, imported). The Questions page shows a run whose question, ground
truth and answer are hostile: raw HTML with an onerror handler, a <script>, a markdown link
and a markdown image. In the live DOM the text must appear literally, and no <img>, <a> or
<script> element may come from it (nothing pointing at the hostile URLs, the script never
ran). A page that failed to render would also fail: the literal text must be found.
"""

from __future__ import annotations

import json
import time

import pytest

from evalcore.schemas import EvalQuestion
from evalcore.store import RunStore
from evalcore.demo.synthetic import write_run

from ..app.test_browser import DevTools, chromium, serve_app

IMG_HTML = '<img src="x-evil-img" onerror="window.__pwned_img=1">'
SCRIPT = "<script>window.__pwned_script=1</script>"
LINK_MD = "[click me](http://evil.invalid/link)"
IMG_MD = "![pic](http://evil.invalid/x.png)"
HOSTILE = f"Paris. {IMG_HTML} {SCRIPT} {LINK_MD} {IMG_MD} **bold** <b>raw</b>"
PROBE = """(() => {
  const html = document.documentElement.outerHTML;
  const bad = [...document.querySelectorAll('img,a,script,iframe')].filter(e =>
      /evil|x-evil-img|__pwned/.test((e.getAttribute('src') || '') + (e.getAttribute('href') || '')
                                      + (e.tagName === 'SCRIPT' ? e.textContent : '')));
  return JSON.stringify({bad: bad.map(e => e.outerHTML.slice(0, 200)),
                         pwned: !!(window.__pwned_img || window.__pwned_script),
                         text: document.body.innerText});
})()"""


@pytest.fixture
def hostile_app(tmp_path):
    store = RunStore(tmp_path / "runs")
    q = EvalQuestion(id="q0", question=f"What is the capital? {LINK_MD}", ground_truth=f"Paris {IMG_MD}")
    run_id = write_run(store, "hostile", [q], ["local_search"], ["token_f1"], seed=3,
                       answers={("local_search", "q0"): HOSTILE})
    with serve_app(store.root, tmp_path / "streamlit.log") as base:
        yield base, run_id


def test_hostile_answer_is_literal_text_in_the_dom(hostile_app, tmp_path):
    browser = chromium()
    pytest.importorskip("websockets.sync.client", reason="websockets is needed to drive Chromium")
    base, run_id = hostile_app
    tools = DevTools(browser, tmp_path / "profile")
    try:
        tools.dom_after(f"{base}/questions?run={run_id}&method=local_search", "Questions")
        deadline, seen = time.time() + 20, {}
        while time.time() < deadline:  # the detail section arrives after the title
            res = tools.call("Runtime.evaluate", expression=PROBE, returnByValue=True)
            seen = json.loads(res.get("result", {}).get("value") or "{}")
            if IMG_HTML in seen.get("text", ""):
                break
            time.sleep(0.5)
    finally:
        tools.close()
    text = seen.get("text", "")
    (tmp_path / "page.txt").write_text(text)
    for literal in (IMG_HTML, SCRIPT, LINK_MD, IMG_MD, "**bold**", "<b>raw</b>"):
        assert literal in text, f"{literal!r} is not shown literally"
    assert seen["bad"] == [], f"elements created from untrusted text: {seen['bad']}"
    assert seen["pwned"] is False
