"""Targets: the RAG systems a live run asks, as black boxes over HTTP."""

from evalcore.targets.client import RetryPolicy, TargetClient, TargetUnavailable
from evalcore.targets.parse import MalformedResponse, parse_response
from evalcore.targets.paths import PathError, get_path
from evalcore.targets.spec import ResponseMap, TargetConfigError, TargetSpec, render_body

__all__ = ["MalformedResponse", "PathError", "ResponseMap", "RetryPolicy", "TargetClient",
           "TargetConfigError", "TargetSpec", "TargetUnavailable", "get_path", "parse_response",
           "render_body"]
