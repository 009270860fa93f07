"""What a scoring pass stores beside its values, and records in the run's manifest.

Why a module of its own: both engines (evalcore/scoring/engine.py and scale/ray_scoring.py) and the
spot check record a pass the same way, and the order matters. The judge calls a pass made are
counted (judges/tally.py) only once their rows are written; the figures and the pass's history
entry reach run.json only through `RunWriter.publish(record=...)`, which changes the manifest
with the data it describes or not at all. Recorded before the publish, as it once was, a full
disk that failed the publish left run.json claiming 4 judges and 2,100 judge calls that no
reader would ever see.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from evalcore.metrics.base import MetricSpec, ScoringContext

if TYPE_CHECKING:
    from evalcore.judges.tally import CallTally

ManifestEdit = Callable[[Any], dict[str, Any]]


def store_judge_calls(ctx: ScoringContext, writer: Any, tally: CallTally | None = None) -> None:
    """Store the judge calls made since the last time (the judge layer writes nothing); the
    `tally` counts them once their rows are written, never before."""
    work = ctx.built("judge_work")
    if work is not None:
        calls = work.take_calls()
        if calls:
            writer.write_judge_calls(calls)
            if tally is not None:
                tally.add(calls)


def recorded_tally(ctx: ScoringContext, tally: CallTally) -> CallTally | None:
    """The tally to record: only when the pass used a judge that may update the manifest (the
    spot check's second judge, for one, does not)."""
    work = ctx.built("judge_work")
    return tally if work is not None and work.update_manifest else None


def pass_record(tally: CallTally | None, entry: dict[str, Any] | None) -> ManifestEdit | None:
    """The manifest edit a publish applies with the data it makes visible: the pass's judge
    figures (the manifest keeps the last pass's counts; judges accumulate) and, once the whole
    pass is stored, its history entry (`history_entry`). None: nothing to record."""
    if tally is None and entry is None:
        return None
    figures = tally.figures() if tally is not None else None

    def edit(manifest: Any) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        if figures is not None:
            changes["counts"] = {**manifest.counts, **figures["counts"]}
            changes["judges"] = sorted(set(manifest.judges) | set(figures["judges"]))
        if entry is not None:
            config = dict(manifest.config)
            config["scoring"] = [*(config.get("scoring") or []), entry][-20:]
            changes["config"] = config
        return changes

    return edit


def history_entry(specs: list[MetricSpec], options: dict[str, Any]) -> dict[str, Any]:
    """The pass's entry in the manifest's scoring history: the scoring options (weights, judge,
    prices) kept with the run, as the metric definitions ask (docs/metrics/performance.md); secrets (any option named like a key or a
    token) are left out. Judge labels reach `judges` from the stored calls instead."""
    safe = {k: v for k, v in options.items() if "key" not in k.lower() and "token" not in k.lower()}
    if any("embeddings" in s.needs for s in specs) and not safe.get("embedding_model"):
        from evalcore.embeddings.models import DEFAULT_MODEL_ID

        safe["embedding_model"] = f"{DEFAULT_MODEL_ID} (packaged default)"
    return {"at": datetime.now(timezone.utc).isoformat(), "metrics": [s.name for s in specs], "options": safe}
