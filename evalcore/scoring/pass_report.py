"""What a scoring pass reports: per metric, how many values, how many NaN and why, and the mean;
for the pass, what was selected, skipped, written and what failed. Merged across Ray workers
(`to_dict` / `merge`), so the local and the Ray pass report alike."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evalcore.metrics.base import Score


@dataclass
class MetricReport:
    n: int = 0
    n_nan: int = 0
    reasons: Counter = field(default_factory=Counter)
    mean: float | None = None
    _sum: float = 0.0

    def add(self, score: Score) -> None:
        self.n += 1
        if math.isnan(score.value):
            self.n_nan += 1
            self.reasons[score.reason or "?"] += 1
        else:
            self._sum += score.value
            scored = self.n - self.n_nan
            self.mean = self._sum / scored

    def to_dict(self) -> dict[str, Any]:
        """Plain figures, for a report computed elsewhere (a Ray worker) to be merged here."""
        return {"n": self.n, "n_nan": self.n_nan, "sum": self._sum, "reasons": dict(self.reasons)}

    def merge(self, other: dict[str, Any]) -> None:
        """Add the figures of another report of the same metric (`to_dict`)."""
        self.n += other["n"]
        self.n_nan += other["n_nan"]
        self._sum += other["sum"]
        self.reasons.update(other["reasons"])
        scored = self.n - self.n_nan
        self.mean = self._sum / scored if scored else None


@dataclass
class ScoreReport:
    run_id: str
    metrics: list[str]
    skipped: dict[str, str] = field(default_factory=dict)
    by_metric: dict[str, MetricReport] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    n_items: int = 0
    n_values: int = 0
    parts_written: int = 0
    unmatched_responses: int = 0
    dry_run: bool = False
    estimate: dict[str, Any] | None = None
    seconds: float = 0.0
