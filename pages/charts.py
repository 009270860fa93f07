"""Charts page: a thin wrapper so Streamlit can run it; the page lives in evalcore.ui.charts."""

from evalcore.ui.charts import render

render()
