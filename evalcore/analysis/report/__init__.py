"""evalcore.analysis.report: see evalcore/analysis/__init__.py."""
