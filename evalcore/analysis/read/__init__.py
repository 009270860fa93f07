"""evalcore.analysis.read: see evalcore/analysis/__init__.py."""
