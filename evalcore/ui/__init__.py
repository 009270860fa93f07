"""The Streamlit dashboard: one module per page plus the data layer they share.

This is the only part of evalcore that imports Streamlit (the page modules); data.py and
the helpers stay importable without it so benchmarks and tests can call them directly.
"""
