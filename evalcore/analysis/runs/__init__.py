"""evalcore.analysis.runs: see evalcore/analysis/__init__.py."""
