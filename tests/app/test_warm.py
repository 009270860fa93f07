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

    monkeypatch.setattr(warm, "_check_direct_execution", lambda: frozen.append("checked too early"))
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


class _ScriptCache:
    def __init__(self):
        self.compiled = []

    def get_bytecode(self, path):
        self.compiled.append(path)
        if path.endswith("broken.py"):
            raise SyntaxError("a page that does not compile shows its own error when opened")
        return object()


def test_the_first_visit_is_made_at_server_start(monkeypatch):
    """Once the server's runtime exists: the entry script and every page compiled into its script
    cache, and each page module's prefetch() called (a failing one does not stop the rest)."""
    import sys
    import types

    cache = _ScriptCache()
    monkeypatch.setattr(warm, "_serving_runtime", lambda: types.SimpleNamespace(_script_cache=cache))
    fetched = []
    monkeypatch.setattr(warm, "_check_direct_execution", lambda: fetched.append("checked"))

    def failing():
        fetched.append("broken")
        raise OSError("a store that cannot be read: the page says so itself")

    monkeypatch.setitem(sys.modules, "evalcore.ui.xfirst", types.SimpleNamespace(prefetch=lambda: fetched.append("x")))
    monkeypatch.setitem(sys.modules, "evalcore.ui.broken", types.SimpleNamespace(prefetch=failing))
    warm._first_visit([Path("/app/entry.py")], [Path("/app/broken.py"), Path("/app/xfirst.py"), Path("/app/none.py")])
    assert cache.compiled == ["/app/entry.py", "/app/broken.py", "/app/xfirst.py", "/app/none.py"]
    assert fetched == ["checked", "broken", "x"]


def test_without_a_server_the_first_visit_does_nothing(monkeypatch):
    """A process with no Streamlit runtime (a test, a script calling preload): the cache such
    reads would fill belongs to no server, so nothing is compiled or read."""
    import sys
    import types

    from streamlit import runtime

    monkeypatch.setattr(runtime, "exists", lambda: False)
    assert warm._serving_runtime() is None
    fetched = []
    # made before Streamlit's runtime exists, its check would log "run it with streamlit run"
    monkeypatch.setattr(warm, "_check_direct_execution", lambda: fetched.append("checked"))
    monkeypatch.setitem(sys.modules, "evalcore.ui.xfirst", types.SimpleNamespace(prefetch=lambda: fetched.append(1)))
    warm._first_visit([], [Path("/app/xfirst.py")])
    assert fetched == []
    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(runtime, "get_instance", lambda: types.SimpleNamespace())  # no script cache: reads only
    warm._first_visit([], [Path("/app/xfirst.py")])
    assert fetched == ["checked", 1]


def test_the_server_start_check_is_streamlits_own(monkeypatch):
    """The direct-execution check made at server start is Streamlit's: after it, the first page's
    first element finds it done (no inspect.stack() in the visitor's run)."""
    from streamlit import delta_generator

    if not hasattr(delta_generator, "_use_warning_has_been_displayed"):
        import pytest

        pytest.skip("this Streamlit has no direct-execution check")
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    warm._check_direct_execution()
    assert delta_generator._use_warning_has_been_displayed is True
