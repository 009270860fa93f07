"""resume_run: continue a live run, asking only the jobs that have no stored answer.

Why apart from live.py: a resume reads the run back (its questions, its config, what it has
answered) and checks that nothing which defines the run changed; the asking, scoring and
finishing after that are the fresh run's own (pipeline/live.py `execute`). Resume repairs the
two crash windows around asking: questions not all written yet (collected again from the same
dataset, checked by fingerprint) and scoring interrupted after the answers were complete
(responses without any metric are scored).
"""

from __future__ import annotations

import asyncio
from typing import Any

from evalcore.common.secret_urls import MASK
from evalcore.errors import EvalcoreError
from evalcore.pipeline.live import RunResult, check_engine, engine_session, execute, probe_only, score_afterwards
from evalcore.runner.config import EvalConfig
from evalcore.runner.engine import plan_jobs
from evalcore.runner.question_selection import collect_questions
from evalcore.schemas import EvalQuestion, RunManifest
from evalcore.schemas.ids import canonical_id
from evalcore.scoring.queries import run_questions
from evalcore.store import RunStore, RunWriter, query_df


def _existing_done(store: RunStore, run_id: str) -> set[tuple[str, str, int]]:
    """The (method, question id, trial) answers the run has: what a resume does not ask again."""
    df = query_df(store, "SELECT DISTINCT method, question_id, trial FROM trial_responses WHERE run_id = ?", [run_id])
    return set(zip(df["method"], df["question_id"], (int(t) for t in df["trial"])))



def _unscored_responses(store: RunStore, run_id: str) -> int:
    """Responses (of any trial) with no metric value at all: scoring was interrupted (or never ran)."""
    df = query_df(store, """
        SELECT count(*) AS n FROM trial_responses r
        WHERE r.run_id = ? AND NOT EXISTS (
            SELECT 1 FROM trial_metrics m
            WHERE m.run_id = r.run_id AND m.method = r.method AND m.question_id = r.question_id
              AND m.trial = r.trial)""", [run_id])
    return int(df["n"][0])


def _questions_for_resume(store: RunStore, writer: RunWriter, manifest: RunManifest,
                          config: EvalConfig) -> list[EvalQuestion]:
    """The run's questions; when a crash came before all were written (the run is visible from
    its creation), collect them again from the same dataset and write the missing ones. The
    dataset must be the one the run started with (same fingerprint)."""
    questions = run_questions(store, writer.run_id)
    expected = manifest.counts.get("questions") or 0
    if len(questions) >= expected:
        return questions
    collected, info = collect_questions(config)
    want, got = manifest.dataset.get("fingerprint"), info.get("fingerprint")
    if want and got and want != got:
        raise EvalcoreError(f"run {writer.run_id}: its dataset changed since the run started "
                            f"({want} -> {got}); cannot resume it with the same questions")
    have = {q.id for q in questions}
    missing = [q for q in collected if q.id not in have]
    if len(have) + len(missing) != expected:
        raise EvalcoreError(f"run {writer.run_id}: expected {expected} questions, the dataset gives "
                            f"{len(have) + len(missing)}; cannot resume")
    writer.write_questions(missing)
    writer.publish()
    return run_questions(store, writer.run_id)


def resume_run(run_ref: str, store: RunStore | None = None, config: EvalConfig | None = None,
               engine: str = "local", address: str | None = None, **overrides: Any) -> RunResult:
    """Continue a live run: ask only the (question, method, trial) jobs that have no stored answer.

    The config comes from the run's manifest unless one is given (e.g. to supply headers);
    `overrides` may change operational settings (concurrency, timeout, progress, score...).
    Any engine can resume a run any engine started.
    """
    check_engine(engine, address)
    store = store or RunStore()
    run_id = store.resolve(run_ref)
    manifest = store.manifest(run_id)
    if manifest.kind != "live":
        raise EvalcoreError(f"run {run_id} is a {manifest.kind} run; only live runs can be resumed")
    base = config or EvalConfig.from_snapshot(manifest.config)
    allowed = {"concurrency", "timeout", "retries", "backoff", "batch_size", "progress", "score",
               "judge", "no_judge", "metrics", "groups", "flush_seconds", "follow_redirects", "max_response_mb"}
    bad = set(k for k, v in overrides.items() if v is not None) - allowed
    if bad:
        raise EvalcoreError(f"cannot change {sorted(bad)} when resuming; they define the run")
    config = base.with_settings(**{k: v for k, v in overrides.items() if v is not None})  # validated
    config.check_metric_choice()
    started = EvalConfig.from_snapshot(manifest.config).trials
    if config.trials != started:  # a --config given to resume may not change what the run asks
        raise EvalcoreError(f"run {run_id} was started with {started} trial(s) per question; the config asks "
                            f"{config.trials}: trials define the run")
    if [m.name for m in config.methods] != manifest.methods:
        raise EvalcoreError(f"the config's methods {[m.name for m in config.methods]} differ from the "
                            f"run's {manifest.methods}")
    for spec in config.targets.values():
        if MASK in spec.url:
            raise EvalcoreError("this run's target URL carried credentials or a secret query value, which "
                                "were not stored; pass the same --config to resume (prefer ${ENV_NAME} headers)")
        if any(v.startswith("<redacted") for v in spec.headers.values()):
            raise EvalcoreError("this run's target used a literal secret header that was not stored; "
                                "pass the same --config to resume (prefer ${ENV_NAME} headers)")
    writer = store.open_run(run_id)
    questions = _questions_for_resume(store, writer, manifest, config)
    if any(q.id != canonical_id(q.id) for q in questions):  # new answers would get other ids
        raise EvalcoreError(f"run {run_id} was written by an older evalcore with question ids not in the "
                            "canonical form (NFC, no outer spaces: docs/data-formats.md); it cannot be "
                            "resumed, start a new run")
    done = _existing_done(store, run_id)
    if manifest.status == "complete" and not plan_jobs(questions, config.methods, done, config.trials):
        result = RunResult(run_id=run_id, status="complete", store_root=str(store.root),
                           methods=manifest.methods, n_questions=len(questions), asked=0, trials=config.trials,
                           score_message="nothing to resume: every question has an answer for every method"
                                         + (" and trial" if config.trials > 1 else ""))
        if config.score and _unscored_responses(store, run_id):
            with engine_session(engine, address):
                score_afterwards(store, writer, config, result, engine, address)  # scoring was interrupted: finish it
        return result
    asyncio.run(probe_only(config))
    with engine_session(engine, address):
        return execute(config, store, writer, questions, done, probe=not manifest.target_info,
                        engine=engine, address=address)
