"""run_evaluation: a live run from config to a scored run in the store (resume_run, which
continues one, is pipeline/live_resume.py).

Flow (seed 004's runner, made resumable):
 1. health check every target (fail before anything is written if one is down);
 2. snapshot GET /models/info and GET /index/stats into the manifest's `target_info`;
 3. create the run in place (status `running`, visible to `evalcore runs` and the app)
    and write its questions (written and published beside the asking: live_publish.OpeningPublish);
 4. ask every missing (question, method, trial) job (engine.py), answers in small atomic batches;
 5. status -> complete (or cancelled on Ctrl-C, failed on an unexpected error);
 6. score through evalcore.scoring.engine.score_run when that module is installed, with the
    config's `metrics`/`groups` (checked against the registry before step 1).
Resume reads the questions and the config snapshot back from the store and asks only the
jobs without a stored response, so every (question, method, trial) ends up exactly once. It also
repairs the two crash windows around asking: questions not all written yet (collected again
from the same dataset, checked by fingerprint) and scoring interrupted after the answers
were complete (responses without any metric are scored).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from evalcore import __version__
from evalcore.common.duckdb_interrupt import is_ctrl_c_in_a_query
from evalcore.common.frozen_heap import frozen_heap
from evalcore.common.shielded import shielded
from evalcore.runner.config import EvalConfig
from evalcore.errors import EvalcoreError, note_published, published_note
from evalcore.runner.engine import AskStats, ResponseSink, ask_jobs, plan_jobs, target_clients
from evalcore.pipeline.live_publish import OpeningPublish, recorder as _recorder
from evalcore.runner.question_selection import collect_questions
from evalcore.schemas import EvalQuestion, RunManifest
from evalcore.schemas.storable import cut_deep, make_storable, storable_note
from evalcore.store import FORMAT_VERSION, RunStore, RunWriter, new_run_id, query_df
from evalcore.targets.client import TargetClient


INFO_DEPTH = 32  # levels of a target's info kept in run.json (deeper values are cut, and said)
CANCELLED_NOTE = "cancelled by the user; continue with --resume"
FAILED_NOTE = "failed: "  # then the exception's type and message


@dataclass
class RunResult:
    """What a live run produced; `status` is the manifest's final status."""

    run_id: str
    status: str
    store_root: str
    methods: list[str]
    n_questions: int
    asked: int
    errors: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    scored: bool = False
    score_message: str = ""
    score_result: Any = None
    trials: int = 1  # `--trials T`: every question asked T times per method


async def _probe(clients: dict[str, TargetClient], config: EvalConfig) -> dict[str, Any]:
    """Health-check all targets and snapshot their info/stats (raises TargetUnavailable)."""
    info: dict[str, Any] = {}
    for name, client in clients.items():
        health = await client.health()
        spec = config.targets[name]
        info[name] = {"url": spec.public_dict()["url"], "health": health,
                      "models_info": await client.optional_json(spec.info_path),
                      "index_stats": await client.optional_json(spec.stats_path),
                      "probed_at": datetime.now(timezone.utc).isoformat()}
    first = next(iter(info.values()))
    snapshot = {"targets": info, "url": first["url"], "models_info": first["models_info"],
                "index_stats": first["index_stats"]}
    # What the server said goes into run.json: text UTF-8 cannot hold must not stop the run
    # from being created (it used to leave an empty run folder behind).
    snapshot, repaired = make_storable(snapshot)
    snapshot, cut = cut_deep(snapshot, INFO_DEPTH)
    notes = ([storable_note(repaired)] if repaired else []) + (
        [f"cut {len(cut)} value(s) nested deeper than {INFO_DEPTH} levels: {', '.join(cut[:5])}"] if cut else [])
    if notes:
        snapshot["note"] = "target info: " + "; ".join(notes)
    return snapshot


def _expected(config: EvalConfig, questions: list[EvalQuestion]) -> int:
    """Answers the run asks for: every question, of every method, `trials` times."""
    return len(questions) * len(config.methods) * config.trials


