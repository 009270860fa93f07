"""evalcore.analysis.comparison: see evalcore/analysis/__init__.py."""
