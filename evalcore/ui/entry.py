"""The dashboard's one navigation definition, shipped inside the package.

Why here and not only in the top-level app.py: app.py and pages/ sit beside the package in
a source checkout and are not installed, so `evalcore app` from a wheel had nothing to run.
This module is what `evalcore app` hands to `streamlit run`; app.py just calls main(), so
both entries show the same pages with the same URLs.

Each page is its module in evalcore/ui (runs.py, questions.py, ...), registered by file:
Streamlit runs that file as __main__ and its `if __name__ == "__main__": render()` draws
the page. File pages (rather than st.Page(render) callables) keep AppTest.switch_page
usable, and the page logic still lives only in each module's render().

Started from a checkout's app.py, the page files are the thin wrappers in pages/ beside it
instead (they call the same render()). Why: Streamlit treats a `pages/` folder beside the
entry script as the old directory-based navigation until st.navigation has run, and
registers pages/questions.py under /questions; registering a different file under the same
URL would then be rejected. Same titles, same URLs, same render functions either way.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import streamlit as st

HERE = Path(__file__).resolve().parent

# `streamlit run evalcore/ui/entry.py` puts this folder on sys.path, which would make our
# modules importable as top-level `data`, `charts`, `wording`... and shadow anything of
# those names. The package is imported as `evalcore.ui`, so the folder is not needed there.
if str(HERE) in sys.path:
    sys.path.remove(str(HERE))

# (module file in evalcore/ui, title, url path); the first page is the default ("/").
PAGES: tuple[tuple[str, str, str], ...] = (
    ("runs", "Runs", ""),
    ("launch", "Launch", "launch"),
    ("questions", "Questions", "questions"),
    ("compare", "Compare", "compare"),
    ("charts", "Charts", "charts"),
    ("annotate", "Annotate", "annotate"),
)


def page_file(name: str) -> Path:
    """pages/<name>.py beside the entry script when there is one (a checkout's app.py),
    else the packaged module evalcore/ui/<name>.py."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)  # none at server start (ui/served.py): no warning
    if ctx is not None:
        wrapper = ctx.pages_manager.main_script_parent / "pages" / f"{name}.py"
        if wrapper.is_file():
            return wrapper.resolve()
    return HERE / f"{name}.py"


def page(name: str) -> st.Page:
    """The st.Page for one page, e.g. for st.page_link(page("questions"), ...).

    Built the same way as in main(), so Streamlit matches it to the registered page
    whichever entry (app.py or this file) the server was started with.
    """
    for module, title, url_path in PAGES:
        if module == name:
            if not url_path:
                return st.Page(page_file(module), title=title, default=True)
            return st.Page(page_file(module), title=title, url_path=url_path)
    raise KeyError(f"no dashboard page {name!r}")


def run_page(render: Callable[[], None]) -> None:
    """Draw a page from its pages/ wrapper, first making sure app.py's navigation is in charge.

    Why: with a pages/ folder beside app.py, Streamlit starts a fresh server in its old
    directory mode, and stays in it until some session has run st.navigation. A first
    visitor arriving by a deep link (/questions?run=...) is then served pages/questions.py
    directly, without app.py: the sidebar lists the raw file names ("app", "annotate", ...)
    for that whole session. Here the wrapper notices that mode, switches the process to
    app.py's navigation and reruns; the rerun keeps the page (Streamlit identifies pages by
    their URL path), so the visitor lands on the same page with the right sidebar.
    The flag is Streamlit's internal `PagesManager.uses_pages_directory`; where a Streamlit
    version lacks it, the page just renders. Not under AppTest: it resets that flag before
    every run (so every run of a test starts in directory mode), and a rerun there would drop
    the button click that started the run.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without the v1/v2 split
        PagesManager = None  # type: ignore[assignment]
    if (PagesManager is not None and getattr(PagesManager, "uses_pages_directory", None)
            and not st.config.get_option("global.appTest")):
        PagesManager.uses_pages_directory = False
        st.rerun()
    render()


def main() -> None:
    st.set_page_config(page_title="evalcore", layout="wide")
    from evalcore.ui import warm

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    compile_page = getattr(getattr(ctx, "pages_manager", None), "get_page_script_byte_code", None)
    # once per process, in the background: the pages' imports, their compiled scripts (ui/warm.py)
    warm.start([page_file(module) for module, _, _ in PAGES], compile_page)
    st.navigation([page(module) for module, _, _ in PAGES]).run()


if __name__ == "__main__":
    main()
