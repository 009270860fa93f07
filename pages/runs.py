"""Runs page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.runs."""

from evalcore.ui.runs import render

render()
