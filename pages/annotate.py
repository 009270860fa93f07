"""Annotate page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.annotate."""

from evalcore.ui.annotate import render

render()
