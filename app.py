"""Streamlit entry point: page setup and navigation only (each page lives in pages/)."""

import streamlit as st

st.set_page_config(page_title="evalcore", layout="wide")
st.navigation([
    st.Page("pages/runs.py", title="Runs", default=True),
    st.Page("pages/launch.py", title="Launch", url_path="launch"),
    st.Page("pages/questions.py", title="Questions", url_path="questions"),
    st.Page("pages/compare.py", title="Compare", url_path="compare"),
    st.Page("pages/charts.py", title="Charts", url_path="charts"),
    st.Page("pages/annotate.py", title="Annotate", url_path="annotate"),
]).run()
