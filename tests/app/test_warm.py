"""ui/warm.py: the dashboard process loads the pages' imports once, in the background."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from evalcore.ui import warm


def test_every_module_it_warms_exists():
    missing = [m for m in warm.MODULES if importlib.util.find_spec(m) is None]
    assert not missing, f"warm.MODULES names modules that do not exist: {missing}"


def test_it_starts_one_thread_per_process(monkeypatch):
    calls = []
    done = threading.Event()
    monkeypatch.setattr(warm, "_started", threading.Event())
    monkeypatch.setattr(warm, "_load", lambda pages, compile_page: (calls.append(pages), done.set()))
    assert warm.start(["a.py"]) is True
    assert warm.start(["b.py"]) is False
    assert done.wait(10)
    assert calls == [("a.py",)]


def test_it_compiles_every_page_and_freezes_what_it_loaded(monkeypatch):
    """The pages' scripts go to the server's script cache (Streamlit compiles each page's file
    on its first visit otherwise), and what the imports created leaves the collector's sight."""
    import gc

    monkeypatch.setattr(warm, "MODULES", ("json",))
    compiled = []
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))

    def compile_page(path):
        compiled.append(path)
        if path.endswith("broken.py"):
            raise SyntaxError("a page that does not compile shows its own error when opened")

    warm._load(("pages/runs.py", "pages/broken.py", "pages/charts.py"), compile_page)
    assert compiled == ["pages/runs.py", "pages/broken.py", "pages/charts.py"]
    assert frozen == [True]


def test_the_entry_hands_every_page_file_to_the_warm_up(monkeypatch):
    """main() passes each registered page's file and the pages manager's compiler."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(warm.__file__).with_name("entry.py")), default_timeout=60)
    seen = {}
    monkeypatch.setattr(warm, "_under_apptest", lambda: False)
    monkeypatch.setattr(warm, "_started", threading.Event())
    monkeypatch.setattr(warm, "threading", _NoThreads(seen))
    at.run()
    pages, compile_page = seen["args"]
    from evalcore.ui.entry import PAGES

    assert [Path(p).stem for p in pages] == [m for m, _, _ in PAGES]
    assert callable(compile_page)
    code = compile_page(str(pages[0]))
    assert code is compile_page(str(pages[0]))  # cached: the second visitor reuses it


class _NoThreads:
    """threading stand-in: records the warm-up thread's arguments instead of starting it."""

    def __init__(self, seen):
        self.seen = seen

    def Thread(self, target, args, **kwargs):  # noqa: N802 - threading's name
        seen = self.seen

        class _T:
            def start(self):
                seen["args"] = args
        return _T()


def test_the_figure_warm_up_draws_without_error():
    """_load swallows its errors (a page says what is wrong itself): called directly, the small
    figure must build and serialise, or the warm-up silently stops warming Plotly."""
    warm._draw_figures()