async def _ask(config: EvalConfig, writer: RunWriter, questions: list[EvalQuestion],
               done: set[tuple[str, str, int]], probe: bool,
               on_batch: Callable[[list], None] | None = None,
               opening: OpeningPublish | None = None) -> tuple[AskStats, dict[str, Any] | None, int]:
    clients = target_clients(config)
    try:
        info = await _probe(clients, config) if probe else None
        if probe:
            writer.update_manifest(target_info=info)
        jobs = plan_jobs(questions, config.methods, done, config.trials)
        on_flush = _recorder(writer, len(done), _expected(config, questions))
        sink = ResponseSink(writer, config.batch_size, on_flush=on_flush, on_batch=on_batch,
                            before_first_write=opening.wait if opening else None,
                            failed_before=(lambda: opening.failure) if opening else None)
        stats = await ask_jobs(jobs, clients, config, sink, show_progress=config.progress)
        return stats, info, len(jobs)
    finally:
        for client in clients.values():
            await client.aclose()


def _ask_on_ray(config: EvalConfig, store: RunStore, writer: RunWriter, questions: list[EvalQuestion],
                done: set[tuple[str, str, int]], probe: bool, address: str | None) -> AskStats:
    """The asking phase on Ray (evalcore/scale/ray_asking.py): the same plan, spread over actors."""
    from evalcore.scale.ray_asking import ask_on_ray

    if probe:
        writer.update_manifest(target_info=asyncio.run(probe_only(config, snapshot=True)))
    jobs = plan_jobs(questions, config.methods, done, config.trials)
    on_written = _recorder(writer, len(done), _expected(config, questions))
    return ask_on_ray(config, store, writer.run_id, jobs, on_written=on_written, address=address)


def _finish(writer: RunWriter, store: RunStore, status: str, started: float, note: str | None = None,
            fresh: AskStats | None = None, scored: tuple[Callable, float] | None = None) -> RunManifest:
    """Final status and counts, recorded with the publish that makes every answer visible
    (whatever the outcome). A fresh, finished run counts from memory; otherwise (resume,
    interruption) from the store, which is the truth about what was written. `scored`: a pass
    scored while asking, (its manifest edit, seconds it added after the last answer), recorded
    by the same publish that makes its values visible."""
    if fresh is not None:
        kinds = dict(fresh.errors)
        n_responses = fresh.written
    else:
        writer.publish()  # first, so that the counts are read from what readers see
        df = query_df(store, "SELECT error_kind, count(*) AS n FROM trial_responses WHERE run_id = ? "
                             "GROUP BY error_kind", [writer.run_id])
        kinds = {str(k): int(n) for k, n in zip(df["error_kind"], df["n"]) if k is not None and k == k}
        n_responses = int(df["n"].sum()) if len(df) else 0
    elapsed = time.perf_counter() - started

    def edit(manifest: RunManifest) -> dict[str, Any]:
        timings = {**manifest.timings, "asking_s": round(manifest.timings.get("asking_s", 0.0) + elapsed, 3)}
        if scored is not None:
            timings["scoring_s"] = round(scored[1], 3)
        return {**(scored[0](manifest) if scored is not None else {}),
                "status": status,
                "counts": {**manifest.counts, "responses": n_responses, "errors": sum(kinds.values()),
                           **{f"errors_{k}": v for k, v in kinds.items()}},
                "timings": timings,
                "notes": ([_settled(n) for n in manifest.notes] if status == "complete" else manifest.notes)
                         + ([note] if note else []),
                "finished_at": datetime.now(timezone.utc) if status != "running" else None}

    writer.publish(record=edit)
    return writer.read_manifest()


def _settled(note: str) -> str:
    """A note an interrupted attempt left (cancelled, failed), once a resume completed the run:
    said in the past, so a complete run does not still tell the user to resume it."""
    if note == CANCELLED_NOTE:
        return "an earlier attempt was cancelled by the user; the run was resumed and completed"
    if note.startswith(FAILED_NOTE):
        return f"an earlier attempt failed ({note[len(FAILED_NOTE):]}); the run was resumed and completed"
    return note


def execute(config: EvalConfig, store: RunStore, writer: RunWriter, questions: list[EvalQuestion],
            done: set[tuple[str, str, int]], probe: bool, engine: str = "local", address: str | None = None,
            opening: OpeningPublish | None = None, new_run: bool = False) -> RunResult:
    """`_execute`, with no full garbage collection walking the libraries' objects meanwhile
    (evalcore/common/frozen_heap.py: 60-75 ms each, stalling the asking)."""
    with frozen_heap():
        return _execute(config, store, writer, questions, done, probe, engine, address, opening, new_run)


