"""The Compare page offers `evalcore report`'s file as a download (issue 27, item 4): the button's
data, built on click, is the report of the pair on the page with the page's tested metrics, whose
numbers are the ones `report_data` (and so `evalcore compare --json`) gives."""

from __future__ import annotations

import json
import re

import streamlit as st

from evalcore.analysis.report.report_data import report_data


def test_compare_page_download_is_the_report_of_the_pair_shown(make_app, app_store, monkeypatch):
    offered = {}

    def capture(label, data=None, **kwargs):  # keeps the button's callable; builds nothing yet
        offered.update(kwargs, label=label, data=data)
        return False

    monkeypatch.setattr(st, "download_button", capture)
    run = sorted(r for r in app_store.run_ids() if r.startswith("synthetic"))[0]
    base, cand = f"{run}:basic_search", f"{run}:local_search"
    at = make_app("compare", sys=[base, cand], tm=["faithfulness", "token_f1"])
    assert not at.exception
    assert offered.get("key") == "report_html" and offered["file_name"].endswith(".html"), offered
    assert offered["mime"] == "text/html" and callable(offered["data"])  # built when clicked, not on every run
    page = offered["data"]()
    block = re.search(r'<script type="application/json" id="evalcore-data">(.*?)</script>', page, re.S)
    shown = json.loads(block.group(1))["compare"]
    expected = report_data(app_store, [base, cand], metrics=["faithfulness", "token_f1"])["compare"]
    assert [shown["baseline"], *shown["candidates"]] == [base, cand]
    assert shown["metrics"] == json.loads(json.dumps(expected["metrics"]).replace("NaN", "null"))
    assert shown["verdicts"][cand]["summary"] == expected["verdicts"][cand]["summary"]
