"""What the app benchmarks share: a headless Chromium tab over the DevTools protocol, the
streamlit health probe, stopping a child, and measuring evalcore as installed (bytecode).

Why a module of its own: bench_app.py and bench_first_visit.py both drive the browser, and
each importing the other made a circle (bench_app runs the first-visit report as its step 6).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]
PROBE = """JSON.stringify((() => { const app = document.querySelector('[data-testid="stApp"]');
  return {state: app ? app.getAttribute('data-test-script-state') : null,
          h1: Array.from(document.querySelectorAll('h1')).map(h => h.textContent.trim()),
          skeleton: !!document.querySelector('[data-testid="stAppSkeleton"]'),
          exception: !!document.querySelector('[data-testid="stException"]')}; })())"""



def installed_bytecode(work: Path) -> str:
    """Measure evalcore as an installed package runs: with its modules compiled to bytecode
    (pip compiles at install). A checkout run with PYTHONDONTWRITEBYTECODE=1 (as CI and this
    machine's shells do) recompiles every evalcore module in every fresh process, ~0.3-0.6 s
    of each cold page and CLI call that no user pays. The bytecode goes beside the sources, in
    the `__pycache__` folders git ignores: a PYTHONPYCACHEPREFIX would also hide the bytecode
    pip wrote for every installed package (Plotly, pandas, Streamlit), so each cold page
    compiled those from source too — a cost no installed copy pays either. `work` is unused
    (kept for the callers)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "evalcore")], check=True,
                   stdout=subprocess.DEVNULL)
    return "evalcore compiled to bytecode as installed (its __pycache__ folders; installed packages use pip's)"


def _healthy(base: str) -> bool:
    try:
        return urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).read() == b"ok"
    except OSError:
        return False


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


class DevTools:
    """One headless Chromium tab driven over the DevTools protocol."""

    def __init__(self, browser: str, profile: Path):
        self.proc = subprocess.Popen([browser, *CHROME_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                      "--window-size=1280,1000", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file, deadline = profile / "DevToolsActivePort", time.time() + 30
        while not (port_file.exists() and port_file.read_text().strip()) and time.time() < deadline:
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        from websockets.sync.client import connect

        self._session = connect(next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page"),
                                max_size=None, open_timeout=10)
        self.ws, self.next_id = self._session.__enter__(), 0

    def call(self, method: str, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self.next_id:
                return msg.get("result", {})

    def load(self, url: str, title: str, timeout: float = 120.0) -> tuple[float, float, str | None]:
        """Seconds from navigation to: the page's <h1> shown and its script run ended (and to the
        <h1> alone: the rest is the page's queries and the drawing of their results)."""
        self.call("Page.navigate", url="about:blank")
        t0, t_h1 = time.perf_counter(), float("nan")
        self.call("Page.navigate", url=url)
        while time.perf_counter() - t0 < timeout:
            s = json.loads(self.call("Runtime.evaluate", expression=PROBE, returnByValue=True)["result"]["value"])
            if any(h.startswith(title) for h in s["h1"]) and t_h1 != t_h1:
                t_h1 = time.perf_counter() - t0
            if s["state"] == "notRunning" and not s["skeleton"] and t_h1 == t_h1:
                return time.perf_counter() - t0, t_h1, "exception box shown" if s["exception"] else None
            time.sleep(0.02)
        return float("nan"), t_h1, f"not loaded in {timeout:.0f}s"

    def close(self) -> None:
        try:
            self._session.__exit__(None, None, None)
        finally:
            stop(self.proc)