def _execute(config: EvalConfig, store: RunStore, writer: RunWriter, questions: list[EvalQuestion],
             done: set[tuple[str, str, int]], probe: bool, engine: str = "local", address: str | None = None,
             opening: OpeningPublish | None = None, new_run: bool = False) -> RunResult:
    """Ask, score, finish. `opening`: a new run's first publish, still going on (the answers'
    first write waits for it; if it failed, no answer was written and the run is removed, as
    it is when its status cannot be set: a full disk before the asking)."""
    started = time.perf_counter()
    streaming, running = None, False
    try:
        writer.update_manifest(status="running", finished_at=None)
        running = True
        streaming = _streaming_scorer(config, store, writer, questions, done, engine)
        if engine == "ray":
            stats = _ask_on_ray(config, store, writer, questions, done, probe, address)
        else:
            stats, _, _ = asyncio.run(_ask(config, writer, questions, done, probe,
                                           on_batch=streaming.add if streaming else None, opening=opening))
        if opening is not None:
            opening.wait()  # (a run that wrote no answer did not wait for it yet)
        tail = time.perf_counter()
        report = streaming.finish() if streaming else None  # the answers' last chunk, scored now
    except BaseException as exc:
        if is_ctrl_c_in_a_query(exc):  # a Ctrl-C that a DuckDB query took (a publish while asking)
            exc = KeyboardInterrupt()
        if streaming:
            streaming.stop()  # first: its child must not outlive a run stopped here
        if opening is not None and opening.settled() is not None:  # no answer was written after it
            _discard_failed_start(store, writer, streaming, exc, opening.failure)
        if new_run and not running and isinstance(exc, OSError):  # its status could not be set (either engine)
            _discard_failed_start(store, writer, streaming, exc, exc)
        raise _finish_interrupted(store, writer, streaming, started, exc)
    return _complete(config, store, writer, questions, done, engine, address, streaming, stats, started, tail, report)


def _discard_failed_start(store: RunStore, writer: RunWriter, streaming: Any, exc: BaseException,
                          failure: BaseException) -> None:
    """A new run that failed writing (a full disk) before its first answer was written is
    removed, as one failing before the asking was: it holds questions but no answer. `failure`:
    the write that failed (its first publish's, or `exc`), raised, which says nothing was
    stored; or Ctrl-C when the user stopped the run meanwhile. A run that cannot be removed
    (the disk is full even for the trash folder) stays: the caller records it as resumable."""
    if streaming:
        streaming.stop()
    try:
        store.delete_run(writer.run_id)
    except OSError:  # the disk is full even for the trash folder: the run stays, said resumable
        return
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    raise failure from (None if exc is failure else exc)


def _finish_interrupted(store: RunStore, writer: RunWriter, streaming: Any, started: float,
                        exc: BaseException) -> BaseException:
    """Record a run that stopped before its end (Ctrl-C: cancelled; anything else: failed),
    keeping what it published; returns the exception to raise. The record is made whatever
    Ctrl-C comes meanwhile (common/shielded.py): a second one would leave the run `running`."""
    if isinstance(exc, KeyboardInterrupt):
        if streaming:
            streaming.stop()  # its chunks written so far are published below
        shielded(lambda: _finish(writer, store, "cancelled", started, note=CANCELLED_NOTE))
        return exc
    if streaming:
        streaming.stop()
    if isinstance(exc, OSError):  # a full disk: the answers published so far are kept
        _note_resume(exc, writer)
    try:
        shielded(lambda: _finish(writer, store, "failed", started, note=f"{FAILED_NOTE}{type(exc).__name__}: {exc}"))
    except OSError:
        if not isinstance(exc, OSError):
            raise
        # the disk is still full: the first failure, which says what was kept, is reported
    return exc


