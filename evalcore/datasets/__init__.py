"""Dataset loaders: every supported question format becomes a list of EvalQuestion."""

from evalcore.datasets.registry import FORMATS, load_questions

__all__ = ["FORMATS", "load_questions"]
