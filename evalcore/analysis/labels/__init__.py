"""evalcore.analysis.labels: see evalcore/analysis/__init__.py."""