def _complete(config: EvalConfig, store: RunStore, writer: RunWriter, questions: list[EvalQuestion],
              done: set, engine: str, address: str | None, streaming: Any, stats: AskStats, started: float,
              tail: float, report: Any) -> RunResult:
    """Publish a run whose every job was asked, and score it if it was not scored while asking."""

    def record() -> RunManifest:
        _note_worker_failure(writer, streaming)
        scored = (streaming.record(), time.perf_counter() - tail) if report is not None else None
        return _finish(writer, store, "complete", started, fresh=stats if not done else None, scored=scored)

    try:  # recorded complete even if Ctrl-C comes meanwhile (then raised: no scoring starts after it)
        manifest = shielded(record, interrupt_after=True)
    except OSError as exc:  # every answer is written, but the last of them could not be published
        _note_resume(exc, writer)
        raise
    result = RunResult(run_id=writer.run_id, status=manifest.status, store_root=str(store.root),
                       methods=[m.name for m in config.methods], n_questions=len(questions),
                       asked=stats.asked, errors=dict(Counter(stats.errors)), seconds=stats.seconds,
                       trials=config.trials)
    if report is not None:
        result.score_result, result.scored, result.score_message = report, True, "scored while asking"
    elif config.score:
        score_afterwards(store, writer, config, result, engine, address)
    return result


def _streaming_scorer(config: EvalConfig, store: RunStore, writer: RunWriter, questions: list[EvalQuestion],
                      done: set, engine: str):
    """A scorer that scores answers while the rest are asked (scoring/streaming.py): for a
    fresh local run with scoring on. A resumed run (answers from before) and the Ray engine
    score after the last answer, as does a run whose metrics cannot stream (judge, embeddings:
    the scorer then gives up and `score_afterwards` runs). A large run scores in a child process."""
    if not config.score or done or engine != "local" or importlib.util.find_spec("evalcore.scoring.streaming") is None:
        return None
    from evalcore.scoring import streaming

    jobs = len(questions) * len(config.methods) * config.trials
    return streaming.StreamingScorer(store, writer, writer.run_id, questions, config.metrics, config.groups,
                                     {**config.score_options, "judge": config.judge_option},
                                     in_worker=jobs >= streaming.WORKER_MIN_JOBS, expected=jobs)


def _note_worker_failure(writer: RunWriter, streaming: Any) -> None:
    """A scoring worker that failed or died is said in the run's notes (the run is then scored
    after the last answer, so nothing is missing, but the user sees why it took longer)."""
    if streaming is None or streaming.failure is None:
        return
    from evalcore.scoring.stream_worker import WorkerGone

    failure = streaming.failure
    if not isinstance(failure, WorkerGone):
        return  # the routine one (a selected metric does not stream), or the thread's
    note = f"scoring while asking stopped ({failure}); the run was scored after the last answer"
    writer.edit_manifest(lambda m: {"notes": m.notes + [note]})


def _note_resume(exc: OSError, writer: RunWriter) -> None:
    """A run that failed writing (a full disk) keeps what it wrote: say what, and how to go on."""
    run_id, kept = writer.run_id, writer.rows_on_disk("responses")
    what = ("the answers it wrote" if kept is None else "no answer yet" if kept == 0
            else f"the {kept} answer{'s' if kept != 1 else ''} it wrote")
    note_published(exc, f"run {run_id} keeps {what}; continue it with `evalcore run --resume {run_id}`")


def score_afterwards(store: RunStore, writer: RunWriter, config: EvalConfig, result: RunResult,
           engine: str = "local", address: str | None = None) -> None:
    """Score with evalcore.scoring.engine when it exists (on Ray with engine "ray"); the answers are
    kept either way."""
    if importlib.util.find_spec("evalcore.scoring.engine") is None:
        result.score_message = ("scoring skipped: evalcore.scoring.engine is not available in this install; "
                                f"score later with `evalcore score {result.run_id}`")
        return
    from evalcore.scoring import engine as scoring

    t0 = time.perf_counter()
    options = {**config.score_options, "judge": config.judge_option}
    try:
        if engine == "ray":
            from evalcore.scale.ray_scoring import score_run_ray

            result.score_result = score_run_ray(store, result.run_id, metrics=config.metrics, groups=config.groups,
                                                options=options, address=address, progress=config.progress)
        else:
            result.score_result = scoring.score_run(store, result.run_id, metrics=config.metrics,
                                                    groups=config.groups, options=options,
                                                    progress=config.progress)
    except EvalcoreError as exc:
        result.score_message = f"scoring failed: {exc}; the answers are stored, retry with `evalcore score`"
        message = result.score_message
        writer.edit_manifest(lambda m: {"notes": m.notes + [message]})
        return
    except OSError as exc:  # a full disk while scoring: the answers are published and complete
        scored = published_note(exc) or "no metric values were published"
        note_published(exc, f"run {result.run_id} has all its answers ({scored}); "
                            f"score it with `evalcore score {result.run_id}`")
        raise
    scoring_s = round(time.perf_counter() - t0, 3)
    writer.edit_manifest(lambda m: {"timings": {**m.timings, "scoring_s": scoring_s}})
    result.scored = True
    result.score_message = "scored"


