"""One evaluation end to end: ask the targets (evalcore.runner, or evalcore.scale on Ray), then
score the stored answers (evalcore.scoring, or on Ray), resumable. It sits above both engines, so
neither imports the other's orchestration."""

from evalcore.pipeline.live import RunResult, run_evaluation
from evalcore.pipeline.live_resume import resume_run

__all__ = ["RunResult", "resume_run", "run_evaluation"]
