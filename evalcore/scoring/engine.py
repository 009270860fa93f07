"""Score a run: compute metric values for every (question, method) and store them.

Two phases. Phase 1 runs the ordinary metrics over chunks of items and writes one Parquet
part file per chunk, so an interrupted scoring keeps everything written before the
interruption (re-running replaces values: compaction keeps the newest row per key). Each
phase ends by publishing (compacting) the run, also when interrupted, and the manifest
records the pass with that publish, never before it (scoring_record.py); phase 2 runs the
composites (group "composite") over the values phase 1 published, which scoring reads and
passes in (`stored_metric_values`; a metric never reads the store).

Selection: named metrics and/or groups; by default every metric needing neither a judge nor
embeddings whose needs the run can meet (e.g. no gold passages -> no retrieval metrics).
Judge metrics join the default only when options["judge"] is set. A metric raising an
unexpected exception does not stop the others: its values are stored as NaN with the error
as the reason and the report lists it; EvalcoreError (bad configuration) stops the run.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Iterable

from evalcore.common.inert_text import progress_options, visible
from evalcore.errors import EvalcoreError, note_published
from evalcore.metrics.base import Item, MetricSpec, ScoringContext
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.scoring.chunk import in_chunks, run_has, score_chunk, write_chunk
from evalcore.scoring.estimate import estimate_pass
from evalcore.scoring.pass_report import ScoreReport
from evalcore.scoring.pass_record import history_entry, pass_record, recorded_tally, store_judge_calls
from evalcore.scoring.queries import run_questions, run_responses
from evalcore.store import RunStore, RunWriter

if TYPE_CHECKING:
    from evalcore.judges.tally import CallTally

COMPOSITE = "composite"
DEFAULT_CHUNK = 200


def metric_registry() -> dict[str, MetricSpec]:
    from evalcore.metrics.registry import METRICS

    return METRICS


def select_metrics(registry: dict[str, MetricSpec], items: list[Item], metrics: Iterable[str] | None,
                   groups: Iterable[str] | None, options: dict[str, Any],
                   stored_names: set[str] | None = None,
                   have: set[str] | None = None) -> tuple[list[MetricSpec], dict[str, str]]:
    """(selected specs, skipped {name: why}). Explicit names are checked; defaults are filtered.
    `have`: what the run can meet, when the caller computed it without holding every item
    (the Ray engine scans the answers in batches); by default computed from `items`."""
    metrics = [m for m in (metrics or []) if m]
    groups = [g for g in (groups or []) if g]
    unknown = [m for m in metrics if m not in registry]
    if unknown:
        raise EvalcoreError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(sorted(registry))}")
    known_groups = sorted({s.group for s in registry.values()})
    bad_groups = [g for g in groups if g not in known_groups]
    if bad_groups:
        raise EvalcoreError(f"unknown group(s) {', '.join(bad_groups)}; known: {', '.join(known_groups)}")
    explicit = bool(metrics or groups)
    chosen = [registry[m] for m in metrics] + [s for s in registry.values() if s.group in groups
                                               and s.name not in metrics]
    if not explicit:
        chosen = list(registry.values())
    have = run_has(items) if have is None else have
    judge = options.get("judge")
    selected, skipped = [], {}
    for spec in chosen:
        if "judge" in spec.needs and not judge:
            if spec.name in metrics:
                raise EvalcoreError(f"metric {spec.name} needs a judge: pass --judge (e.g. --judge heuristic)")
            skipped[spec.name] = "needs a judge (--judge)"
            continue
        if not explicit and "embeddings" in spec.needs:
            skipped[spec.name] = "needs embeddings (select it or its group explicitly)"
            continue
        missing = set(spec.needs) - have
        if missing and spec.name not in metrics:
            skipped[spec.name] = f"run has no {', '.join(sorted(missing))}"
            continue
        selected.append(spec)
    if not explicit:  # a composite by default only when some input will exist
        from evalcore.metrics.composites import INPUTS

        available = {s.name for s in selected if s.group != COMPOSITE} | (stored_names or set())
        kept = []
        for spec in selected:
            if spec.group == COMPOSITE and not (set(INPUTS.get(spec.name, [])) & available):
                skipped[spec.name] = "none of its input metrics is scored"
            else:
                kept.append(spec)
        selected = kept
    return selected, skipped


def _pair(questions: list[EvalQuestion], responses: list[EvalResponse]) -> tuple[list[Item], int]:
    by_id = {q.id: q for q in questions}
    items = [(by_id[r.question_id], r) for r in responses if r.question_id in by_id]
    return items, len(responses) - len(items)


class _Warmup:
    """Loads what the selected metrics will need (an embedding model) in a background thread
    while judge calls are in flight; `wait()` before computing the metrics that use it.

    score_run starts it before importing the judge SDK: answer_relevance's model then loads in
    a child process (embeddings/worker.py) on another core from the start. A load that stays in
    this process (semantic metrics, or torch already imported) overlaps that import instead of
    the calls: the same interpreter time either way."""

    def __init__(self, specs: list[MetricSpec], ctx: ScoringContext):
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        warms = [s.warm for s in specs if s.warm is not None]
        if warms:
            self.thread = threading.Thread(target=self._run, args=(warms, ctx), daemon=True)
            self.thread.start()

    def _run(self, warms: list, ctx: ScoringContext) -> None:
        try:
            for warm in dict.fromkeys(warms):
                warm(ctx)
        except BaseException as exc:  # noqa: BLE001 - the metric that needs it reports it
            self.error = exc

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None


class _Progress:
    """A rich progress bar, or nothing."""

    def __init__(self, enabled: bool, total: int):
        self.bar = None
        if enabled and total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=True, **progress_options())
            self.task = self.bar.add_task("scoring", total=total)

    def __enter__(self) -> "_Progress":
        if self.bar:
            self.bar.start()
        return self

    def advance(self, n: int, label: str) -> None:
        if self.bar:
            self.bar.update(self.task, advance=n, description=visible(f"scoring {label}"))

    def __exit__(self, *exc: Any) -> None:
        if self.bar:
            self.bar.stop()


def stored_metric_values(store: RunStore, run_id: str) -> dict[tuple[str, str, int], dict[str, float]]:
    """{(method, question_id, trial): {metric: value}} of the run's published non-composite
    values, every trial's: what scoring passes the composites (`ScoringContext.stored_metrics`),
    which never read the store (a trial's composite is built from that trial's values)."""
    from evalcore.store import query_df  # (DuckDB: loaded by what reads, not by the scoring child's metric choice)

    df = query_df(store, "SELECT method, question_id, trial, metric, value FROM trial_metrics "
                         "WHERE run_id = ? AND \"group\" <> 'composite'", [run_id])
    out: dict[tuple[str, str, int], dict[str, float]] = {}
    for row in df.itertuples(index=False):
        out.setdefault((row.method, row.question_id, int(row.trial)), {})[row.metric] = float(row.value)
    return out


def score_run(store: RunStore, run_ref: str, metrics: Iterable[str] | None = None,
              groups: Iterable[str] | None = None, options: dict[str, Any] | None = None,
              dry_run: bool = False, progress: bool = True, chunk_size: int = DEFAULT_CHUNK) -> ScoreReport:
    """Compute and store metric values for every (question, method) of a run."""
    started = time.monotonic()
    from evalcore.metrics.options import check_options
    from evalcore.store import query_df

    options = check_options(options or {})  # a misspelt option must not fall back to a default
    run_id = store.resolve(run_ref)
    # a writer first (not for a dry run, which writes nothing): opening publishes what a pass
    # that died left behind, so the stored state read below is the run's true state
    writer = None if dry_run else store.open_run(run_id)
    items, unmatched = _pair(run_questions(store, run_id), run_responses(store, run_id, every_trial=True))
    if not items:
        raise EvalcoreError(f"run {run_id} has no answers to score")
    stored = query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id], runs=[run_id])
    specs, skipped = select_metrics(metric_registry(), items, metrics, groups, options, set(stored["metric"]))
    report = ScoreReport(run_id=run_id, metrics=[s.name for s in specs], skipped=skipped,
                         n_items=len(items), unmatched_responses=unmatched, dry_run=dry_run)
    ctx = ScoringContext(run_id=run_id, store=store, options=options, items=items,
                         have=frozenset(run_has(items)))
    if dry_run:
        report.estimate = estimate_pass(specs, items, ctx)
        report.seconds = time.monotonic() - started
        return report
    phase1 = [s for s in specs if s.group != COMPOSITE]
    phase2 = [s for s in specs if s.group == COMPOSITE]
    warmup = _Warmup(phase1, ctx)
    if any(s.first_stage is not None or s.second_stage is not None for s in phase1):
        from evalcore.judges.work import get_work

        get_work(ctx).judge.preload()  # the judge SDK, while the embedding model loads
    from evalcore.judges.tally import CallTally

    tally = CallTally()
    with _Progress(progress, len(items) * len(specs)) as bar:
        for phase in (phase1, phase2):
            if not phase:
                continue
            if phase is phase2:
                ctx.stored_metrics = stored_metric_values(store, run_id)  # what phase 1 just wrote
            last = phase is (phase2 or phase1)
            try:
                _score_and_publish(phase, items, ctx, writer, report, bar, warmup, chunk_size, tally,
                                   history_entry(specs, options) if last else None)
            except OSError as exc:
                if phase is phase2:
                    note_published(exc, "the pass published its other metrics but not its composites")
                raise
    report.seconds = time.monotonic() - started
    return report


def _score_and_publish(phase: list[MetricSpec], items: list[Item], ctx: ScoringContext, writer: RunWriter,
                       report: ScoreReport, bar: _Progress, warmup: _Warmup, chunk_size: int, tally: CallTally,
                       entry: dict[str, Any] | None) -> None:
    """Score one phase, then publish it, also when interrupted (Ctrl-C, an error): composites
    in phase 2 read phase 1's values, and readers see finished chunks (a model still loading
    in the background is left to finish alone: it writes nothing). The publish records the
    stored judge calls, and the pass's history `entry` if the phase completed (never before)."""
    complete = False
    try:
        _score_phase(phase, items, ctx, writer, report, bar, warmup, chunk_size, tally)
        complete = True
    finally:
        store_judge_calls(ctx, writer, tally)
        writer.publish(record=pass_record(recorded_tally(ctx, tally), entry if complete else None))


def _score_phase(phase: list[MetricSpec], items: list[Item], ctx: ScoringContext, writer: RunWriter,
                 report: ScoreReport, bar: _Progress, warmup: _Warmup, chunk_size: int, tally: CallTally) -> None:
    """Score one phase chunk by chunk, writing each chunk's rows as part files (unpublished)."""

    def before(spec: MetricSpec) -> None:
        if spec.warm is not None:
            warmup.wait()

    for chunk in in_chunks(items, chunk_size):
        rows = score_chunk(phase, chunk, ctx, report, before=before,
                           after=lambda spec, n: bar.advance(n, spec.name))
        store_judge_calls(ctx, writer, tally)
        if write_chunk(writer, rows):
            report.parts_written += 1
        report.n_values += len(rows.values)
