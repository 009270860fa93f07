"""One real-browser check: `streamlit run app.py` on 127.0.0.1 and every page loaded in
headless Chromium. Fails on any Streamlit exception box or traceback in the rendered DOM.

Skips with a reason when chromium is missing (apt-get install -y chromium), but fails
under CI=true: CI must exercise the browser.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from evalcore.ui.entry import PAGES as ENTRY_PAGES
from tests.optional import requires, skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
# url path -> title, from the one page list (evalcore.ui.entry.PAGES; "" is the default page)
PAGES = {url_path: title for _, title, url_path in ENTRY_PAGES}
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]
BAD_MARKERS = ["stException", "Traceback (most recent call last)", "StreamlitAPIException"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if path:
        return path
    skip_or_fail("chromium not found (apt-get install -y chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(store_root: Path, log_path: Path, timeout: float = 30.0, *, installed: bool = False,
              extra: list[str] | None = None):
    """Run the dashboard on a free 127.0.0.1 port for `store_root`; yield its base URL once
    /_stcore/health answers, and stop the process (by its own pid/group) afterwards.

    By default a checkout's `streamlit run app.py` (pages/ wrappers beside it); `installed`
    runs exactly what `evalcore app` runs (cli/app_commands: the packaged st.App in
    evalcore/ui/served.py where Streamlit has st.App). `extra`: more Streamlit flags."""
    port = free_port()
    log = open(log_path, "wb")
    if installed:
        from evalcore.cli.app_commands import app_script, streamlit_argv

        argv = streamlit_argv(app_script(), port, headless=True)
    else:
        argv = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", "127.0.0.1",
                "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
                # as `evalcore app` serves: no watcher walking the checkout (and .venv) for edits
                "--server.fileWatcherType", "none"]
    argv += extra or []
    prefix = "/" + argv[argv.index("--server.baseUrlPath") + 1].strip("/") if "--server.baseUrlPath" in argv else ""
    proc = subprocess.Popen(argv, env={**os.environ, "EVALCORE_STORE": str(store_root)}, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{base}{prefix}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("streamlit did not become healthy: " + log_path.read_text(errors="replace")[-2000:])
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def served_app(app_store, tmp_path_factory):
    """One server for the tests that only read the store: its start is most of a test's time."""
    with serve_app(app_store.root, tmp_path_factory.mktemp("served") / "streamlit.log") as base:
        yield base


@pytest.fixture(params=["checkout app.py", "evalcore app"])
def either_app(request, app_store, tmp_path):
    """The dashboard started both ways users start it."""
    installed = request.param == "evalcore app"
    with serve_app(app_store.root, tmp_path / "streamlit.log", installed=installed) as base:
        yield base, installed


