"""Commands that collect answers live: run (against any RAG server), demo, demo-server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.cli.dataset_commands import ON_DUPLICATE_HELP, OnDuplicate, print_dropped_duplicates
from evalcore.cli.vocabulary import Engine, deprecated
from evalcore.errors import EvalcoreError


def _print_result(result, store_root: str) -> None:
    errors = ", ".join(f"{k}: {v}" for k, v in sorted(result.errors.items())) or "none"
    trials = f" x {result.trials} trials" if result.trials > 1 else ""
    typer.echo(f"run {result.run_id}: {result.status}; asked {result.asked} "
               f"({len(result.methods)} method(s) x {result.n_questions} questions{trials}, errors {errors}) "
               f"in {result.seconds:.1f}s", err=True)
    if result.score_message:
        typer.echo(result.score_message, err=True)
    typer.echo(f"see it with `evalcore --store {store_root} show {result.run_id}` or `evalcore app`", err=True)


def _names(flag: str | None) -> list[str] | None:
    """A comma-separated flag as a list (None when not given, so a config file's value stands)."""
    if flag is None:
        return None
    return [n.strip() for n in flag.split(",") if n.strip()] or None


def run_cmd(
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="An eval config (YAML): targets, methods, "
                                          "dataset, thresholds... Flags below override it."),
    target: Optional[str] = typer.Option(None, "--target", "--rag-url", help="RAG server URL (evalcore's default "
                                         "contract: /health, /models/info, POST /query)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", "-d", help="Question file (any supported format)."),
    datasets: Optional[str] = typer.Option(None, "--datasets", help="Comma-separated public set names or files."),
    methods: Optional[str] = typer.Option(None, "--methods", help="Comma-separated methods to ask "
                                          "(sent as the request's `method`)."),
    methods_short: Optional[str] = typer.Option(None, "-m", hidden=True, help="Old spelling of --methods."),
    samples: Optional[int] = typer.Option(None, "--samples", "-n", help="Seeded random sample per dataset."),
    # text, read by the config's own rule (evalcore/schemas/trials.py), so `--trials 1.5` or
    # `--trials x` is one `error:` line naming the flag like `--trials 0`, not a usage block
    trials: Optional[str] = typer.Option(None, "--trials", metavar="T", help="Ask every question T times per "
                                         "method (1-100, default 1); each answer is stored and scored as its "
                                         "own trial, and compare averages a question's trials."),
    on_duplicate: Optional[OnDuplicate] = typer.Option(None, "--on-duplicate", help=ON_DUPLICATE_HELP + " "
                                                       "Overrides the config's on_duplicate (default error)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Requests in flight (default 8)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds per request, total (default 60)."),
    retries: Optional[int] = typer.Option(None, "--retries", help="Retries on 5xx/timeouts/connection errors/"
                                          "malformed JSON (default 3)."),
    top_k: Optional[int] = typer.Option(None, "--top-k", help="top_k sent to the server (default 10)."),
    follow_redirects: bool = typer.Option(False, "--follow-redirects", help="Follow a target's redirect to "
                                          "another origin (default: an error naming it). Configured headers "
                                          "and URL secrets are never sent there."),
    max_response_mb: Optional[float] = typer.Option(None, "--max-response-mb", help="Largest reply read from "
                                                    "a target, in MB (default 32); a larger one is an error."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Score without any judge."),
    judge: Optional[str] = typer.Option(None, "--judge", help="Judge for judged metrics (e.g. heuristic)."),
    no_score: bool = typer.Option(False, "--no-score", help="Only collect answers; score later."),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="Comma-separated metrics to score once the "
                                          "answers are in (default: every metric the run can have)."),
    groups: Optional[str] = typer.Option(None, "--groups", help="Comma-separated metric groups to score "
                                         "(with --metrics: both). Unknown names fail before any question."),
    group: Optional[str] = typer.Option(None, "--group", hidden=True, help="Old spelling of --groups."),
    name: Optional[str] = typer.Option(None, "--name", help="Run name."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue run RUN: ask only what is missing."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    engine: Engine = typer.Option(Engine.local, "--engine", help="Where to ask and score: this process "
                                  "(local), or spread over a Ray cluster (ray; needs evalcore[scale]). "
                                  "--concurrency stays the limit for the whole cluster."),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: the Ray cluster "
                                          "(e.g. ray://head:10001 or auto); default a local instance."),
    repeats: Optional[int] = typer.Option(None, "--repeats", metavar="K",
                                          help="When the answers are scored: ask each judged metric's verdict K "
                                               "times per answer, as `score --repeats K` (the run's score_options "
                                               "judge_repeats). Default 1."),
) -> None:
    """Ask a RAG server every question for every method, store the answers as they arrive, score them.

    Prints the run id on stdout. Ctrl-C stops cleanly (status `cancelled`); a crash or kill loses
    at most the batch in flight. Either way `evalcore run --resume RUN` asks only what is missing
    (with either engine).
    """
    if address and engine is not Engine.ray:
        raise EvalcoreError("--address is for --engine ray")
    store = state.store(changing=True)
    methods = deprecated(methods, methods_short, "-m", "--methods",
                         "-m will mean --metrics, as in score, compare, rejudge and trec")
    groups = deprecated(groups, group, "--group", "--groups")
    progress = False if no_progress else None
    how = {"engine": engine.value, "address": address}
    duplicates = on_duplicate.mode if on_duplicate else None
    # what a new run and a resumed one both take from the flags
    common = {"concurrency": concurrency, "timeout": timeout, "retries": retries, "progress": progress,
              "score": False if no_score else None, "judge": judge, "no_judge": no_judge or None,
              "metrics": _names(metrics), "groups": _names(groups),
              "follow_redirects": follow_redirects or None, "max_response_mb": max_response_mb}
    if resume:
        _refuse_on_resume(repeats, trials)
        result = _resume(resume, store, config, duplicates, common, how)
    else:
        overrides = {"target": target, "dataset": dataset, "datasets": datasets, "methods": methods,
                     "samples": samples, "top_k": top_k, "name": name, "on_duplicate": duplicates,
                     "trials": trials, **common}
        result = _new_run(store, config, overrides, how, repeats)
    _print_result(result, str(store.root))
    typer.echo(result.run_id)
    _end_with_failures(store, result.run_id)


