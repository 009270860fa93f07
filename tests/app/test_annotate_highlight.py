"""Annotate highlights the evidence: the words matching the claim are marked, and the passage the
judge cited for the claim comes first (tests/app/claims_store.py: alpha's claim 1 cites rank 2)."""

from __future__ import annotations

import html
import re

from tests.app.claims_store import CONTEXTS, claims_store


def _items(at) -> list[str]:
    return [t.value for t in at.text if t.value.count(" / ") == 2]


def test_claim_evidence_is_marked_and_the_cited_passage_comes_first(make_app, tmp_path, monkeypatch):
    store, run = claims_store(tmp_path / "runs")
    monkeypatch.setenv("EVALCORE_STORE", str(store.root))
    at = make_app("annotate", run=run, kind="claim", who="ann")
    seen = []
    for _ in range(4):  # the queue order is pseudo-random: skip to alpha's first claim
        assert not at.exception
        seen += _items(at)
        if seen[-1] == "alpha / q1 / faithfulness:answer:0":
            break
        next(b for b in at.button if b.proto.shortcut.upper() == "N").click().run()
    assert seen[-1] == "alpha / q1 / faithfulness:answer:0", seen
    captions = [c.value for c in at.caption if c.value.startswith("Context rank")]
    assert captions[0] == "Context rank 2 · cited by the judge"  # the cited passage first
    assert captions[1:] == ["Context rank 1", "Context rank 3"]
    bodies = [h.proto.body for h in at.get("html")]
    cited = next(b for b in bodies if "rises near" in b)
    marked = [html.unescape(m) for m in re.findall(r'<mark class="match"[^>]*>(.*?)</mark>', cited)]
    # "The Nile flows north through Uganda." against passage 2: its content words, neighbours joined
    assert marked == ["Nile", "Nile flows north through Uganda"], marked
    assert html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", cited)) == CONTEXTS[1]
