"""`evalcore app`: serve the Streamlit dashboard on 127.0.0.1 for the chosen store.

The store reaches the app through EVALCORE_STORE (Streamlit owns the app's argv), resolved
to an absolute path so the dashboard and the jobs it starts agree on it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path

import typer

from evalcore.cli.child_process import run_tied
from evalcore.cli.context import state
from evalcore.errors import EvalcoreError


def app_script() -> Path:
    """What `evalcore app` hands to `streamlit run`, found without importing Streamlit.

    evalcore/ui/served.py (the dashboard as an st.App whose middleware spares deep links a
    wrong first probe: ui/backend_hint.py) where the installed Streamlit has st.App, else the
    packaged entry evalcore/ui/entry.py itself. Both are installed with evalcore, so the
    dashboard runs from a wheel as well as from a checkout; both serve the same pages."""
    spec = importlib.util.find_spec("evalcore.ui")
    ui = Path(spec.origin).parent if spec and spec.origin else None
    if ui is None or not (ui / "entry.py").is_file():
        raise EvalcoreError("the dashboard entry evalcore/ui/entry.py is missing from this install")
    return ui / "served.py" if _streamlit_has_app() and (ui / "served.py").is_file() else ui / "entry.py"


def _streamlit_has_app() -> bool:
    """st.App (Streamlit's ASGI app) is there: Streamlit 1.57 or later (1.53-1.56 ship
    streamlit/starlette.py but export no st.App and make starlette optional), and the
    starlette and uvicorn it serves with. Checked by metadata: importing Streamlit costs this
    command a second."""
    import importlib.metadata
    import re

    try:
        version = tuple(int(x) for x in re.findall(r"\d+", importlib.metadata.version("streamlit"))[:2])
    except importlib.metadata.PackageNotFoundError:
        return False
    return version >= (1, 57) and all(importlib.util.find_spec(m) is not None for m in ("starlette", "uvicorn"))


def streamlit_argv(script: Path, port: int, headless: bool) -> list[str]:
    """The dashboard's server: loopback only, no usage statistics, and no watching of its own
    source files — a feature for editing an app while it runs, which for a served dashboard only
    costs every new visitor's session a watcher over every imported module (before its page can
    start, and again after it ends). The toolbar is a viewer's: Streamlit shows its developer
    options (among them a "Deploy" button to its cloud) to every visitor on localhost, which is
    every visitor of a dashboard bound to 127.0.0.1."""
    return [sys.executable, "-m", "streamlit", "run", str(script),
            "--server.address", "127.0.0.1", "--server.port", str(port),
            "--server.headless", "true" if headless else "false",
            "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
            "--client.toolbarMode", "viewer"]


def app_cmd(
    port: int = typer.Option(8501, "--port", "-p", help="Port on 127.0.0.1."),
    open_browser: bool = typer.Option(
        False, "--open", help="Also open the dashboard in a browser tab once it answers."),
    headless: bool = typer.Option(True, "--headless", hidden=True,
                                  help="Kept for compatibility: headless is the default."),
) -> None:
    """Open the dashboard: leaderboard, launch runs, per-question drill-down, compare, charts, annotate."""
    missing = [m for m in ("streamlit", "plotly") if importlib.util.find_spec(m) is None]
    if missing:  # checked without importing: Streamlit stays out of evalcore outside evalcore/ui
        raise EvalcoreError(f"the dashboard needs {' and '.join(missing)}: pip install 'evalcore[app]'")
    if not 0 < port < 65536:
        raise EvalcoreError(f"--port must be 1-65535, got {port}")
    store_root = state.store().root.resolve()
    env = {**os.environ, "EVALCORE_STORE": str(store_root)}
    url = f"http://127.0.0.1:{port}"
    typer.echo(f"dashboard for store {store_root} on {url} (Ctrl-C stops)", err=True)
    # Streamlit stays headless: it opens no tab for an st.App (ui/served.py), and its own
    # opening could first ask for an e-mail. --open opens the tab here once the server answers.
    started = (lambda: open_when_up(port)) if open_browser else None
    # the Streamlit server stops with this command, whatever stops it (cli/child_process.py)
    raise typer.Exit(run_tied(streamlit_argv(app_script(), port, headless=True), env=env, on_started=started))


def open_when_up(port: int, timeout: float = 60.0) -> threading.Thread:
    """In the background: once the server listens on 127.0.0.1:`port` (demo/wait_port.py's
    wait), open it in the user's browser (Python's webbrowser: $BROWSER or the desktop's
    default; Streamlit's front end itself waits for the server to be ready)."""
    def wait_then_open() -> None:
        import webbrowser

        from evalcore.demo.wait_port import wait_port

        if wait_port(port, timeout):
            webbrowser.open(f"http://127.0.0.1:{port}")

    thread = threading.Thread(target=wait_then_open, name="open-dashboard", daemon=True)
    thread.start()
    return thread


def register(app: typer.Typer) -> None:
    app.command("app")(app_cmd)
