"""An offline demo: a small invented corpus, 40 questions, and a RAG server with three
honestly different methods, so `evalcore demo` shows every metric family with real signal."""

from importlib import resources
from pathlib import Path

METHODS = ("basic_search", "local_search", "llm_with_context")


def questions_path() -> Path:
    """The packaged demo question set (evalcore's native YAML format)."""
    return Path(str(resources.files("evalcore.demo") / "data" / "questions.yaml"))