ENGINES = ("local", "ray")


def check_engine(engine: str, address: str | None) -> None:
    """Before anything is read or written: a known engine, and Ray installed for "ray"."""
    if engine not in ENGINES:
        raise EvalcoreError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine == "local" and address:
        raise EvalcoreError("--address is for --engine ray")
    if engine == "ray":
        from evalcore.scale.ray_session import require_ray

        require_ray()


@contextmanager
def engine_session(engine: str, address: str | None) -> Iterator[None]:
    """Hold one Ray session for the whole command with engine "ray" (asking, then scoring), so a
    local instance starts once and is shut down at the end (an existing session is reused)."""
    if engine != "ray":
        yield
        return
    from evalcore.scale.ray_session import ray_session

    with ray_session(address):
        yield


def run_evaluation(config: EvalConfig, store: RunStore | None = None, engine: str = "local",
                   address: str | None = None) -> RunResult:
    """Ask every question of `config` to every method, store the answers, then score them.

    engine "ray" spreads the asking (and scoring) over a Ray cluster at `address` (None: a local
    instance); the answers and the guarantees are the local engine's (evalcore/scale/ray_asking.py)."""
    # frozen from the start, not only for the asking (execute): a full collection left due by an
    # earlier run of this process would otherwise come while the questions are read, walking
    # every object (~0.08 s before the first question; bench_runner's second run)
    with frozen_heap():
        return _run_evaluation(config, store, engine, address)


def _run_evaluation(config: EvalConfig, store: RunStore | None, engine: str, address: str | None) -> RunResult:
    store = store or RunStore(config.store)
    config.check_metric_choice()  # a typo in --metrics must not cost a whole collection
    check_engine(engine, address)  # before the dataset is read or the target probed
    questions, dataset_info = collect_questions(config)
    name = config.name or dataset_info.get("name") or "live"
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=new_run_id(name), name=name, kind="live",
                           status="created", evalcore_version=__version__,
                           methods=[m.name for m in config.methods], dataset=dataset_info,
                           source={"kind": "live", "targets": sorted(config.targets)},
                           config=config.snapshot(),
                           judges=[config.judge_option] if config.judge_option else [],
                           counts={"questions": len(questions), "expected": _expected(config, questions)})
    # Probe before creating the run, so an unreachable server leaves no empty run behind.
    manifest.target_info = asyncio.run(probe_only(config, snapshot=True))
    if manifest.target_info.get("note"):
        manifest.notes.append(manifest.target_info["note"])
    with engine_session(engine, address):  # a cluster that cannot be reached: no run is created
        writer = store.create_run(manifest)
        if engine == "ray":  # (its actors write answers at once: written and published first)
            try:
                writer.write_questions(questions)
                writer.publish()
            except (Exception, KeyboardInterrupt):  # a full disk, Ctrl-C: no run is left claiming questions it lacks
                store.delete_run(writer.run_id)
                raise
        opening = OpeningPublish(writer, questions) if engine != "ray" else None  # beside the asking: see there
        return execute(config, store, writer, questions, set(), probe=False, engine=engine, address=address,
                       opening=opening, new_run=True)


async def probe_only(config: EvalConfig, snapshot: bool = False) -> dict[str, Any] | None:
    clients = target_clients(config, lanes=1)
    try:
        if snapshot:
            return await _probe(clients, config)
        for client in clients.values():
            await client.health()
        return None
    finally:
        for client in clients.values():
            await client.aclose()
