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
from tests.optional import requires

from ..app.test_browser import BAD_MARKERS, DevTools, _headings, chromium, serve_app

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


@pytest.fixture(scope="module")
def hostile_app(canary, tmp_path_factory):
    """One store and one dashboard for this file's tests (a server's start and its first page's
    imports are most of a test's time): the hostile answer's run, and the run whose names,
    categories and question types point at the canary."""
    url, _ = canary
    folder = tmp_path_factory.mktemp("hostile")
    store = RunStore(folder / "runs")
    q = EvalQuestion(id="q0", question=f"What is the capital? {LINK_MD}", ground_truth=f"Paris {IMG_MD}")
    answer_run = write_run(store, "hostile", [q], ["local_search"], ["token_f1"], seed=3,
                           answers={("local_search", "q0"): HOSTILE})
    questions = [EvalQuestion(id=f"q{i}", question=f"Question {i}?", ground_truth="Paris",
                              category=f"[cat]({url}/category) <img src={url}/cat.png>",
                              question_type=f"<img src='{url}/type.png'> :red[t] $x^2$") for i in range(6)]
    names_run = write_run(store, "hostile", questions, _hostile_methods(url), ["token_f1", "faithfulness"], seed=5)
    with serve_app(store.root, folder / "streamlit.log") as base:
        yield {"base": base, "answer_run": answer_run, "names_run": names_run, "questions": questions}


def _hostile_methods(url: str) -> list[str]:
    return [f"![m]({url}/method.png)", f'<a xlink:href="{url}/svg">x</a><b style="fill:red">B</b>']


def test_hostile_answer_is_literal_text_in_the_dom(hostile_app, tmp_path):
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    base, run_id = hostile_app["base"], hostile_app["answer_run"]
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


# ---- round 2: hostile names from the store and the URL, and a canary that counts fetches ----
@pytest.fixture(scope="module")
def canary():
    """An HTTP server on 127.0.0.1 that counts every request: an image or link that the page
    builds from untrusted text and the browser fetches shows up here."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server API
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


def test_hostile_names_and_url_params_render_inert_on_every_page(canary, hostile_app, tmp_path):
    """Method names, categories and question types from the store, and rejected URL values, go
    into button labels, table headers, Plotly ticks/legends/titles and warnings. None of them
    may become an element, a style or a fetch: the canary must see no request."""
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    url, hits = canary
    methods = _hostile_methods(url)
    questions, run_id, base = hostile_app["questions"], hostile_app["names_run"], hostile_app["base"]
    bad_value = f"![x]({url}/param.png)"
    probe = ("(() => JSON.stringify([...document.querySelectorAll('img,a,image,script,iframe,link')]"
             ".map(e => (e.getAttribute('src') || '') + ' ' + (e.getAttribute('href') || '') + ' '"
             f" + (e.getAttribute('xlink:href') || '')).filter(s => s.includes('{url}'))))()")
    category, question_type = questions[0].category, questions[0].question_type
    # per page: its title, its query, the untrusted strings that must show as literal text, and
    # those that must show literally inside a drawn Plotly chart (charts draw seconds after the
    # script ends): only once they are all there has the page rendered its untrusted content
    pages = [("", "Runs", f"?status={bad_value}&sort={bad_value}", methods[:1], []),
             ("questions", "Questions", f"?run={run_id}&method={bad_value}", [*methods, category, question_type], []),
             ("compare", "Compare", f"?run={run_id}&scatter=shown", methods, methods),
             ("charts", "Charts", f"?run={run_id}", methods, methods),
             ("annotate", "Annotate", f"?run={run_id}&status={bad_value}", [tuple(methods)], [])]  # either item
    tools = DevTools(browser, tmp_path / "profile")
    try:
        for n, (path, title, query, shown, drawn) in enumerate(pages):
            dom = tools.dom_after(f"{base}/{path}{query}", title)
            (tmp_path / f"dom-{path or 'runs'}.html").write_text(dom)
            assert any(h.startswith(title) for h in _headings(dom)), f"{path or '/'} did not render"
            for marker in BAD_MARKERS:
                assert marker not in dom, f"{path or '/'} shows {marker}"
            missing = _wait_until_shown(tools, shown, drawn)
            assert not missing, f"{path or '/'}: not shown literally (markup interpreted?): {missing}"
            # a request the page's own elements would make went out before this one
            assert _sentinel_arrives(tools, url, hits, f"/sentinel-{n}"), "the canary sees no request at all"
            made = json.loads(tools.call("Runtime.evaluate", expression=probe,
                                         returnByValue=True)["result"]["value"])
            assert made == [], f"{path or '/'}: elements built from untrusted text: {made}"
            fetched = [h for h in hits if not h.startswith("/sentinel-")]
            assert fetched == [], f"{path or '/'}: the browser fetched {fetched}"
    finally:
        tools.close()


RENDERED = """(() => JSON.stringify({
  running: !!document.querySelector('[data-testid=stStatusWidget]'),
  text: document.body.innerText,
  drawn: [...document.querySelectorAll('.js-plotly-plot svg text')].map(t => t.textContent).join('\\n')}))()"""


def _wait_until_shown(tools: DevTools, shown: list, drawn: list, seconds: float = 60.0) -> list:
    """Wait until the script run is over and every string is on the page as text (`drawn`:
    as text of a drawn Plotly chart; a tuple: one of its strings); return those still missing
    at the deadline."""
    def absent(wanted: str | tuple[str, ...], text: str) -> bool:
        return not any(w in text for w in ((wanted,) if isinstance(wanted, str) else wanted))

    deadline, missing = time.time() + seconds, [*shown, *drawn]
    while time.time() < deadline:
        state = json.loads(tools.call("Runtime.evaluate", expression=RENDERED, returnByValue=True)["result"]["value"])
        missing = [s for s in shown if absent(s, state["text"])] + [f"{s} (in a chart)" for s in drawn
                                                                    if absent(s, state["drawn"])]
        if not missing and not state["running"]:
            return []
        time.sleep(0.3)
    return missing


def _sentinel_arrives(tools: DevTools, url: str, hits: list[str], path: str, seconds: float = 30.0) -> bool:
    """The browser fetches `url + path` now (no element is made); wait until the canary has it.
    The page's own fetches, started while it rendered, were sent before this one."""
    tools.call("Runtime.evaluate", expression=f"fetch('{url}{path}', {{mode: 'no-cors'}}).catch(() => 0); 1")
    deadline = time.time() + seconds
    while time.time() < deadline:
        if path in hits:
            return True
        time.sleep(0.1)
    return False
