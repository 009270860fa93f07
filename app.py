"""Streamlit entry point for a source checkout (`streamlit run app.py`).

The navigation itself lives in evalcore/ui/entry.py, which is installed with the package
and is what `evalcore app` runs; this file only calls it, so there is one page list.
"""

from evalcore.ui.entry import main

main()
