"""A rich progress bar for live runs: answers done / total, rate, ETA, and errors so far.

Kept separate so the engine stays testable without a terminal: `Progress(enabled=False)`
does nothing, and rich draws to stderr so stdout stays clean for the run id (on the one progress
console, evalcore.common.inert_text.progress_console: a bar draws with escape sequences of its own).
"""

from __future__ import annotations

from typing import Any

from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from evalcore.common.inert_text import progress_options, visible


class RateColumn(ProgressColumn):
    """Answers per second over the whole run (steadier than rich's windowed speed)."""

    def render(self, task: Any) -> Text:
        elapsed = task.elapsed or 0.0
        if elapsed <= 0 or not task.completed:
            return Text("-- q/s", style="progress.data.speed")
        return Text(f"{task.completed / elapsed:,.1f} q/s", style="progress.data.speed")


class RunProgress:
    def __init__(self, total: int, description: str, enabled: bool = True):
        self.enabled = enabled and total > 0
        self._progress: Progress | None = None
        self._task: Any = None
        self.total = total
        self.description = description

    def __enter__(self) -> "RunProgress":
        if self.enabled:
            self._progress = Progress(
                TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                RateColumn(), TextColumn("{task.fields[errors]} errors", markup=False),
                TimeElapsedColumn(), TextColumn("ETA", markup=False), TimeRemainingColumn(),
                transient=False, refresh_per_second=8, **progress_options())
            self._progress.__enter__()
            self._task = self._progress.add_task(visible(self.description), total=self.total, errors=0)
        return self

    def advance(self, errors: int, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=n, errors=errors)

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
