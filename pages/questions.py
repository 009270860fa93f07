"""Questions page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.questions."""

from evalcore.ui.questions import render

render()
