"""The live runner: ask RAG targets over HTTP and store answers as they arrive (evalcore.pipeline
runs it and then scoring)."""

from evalcore.runner.engine import Job, ResponseSink, ask_jobs, plan_jobs

__all__ = ["Job", "ResponseSink", "ask_jobs", "plan_jobs"]