def _resume(run: str, store: Any, config: Path | None, duplicates: str | None, common: dict[str, Any],
            how: dict[str, Any]) -> Any:
    """`--resume RUN`: ask only what is missing. The run keeps the on_duplicate it started with
    (stored in its manifest); with a --config the flag may restate it, alone it is refused like
    any setting that defines the run."""
    from evalcore.pipeline import resume_run
    from evalcore.runner.config import load_config

    given = load_config(config, on_duplicate=duplicates) if config else None
    with print_dropped_duplicates():
        return resume_run(run, store, config=given, on_duplicate=None if config else duplicates, **common, **how)


def _refuse_on_resume(repeats: int | None, trials: str | None) -> None:
    """What a resumed run keeps from its start: its judge repeats and its number of trials."""
    if repeats is not None:
        raise EvalcoreError("--repeats is kept from the run's start when resuming; to judge its answers K "
                            "times, `evalcore score RUN --judge J --repeats K`")
    if trials is not None:
        raise EvalcoreError("--trials defines the run; `run --resume RUN` asks the missing trials of the "
                            "T it started with")


def _new_run(store: Any, config: Path | None, overrides: dict[str, Any], how: dict[str, Any],
             repeats: int | None = None) -> Any:
    """A new run from --config (the flags override it) or from the flags alone. `--repeats K`
    joins the config's other scoring options (it is the option `score --repeats K` sets)."""
    from evalcore.cli.score_commands import check_repeat_option
    from evalcore.pipeline import run_evaluation
    from evalcore.runner.config import EvalConfig, load_config

    chosen = check_repeat_option({"judge_repeats": repeats}) if repeats is not None else {}
    if config:
        cfg = load_config(config, **overrides)
    else:
        if not overrides["target"] or not (overrides["dataset"] or overrides["datasets"]):
            raise EvalcoreError("give --config FILE, or --target URL with --dataset FILE (or --datasets)")
        cfg = EvalConfig.model_validate({k: v for k, v in overrides.items() if v is not None})
    if chosen:
        cfg = cfg.with_settings(score_options={**cfg.score_options, **chosen})
    with print_dropped_duplicates():
        return run_evaluation(cfg, store, **how)


def _end_with_failures(store, run_id: str) -> None:
    """The last line: how many answers failed and the first error; exit 1 when every answer
    failed (such a run measured nothing: a wrong method name, a server that refuses all)."""
    from evalcore.analysis.runs.progress import answer_failures, failure_line

    failures = answer_failures(store, run_id)
    echo_line(failure_line(failures), err=True)
    if failures["all_failed"]:
        typer.echo(f"error: every answer of run {run_id} failed; check the target and the methods "
                   "(`evalcore show` lists the errors)", err=True)
        raise typer.Exit(code=1)


def demo_cmd(
    port: int = typer.Option(0, "--port", min=0, max=65535,
                             help="Port for the demo server on 127.0.0.1 (0 = any free port)."),
    no_semantic: bool = typer.Option(False, "--no-semantic", help="Skip embedding metrics (faster)."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bars."),
) -> None:
    """The whole loop offline, no API key: demo server -> 3 methods x 40 questions -> scores -> leaderboard."""
    from evalcore.demo.run_demo import format_leaderboard, run_demo

    store = state.store(changing=True)
    demo = run_demo(store, port=port, progress=not no_progress, semantic=not no_semantic,
                    echo=lambda s: typer.echo(s, err=True))
    typer.echo(f"\nrun {demo.run.run_id} ({demo.run.status}) in store {store.root}\n")
    typer.echo(format_leaderboard(demo.leaderboard))
    for note in demo.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"\nper-question results: evalcore --store {store.root} show {demo.run.run_id}")
    typer.echo(f"dashboard:            evalcore --store {store.root} app")


def demo_server_cmd(
    port: int = typer.Option(8001, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0 = any free port)."),
    latency_ms: float = typer.Option(0.0, "--latency-ms", min=0, max=600_000,
                                     help="Fixed extra latency per query, 0-600000 ms (for load tests)."),
) -> None:
    """Serve the demo RAG server (127.0.0.1 only) in the foreground; Ctrl-C stops it."""
    from evalcore.demo.server import serve

    serve(port, latency_ms=latency_ms)


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
    app.command("demo")(demo_cmd)
    app.command("demo-server")(demo_server_cmd)
