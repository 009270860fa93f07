"""evalcore.analysis.charts: see evalcore/analysis/__init__.py."""
