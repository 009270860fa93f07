"""Compare page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.compare."""

from evalcore.ui.compare import render

render()
