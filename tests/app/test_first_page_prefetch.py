"""The Runs page's server-start prefetch (ui/runs.py `prefetch`, called by ui/warm.py) makes
exactly the reads the page makes for a visitor with no URL state, so the first visitor's first
page finds every one in the pages' cache. Were an argument to differ (a default changed in
render() but not in prefetch()), the cache would miss and the first visit would pay the reads
again, silently: this test says which read."""

from __future__ import annotations

import pytest

from evalcore.store import RunStore
from evalcore.ui import cached_reads
from tests.app.test_labels_pages import labelled  # noqa: F401 - a store with sampled labels (fixture)


@pytest.fixture
def reads(monkeypatch):
    """Every cached read made, as (function, args, kwargs), computed uncached."""
    seen: list[tuple] = []

    def recorded(_fn, name, root, token, args, kwargs):
        seen.append((name, args, kwargs))
        return _fn(RunStore(root), *args, **dict(kwargs))

    monkeypatch.setattr(cached_reads, "_call", recorded)
    return seen


def _page_reads(make_app, reads, **params) -> list[tuple]:
    at = make_app(packaged=True, **params)
    assert not at.exception, at.exception
    assert at.title[0].value == "Runs"
    got = list(reads)
    reads.clear()
    return got


def _prefetch_reads(reads) -> list[tuple]:
    from evalcore.ui import runs

    runs.prefetch()
    got = list(reads)
    reads.clear()
    return got


def test_the_prefetch_makes_every_read_of_the_first_page(make_app, reads, app_store):
    page = _page_reads(make_app, reads)
    prefetched = _prefetch_reads(reads)
    assert any(name.endswith(".leaderboard") for name, _, _ in page)
    missing = [r for r in page if r not in prefetched]
    assert not missing, f"read by the page, not prefetched (the first visit pays them): {missing}"


def test_with_labels_the_corrected_column_and_calibration_are_prefetched(labelled, reads, monkeypatch):
    """A store with randomly sampled labels: the page also reads the corrected column's texts and
    the judge calibration; the prefetch makes both, with the same arguments."""
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import ENTRY

    store, _ = labelled
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = AppTest.from_file(str(ENTRY), default_timeout=90)
    at.run()
    assert not at.exception, at.exception
    page = list(reads)
    reads.clear()
    prefetched = _prefetch_reads(reads)
    names = {name.rsplit(".", 1)[1] for name, _, _ in page}
    assert {"corrected_texts", "runs_summary"} <= names
    assert not [r for r in page if r not in prefetched]


def test_a_visitor_with_url_state_reads_what_the_prefetch_did_not(make_app, reads):
    """The holding-together has teeth: a view the prefetch did not make shows as missing."""
    page = _page_reads(make_app, reads, order="ascending", cols="token_f1")
    prefetched = _prefetch_reads(reads)
    assert [r for r in page if r not in prefetched]


def test_an_empty_store_prefetches_without_error(tmp_path, monkeypatch, reads):
    monkeypatch.setenv("EVALCORE_STORE", str(tmp_path / "empty"))
    assert [name.rsplit(".", 1)[1] for name, _, _ in _prefetch_reads(reads)] == [
        "metric_names", "damaged_annotations", "damaged_runs", "run_list"]