def _headings(dom: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h1[^>]*>(.*?)</h1>", dom, re.S)]


# the page's DOM and whether the app's script is idle (no run under way), read at one instant
_DOM_AND_STATE = ("JSON.stringify({dom: document.documentElement.outerHTML,"
                  " idle: document.querySelector('[data-test-script-state=notRunning]') !== null})")


class DevTools:
    """Just enough of the Chrome DevTools protocol to load a page and read its live DOM.

    `--dump-dom` with a virtual-time budget proved unreliable for a websocket-driven app
    (many loads stop at the skeleton), so the test drives one headless Chromium tab and
    waits in real time until the page's <h1> appears.
    """

    def __init__(self, browser: str, profile: Path):
        self.proc = subprocess.Popen([browser, *CHROME_FLAGS, f"--user-data-dir={profile}",
                                      "--remote-debugging-port=0", "--window-size=1280,1000", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + 30
        # the file appears before Chromium has written its port into it: wait for the content
        while not (port_file.exists() and port_file.read_text().strip()) and time.time() < deadline:
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        from websockets.sync.client import connect

        self._session = connect(ws_url, max_size=None, open_timeout=10)
        self.ws = self._session.__enter__()
        self.next_id = 0
        self.events: list[dict] = []  # the protocol's events read while waiting (domains a test enabled)

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == self.next_id:
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def window(self, width: int = 1400, height: int = 1000) -> None:
        """The window the issues judge pages in (1400 x 1000 unless told)."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def dom_after(self, url: str, title: str, seconds: float = 30.0) -> str:
        """Navigate to `url`; the DOM once the page shows `title` and then either its script run
        is over (the app's script state idle at two reads in a row: all its output has arrived)
        or a second has passed (the rest of a longer run's output is waited for by the test
        that needs it). It used to wait that second after every title, finished or not."""
        self.call("Page.navigate", url=url)
        deadline, dom, idle_before, titled = time.time() + seconds, "", False, None
        while time.time() < deadline:
            time.sleep(0.2)
            res = self.call("Runtime.evaluate", expression=_DOM_AND_STATE, returnByValue=True)
            state = json.loads(res.get("result", {}).get("value") or '{"dom": "", "idle": false}')
            dom = state["dom"]
            shown = any(h.startswith(title) for h in _headings(dom)) and "stAppSkeleton" not in dom
            titled = (titled or time.time()) if shown else None
            if shown and ((state["idle"] and idle_before) or time.time() - titled >= 1.0):
                return dom
            idle_before = shown and state["idle"]
        return dom

    def screenshot(self, path: Path) -> None:
        """A PNG of the current viewport (used by scripts/screenshots.py for docs/img)."""
        import base64

        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._session.__exit__(None, None, None)
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def test_every_page_loads_in_chromium_without_exceptions(either_app, tmp_path):
    """Each page must show its title, its navigation (linking each page's own URL) and no
    exception box or traceback; from a checkout's app.py and from `evalcore app` alike.

    `evalcore app` (ui/served.py + ui/backend_hint.py) also connects every deep link to the
    server's root at once. Before, opened at /charts, the front end first asked
    /charts/_stcore/health (a 404), waited its 100 ms retry delay, then asked /_stcore/health:
    every deep link paid that before the page's script could start. And its toolbar is a
    viewer's (no "Deploy" button)."""
    served_app, installed = either_app
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    tools = DevTools(browser, tmp_path / "profile")
    if installed:
        tools.call("Network.enable")
    # The first visit is a deep link, before any session ran app.py: Streamlit then starts in
    # its old pages/-directory mode, which entry.run_page must switch to app.py's navigation.
    # The checkout's other pages are the same render() functions: its deep link and its root
    # are enough there (CI's time goes to the installed entry's every page).
    order = ["charts", *[p for p in PAGES if p != "charts"]] if installed else ["charts", ""]
    try:
        for path in order:
            title = PAGES[path]
            dom = tools.dom_after(f"{served_app}/{path}", title)
            (tmp_path / f"dom-{path or 'root'}.html").write_text(dom)
            for marker in BAD_MARKERS:
                assert marker not in dom, f"page {path or '/'} shows {marker}"
            headings = _headings(dom)
            assert any(h.startswith(title) for h in headings), f"page {path or '/'} did not render; h1: {headings}"
            assert 'data-testid="stSidebarNav"' in dom, f"page {path or '/'}: no navigation rendered"
            labels = tools.call("Runtime.evaluate", returnByValue=True, expression=(
                "Array.from(document.querySelectorAll('[data-testid=stSidebarNav] a'))"
                ".map(a => a.textContent.trim())"))["result"]["value"]
            assert labels == list(PAGES.values()), f"page {path or '/'}: sidebar lists {labels}"
            links = tools.call("Runtime.evaluate", returnByValue=True, expression=(
                "Array.from(document.querySelectorAll('[data-testid=stSidebarNav] a')).map(a => a.href)"))
            assert links["result"]["value"] == [f"{served_app}/{p}" for p in PAGES], f"page {path or '/'}: links"
            if installed:
                asked = [e["params"]["request"]["url"] for e in tools.events
                         if e["method"] == "Network.requestWillBeSent"]
                assert f"{served_app}/_stcore/health" in asked, asked
                assert not [u for u in asked if u.startswith(f"{served_app}/{path}/")], "asked a wrong base path"
                hint = tools.call("Runtime.evaluate", returnByValue=True,
                                  expression="window.__streamlit ? window.__streamlit.BACKEND_BASE_URL : null")
                assert hint["result"]["value"] == (f"{served_app}/" if path else None), path
                assert "stAppDeployButton" not in dom and "Deploy" not in _wait_for(
                    tools, "document.querySelector('header') ? document.querySelector('header').innerText + '.' : ''")
                tools.events.clear()
    finally:
        tools.close()


def _wait_for(tools: "DevTools", expression: str, seconds: float = 30.0, every: float = 0.3):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = tools.call("Runtime.evaluate", returnByValue=True, expression=expression)["result"].get("value")
        if value:
            return value
        time.sleep(every)
    return None


def test_journeys_render_in_chromium(served_app, app_store, tmp_path):
    """The researcher's side-by-side answers, the grid, and the PM's verdict, in a real browser:
    the keyed containers are on the page, each method has its column, the grid has its rows."""
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    run = sorted(r for r in app_store.run_ids() if r.startswith("synthetic"))[0]
    tools = DevTools(browser, tmp_path / "profile")
    try:
        dom = tools.dom_after(f"{served_app}/questions?run={run}&qid=q00002", "Questions")
        assert not any(m in dom for m in BAD_MARKERS)
        columns = _wait_for(tools, "(() => { const c = document.querySelector('.st-key-answers');"
                                   " return c ? c.querySelectorAll('[data-testid=stColumn]').length : 0 })()")
        assert columns == 2, "one column per method inside the answers container"
        dom = tools.dom_after(f"{served_app}/questions?run={run}&view=grid&gm=token_f1", "Questions")
        assert not any(m in dom for m in BAD_MARKERS)
        assert _wait_for(tools, "document.querySelectorAll('[data-testid=stDataFrame]').length > 0")
        dom = tools.dom_after(f"{served_app}/compare?sys={run}:basic_search&sys={run}:local_search", "Compare")
        assert not any(m in dom for m in BAD_MARKERS)
        text = _wait_for(tools, "(() => { const v = document.querySelector('.st-key-verdict');"
                                " return v ? v.innerText : '' })()")
        assert text and "Verdict" in text and "local_search against basic_search (baseline)" in text
    finally:
        tools.close()


def test_compare_headline_and_forest_plot_in_chromium(served_app, app_store, tmp_path):
    """The PM's view in a real browser (issue 24, item 1): the headline names who wins and n, and
    the forest plot is a Plotly figure with one bar per tested metric (the default tested set)."""
    from evalcore.analysis.comparison.verdict import default_tested_metrics

    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    run = sorted(r for r in app_store.run_ids() if r.startswith("synthetic"))[0]
    keys = [f"{run}:basic_search", f"{run}:local_search"]
    tested = default_tested_metrics(app_store, keys)
    tools = DevTools(browser, tmp_path / "profile")
    try:
        dom = tools.dom_after(f"{served_app}/compare?sys={keys[0]}&sys={keys[1]}", "Compare")
        assert not any(m in dom for m in BAD_MARKERS)
        text = _wait_for(tools, "(() => { const v = document.querySelector('.st-key-verdict');"
                                " return v && v.querySelector('.js-plotly-plot') ? v.innerText : '' })()")
        assert text, "no verdict with a forest plot"
        assert re.search(rf"local_search is better than basic_search on (none|\d) of {len(tested)} tested "
                         r"metrics and worse on (none|\d), n = 24", text), text[:400]
        bars = _wait_for(tools, "(() => { const p = document.querySelector('.st-key-forest .js-plotly-plot');"
                                " if (!p || !p.data) return null;"
                                " return p.data.filter(t => t.type === 'bar').flatMap(t => Array.from(t.y)); })()")
        assert bars and len(bars) == len(tested), bars
        assert sorted(b.split(" ", 1)[0] for b in bars) == sorted(tested)
        assert all(" · Holm p = " in b and b.endswith(" · n = 24") for b in bars), bars
    finally:
        tools.close()


def test_runs_default_columns_fit_1400px_in_chromium(served_app, tmp_path):
    """Issue 24, item 4: at 1400 x 1000 the leaderboard's default columns fit without a
    horizontal scroll (the judges column used to push metrics, cost and latency off screen)."""
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    tools = DevTools(browser, tmp_path / "profile")
    try:
        tools.window()
        dom = tools.dom_after(f"{served_app}/", "Runs")
        assert not any(m in dom for m in BAD_MARKERS)
        sizes = _wait_for(tools, "(() => { const s = document.querySelector('[data-testid=stDataFrame] .dvn-scroller');"
                                 " return s && s.clientWidth > 0 ? [s.scrollWidth, s.clientWidth] : null })()")
        assert sizes, "no leaderboard drawn"
        assert sizes[0] <= sizes[1], f"the leaderboard scrolls sideways: {sizes[0]} px of content in {sizes[1]} px"
    finally:
        tools.close()


def test_enter_in_launch_boxes_never_starts_a_run_in_chromium(served_app, app_store, tmp_path):
    """Issue 24, item 6, in a real browser: a complete setup typed box by box, each confirmed with
    Enter, starts nothing (a form would have submitted on the first Enter); only the button does."""
    from evalcore.demo import questions_path

    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    jobs_dir = app_store.root / "_shared" / "app_jobs"
    before = set(jobs_dir.iterdir()) if jobs_dir.exists() else set()
    tools = DevTools(browser, tmp_path / "profile")
    idle = ("document.querySelector('[data-test-script-state=notRunning]') !== null"
            " && Array.from(document.querySelectorAll('[data-testid=InputInstructions]'))"
            ".every(e => !e.innerText.includes('Press Enter'))")
    try:
        dom = tools.dom_after(f"{served_app}/launch", "Launch")
        assert not any(m in dom for m in BAD_MARKERS)
        for label, value in (("Server URL", "http://127.0.0.1:9"), ("Dataset file path", str(questions_path())),
                             ("Methods", "basic_search")):
            assert _wait_for(tools, f"document.querySelector('input[aria-label^=\"{label}\"]') !== null")
            tools.call("Runtime.evaluate", expression=f"document.querySelector('input[aria-label^=\"{label}\"]').focus()")
            tools.call("Input.insertText", text=value)
            assert _wait_for(tools, "Array.from(document.querySelectorAll('[data-testid=InputInstructions]'))"
                                    ".some(e => e.innerText.includes('Press Enter'))"), f"{label}: typing not seen"
            for kind in ("keyDown", "keyUp"):
                tools.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                           text="\r" if kind == "keyDown" else "")
            assert _wait_for(tools, idle), f"the page did not settle after Enter in {label}: " + str(tools.call(
                "Runtime.evaluate", returnByValue=True, expression="[document.querySelector('[data-test-script-state]')"
                ".getAttribute('data-test-script-state'), Array.from(document.querySelectorAll("
                "'[data-testid=InputInstructions]')).map(e => e.innerText)]")["result"].get("value"))
            typed = tools.call("Runtime.evaluate", returnByValue=True, expression=(
                f"document.querySelector('input[aria-label^=\"{label}\"]').value"))["result"]["value"]
            assert typed == value
        text = tools.call("Runtime.evaluate", returnByValue=True,
                          expression="document.body.innerText")["result"]["value"]
        assert "Started." not in text and "Import started" not in text
        after = set(jobs_dir.iterdir()) if jobs_dir.exists() else set()
        assert after == before, "Enter started a job"
    finally:
        tools.close()


def test_the_hint_names_the_path_above_our_page_and_nothing_else(tmp_path):
    """What backend_hint's script (sent for a request of /compare below the server's base)
    computes in a real browser, for the URLs a browser may show: the path above the page, at
    the root or under a proxy's prefix; nothing where the URL does not end in the page."""
    import http.server
    import threading

    from evalcore.ui.backend_hint import hint_script

    page = b"<html><head>" + hint_script("compare") + b"</head><body>ok</body></html>"

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    tools = DevTools(browser, tmp_path / "profile")
    expected = {"/compare": "/", "/compare?sys=a&sys=b": "/", "/compare/": "/", "/team/evals/compare": "/team/evals/",
                "/": None, "/team": None, "/old-compare": None, "/compare/x": None}
    try:
        for path, want in expected.items():
            tools.call("Page.navigate", url=base + path)
            got = "unset"
            for _ in range(50):
                value = tools.call("Runtime.evaluate", returnByValue=True, expression=(
                    "document.body && document.body.innerText === 'ok' ? "
                    "(window.__streamlit ? window.__streamlit.BACKEND_BASE_URL : null) : 'loading'"))
                got = value["result"].get("value")
                if got != "loading":
                    break
                time.sleep(0.1)
            assert got == (None if want is None else base + want), path
    finally:
        tools.close()
        server.shutdown()


def test_under_a_base_path_named_like_a_page_every_page_connects(app_store, tmp_path):
    """`evalcore app`'s server under server.baseUrlPath "compare" (a reverse proxy's choice):
    its root page is /compare, which must not be taken for the Compare page (a hint of "/" made
    the front end probe the wrong server path forever); its Compare page is /compare/compare."""
    browser = chromium()
    requires("websockets.sync.client", "websockets is needed to drive Chromium")
    tools = DevTools(browser, tmp_path / "profile")
    try:
        with serve_app(app_store.root, tmp_path / "streamlit.log", installed=True,
                       extra=["--server.baseUrlPath", "compare"]) as base:
            for path, title in (("compare", "Runs"), ("compare/compare", "Compare")):
                dom = tools.dom_after(f"{base}/{path}", title, seconds=20)
                assert any(h.startswith(title) for h in _headings(dom)), f"/{path} did not render: {_headings(dom)}"
                assert not any(m in dom for m in BAD_MARKERS)
    finally:
        tools.close()
