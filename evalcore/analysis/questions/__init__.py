"""evalcore.analysis.questions: see evalcore/analysis/__init__.py."""
