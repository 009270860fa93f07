"""The live runner: ask RAG targets over HTTP, store answers as they arrive, resume, score."""

from evalcore.runner.engine import Job, ResponseSink, ask_jobs, plan_jobs
from evalcore.runner.live import RunResult, resume_run, run_evaluation

__all__ = ["Job", "ResponseSink", "RunResult", "ask_jobs", "plan_jobs", "resume_run", "run_evaluation"]
