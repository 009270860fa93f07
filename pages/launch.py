"""Launch page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.launch."""

from evalcore.ui.launch import render

render()
