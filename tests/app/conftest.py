"""Fixtures for the dashboard tests: a small synthetic store with two runs, one answer of
which is hostile markdown/HTML, and an AppTest factory pointed at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.demo.synthetic import build_store, write_run

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "evalcore" / "ui" / "entry.py"
HOSTILE = "**BOLD** <script>alert('x')</script> <b>html</b> [link](http://example.invalid)"


@pytest.fixture(scope="session")
def app_store(tmp_path_factory):
    """Two runs x two methods x 24 questions, plus a run whose first answer is hostile text."""
    root = tmp_path_factory.mktemp("app") / "runs"
    store = build_store(root, n_runs=2, n_questions=24, judge_calls=True)
    from evalcore.scoring.queries import run_questions

    questions = run_questions(store, store.run_ids()[0])
    write_run(store, "hostile", questions[:4], ["local_search"], ["faithfulness", "token_f1"], seed=99,
              answers={("local_search", questions[0].id): HOSTILE})
    yield store


@pytest.fixture
def hostile_text() -> str:
    return HOSTILE


@pytest.fixture
def make_app(app_store, monkeypatch):
    """AppTest of the dashboard with EVALCORE_STORE set; optionally switched to a page."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALCORE_STORE", str(app_store.root))

    def factory(page: str | None = None, *, packaged: bool = False, **params):
        # A link opens a new session: the URL is there before the first run. `packaged`
        # starts from evalcore/ui/entry.py (what `evalcore app` runs) instead of app.py.
        main = ENTRY if packaged else ROOT / "app.py"
        at = AppTest.from_file(str(main), default_timeout=60)
        at.query_params.update(params)
        if page and page != "runs" and not packaged:  # the link's page is the session's first run
            at.switch_page(f"pages/{page}.py")
            at.run()
            return at
        at.run()
        if page and page != "runs":
            at.switch_page(f"{page}.py" if packaged else f"pages/{page}.py")
            at.query_params.clear()
            at.query_params.update(params)
            at.run()
        return at

    return factory
