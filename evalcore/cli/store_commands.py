"""Commands over the run store: import, runs, show, export, delete, and `store clean` (`store
check` and `store repair` live in store_health_commands.py)."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Optional

import typer

from evalcore.cli.context import echo_line, state
from evalcore.cli import store_health_commands
from evalcore.cli.dataset_commands import ON_DUPLICATE_HELP, OnDuplicate, print_dropped_duplicates
from evalcore.cli.phoenix_options import (
    PHOENIX_MAX_MB,
    PHOENIX_MAX_SPANS,
    PHOENIX_REQUEST_TIMEOUT,
    PHOENIX_TIMEOUT,
    phoenix_limits,
)
from evalcore.errors import EvalcoreError
from evalcore.outputs.export import FORMATS
from evalcore.traces.phoenix_http import Limits


def example_files() -> tuple[Path, Path]:
    """The recorded-answers example and its questions, shipped inside the package."""
    base = resources.files("evalcore") / "examples"
    return Path(str(base / "recorded_answers.jsonl")), Path(str(base / "questions.yaml"))


def import_cmd(
    file: Optional[str] = typer.Argument(
        None, help="Recorded answers: .jsonl, .json, .csv or .parquet, one record per (question, method); "
                   "or OpenInference spans: a span export file or phoenix://HOST:PORT/PROJECT (docs/phoenix.md)."),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="Run name (default: the file name)."),
    dataset: Optional[Path] = typer.Option(
        None, "--dataset", "-d",
        help="Question file whose questions, ground truths and gold passages are authoritative; "
             "records then only need question_id, method and answer."),
    method: Optional[str] = typer.Option(
        None, "--method",
        help="Method name for records without a 'method' field (default: 'recorded'; for traces the project name)."),
    method_from: Optional[str] = typer.Option(
        None, "--method-from", help="Traces: the root span attribute naming each trace's method, e.g. metadata.method."),
    id_from: Optional[str] = typer.Option(
        None, "--id-from",
        help="Traces: the root span attribute holding the question id to join --dataset on "
             "(default: join on the question text)."),
    example: bool = typer.Option(False, "--example", help="Import the small example shipped with evalcore."),
    on_duplicate: OnDuplicate = typer.Option(OnDuplicate.error, "--on-duplicate",
                                             help=ON_DUPLICATE_HELP + " Applies to --dataset."),
    allow_extra: bool = typer.Option(
        False, "--allow-extra",
        help="Keep field names evalcore does not know in each question's metadata "
             "(default: refuse them, so a misspelt column is not silently dropped)."),
    retrieval_only: bool = typer.Option(
        False, "--retrieval-only",
        help="Accept records that give retrieved contexts but no answer (evaluating a retriever)."),
    phoenix_timeout: Optional[float] = PHOENIX_TIMEOUT,
    phoenix_request_timeout: Optional[float] = PHOENIX_REQUEST_TIMEOUT,
    phoenix_max_mb: Optional[float] = PHOENIX_MAX_MB,
    phoenix_max_spans: Optional[int] = PHOENIX_MAX_SPANS,
) -> None:
    """Create a run from answers your RAG system already produced.

    Fields per record: question_id, method, question, answer, ground_truth, contexts (list of
    strings) or retrieved (list of {chunk_id, text, rank, score, rel_path, heading_path}),
    gold_chunk_ids, citations, abstained, latency_ms, token_usage, question_type, category,
    answerable. ragas names (user_input, response, retrieved_contexts, reference) and deepeval
    names (input, actual_output, expected_output, retrieval_context) work unchanged.
    A record needs a question (id or text) and an answer or an error (with --retrieval-only,
    retrieved contexts suffice); unknown fields are refused unless --allow-extra. The mapping used
    (field <- column) is printed. Prints the new run id. A bad record stops the import and leaves
    the store untouched.

    OpenInference traces (one trace = one answer) come from a span export file (Phoenix's span
    dataframe as Parquet/JSONL, or OTLP JSON lines) or a Phoenix server: docs/phoenix.md.
    """
    from evalcore.scoring.importer import import_recorded
    from evalcore.traces.phoenix import is_phoenix_url

    limits = phoenix_limits(phoenix_timeout, phoenix_request_timeout, bool(file) and is_phoenix_url(file),
                            max_mb=phoenix_max_mb, max_spans=phoenix_max_spans)
    if file is not None and (is_phoenix_url(file) or _is_span_file(file)):
        _import_traces(file, name, dataset, method, method_from, id_from, limits,
                       answers_flags=allow_extra or retrieval_only or example)
        return
    if method_from or id_from:
        raise EvalcoreError("--method-from and --id-from apply to OpenInference traces; "
                            f"{file} is not a span export (docs/phoenix.md)")
    method = method or "recorded"
    kind = "import"
    if example:
        if file is not None:
            raise EvalcoreError("give either FILE or --example, not both")
        example_file, example_dataset = example_files()
        file = str(example_file)
        dataset = dataset or example_dataset
        name = name or "example"
        kind = "example"
    if file is None:
        raise EvalcoreError("FILE is required (or use --example)")
    with print_dropped_duplicates():
        result = import_recorded(state.store(), file, name=name, dataset=dataset, method=method, kind=kind,
                                 on_duplicate=on_duplicate.mode, allow_extra=allow_extra, retrieval_only=retrieval_only)
    for line in result.notes():
        echo_line(line, err=True)
    echo_line(f"imported {result.n_records} answers to {result.n_questions} questions "
               f"({', '.join(result.methods)}) as run:", err=True)
    typer.echo(result.run_id)


def _is_span_file(file: str) -> bool:
    from evalcore.traces.spans import is_span_file

    return Path(file).is_file() and is_span_file(file)


def _import_traces(file: str, name: Optional[str], dataset: Optional[Path], method: Optional[str],
                   method_from: Optional[str], id_from: Optional[str],
                   limits: Optional[Limits] = None, answers_flags: bool = False) -> None:
    """`evalcore import` of OpenInference traces, from a span export file or a Phoenix server;
    `answers_flags` says a flag of recorded-answers files was given, which traces refuse."""
    if answers_flags:
        raise EvalcoreError("--allow-extra, --retrieval-only and --example apply to recorded-answers files, "
                            f"not to OpenInference traces ({file})")
    from evalcore.common.fingerprint import file_fingerprint
    from evalcore.schemas.storable import storable_path
    from evalcore.traces.phoenix import is_phoenix_url, parse_url, server_spans
    from evalcore.traces.spans import read_span_file
    from evalcore.traces.trace_import import import_traces

    if is_phoenix_url(file):
        target = parse_url(file)
        spans, project = server_spans(target, limits), target.project
        source, info = f"phoenix {target.project}", {"server": target.base_url, "project": target.project}
        default_name = target.project
    else:
        path = Path(file)
        spans = list(read_span_file(path))
        project = next((s.project for s in spans if s.project), None)
        source, info = str(path), {"file": storable_path(path.name), "fingerprint": file_fingerprint(path)}
        default_name = storable_path(path.stem)
    result = import_traces(state.store(), spans, source, name=name or default_name,
                           method=method or project or default_name, project=project,
                           method_from=method_from, id_from=id_from, dataset=dataset, source_info=info)
    for line in result.notes:
        echo_line(line, err=True)
    echo_line(f"imported {result.n_records} answers to {result.n_questions} questions "
               f"({', '.join(result.methods)}) as run:", err=True)
    typer.echo(result.run_id)


def runs_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List the runs in the store, newest first."""
    from evalcore.analysis.runs.run_listing import rows_json, run_rows  # no pandas: the listing starts fast

    problems: list[str] = []
    state.store().manifests(problems)
    for problem in problems:
        echo_line(f"warning: skipped a run: {problem}", err=True)
    rows = run_rows(state.store())
    if as_json:
        store_health_commands.print_damaged(state.store(), err=True)  # stdout stays JSON
        typer.echo(rows_json(rows))
        return
    if not rows:
        if not store_health_commands.print_damaged(state.store()):
            typer.echo(f"no runs in {state.store().root} (try: evalcore import --example)")
        return
    from evalcore.cli.context import print_table

    print_table(None, ("run_id", "name", "status", "methods", "n_questions", "n_responses", "n_errors", "created_at"),
                ((row.run_id, row.name, row.status, row.methods, row.n_questions, row.n_responses, row.n_errors,
                  str(row.created_at)[:19]) for row in rows))
    store_health_commands.print_damaged(state.store())


def show_cmd(run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
             as_json: bool = typer.Option(False, "--json", help="Print JSON."),
             corrected: bool = typer.Option(False, "--corrected",
                                            help="Also the human-corrected means from randomly sampled labels.")) -> None:
    """Show a run's manifest and its per-method metric means (n scored / n)."""
    from evalcore.analysis.read.id_collisions import colliding_ids, warning_lines
    from evalcore.analysis.runs.indexing import coverage_by_doc_type, run_indexing_coverage
    from evalcore.analysis.runs.means import metric_table
    from evalcore.store.tables import json_text

    store = state.store()
    run_id = store.resolve(run)
    manifest = store.manifest(run_id)
    summary = metric_table(store, run_id)
    indexing = run_indexing_coverage(manifest.target_info)
    by_type = coverage_by_doc_type(store, run_id) if "hit_rate@5" in set(summary.get("metric", [])) else []
    collisions = colliding_ids(store, run_id)  # ids stored before the id rule that are one id under it
    for line in warning_lines(collisions):
        echo_line(f"WARNING {line}", err=True)
    if as_json:
        payload = {"manifest": json.loads(manifest.model_dump_json()),
                   "metrics": json.loads(summary.to_json(orient="records", force_ascii=False, double_precision=15)),
                   "indexing_coverage": indexing, "hit_rate@5_by_doc_type": by_type,
                   "id_collisions": [{"method": c.method, "ids": list(c.ids)} for c in collisions]}
        if corrected:
            from evalcore.analysis.labels.corrected import corrected_means

            payload["corrected"] = json.loads(corrected_means(store, run_id).to_json(orient="records", double_precision=15))
        noise = _judge_noise(store, run_id)
        if not noise.empty:  # runs scored with --repeats K only: a K = 1 run's JSON is unchanged
            payload["judge_noise"] = json.loads(noise.to_json(orient="records", double_precision=15))
        spread = _trials(store, run_id)
        if not spread.empty:  # runs asked with --trials T only, likewise
            payload["trials"] = json.loads(spread.to_json(orient="records", double_precision=15, force_ascii=False))
        typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    echo_line(f"run {manifest.run_id}  ({manifest.name}, {manifest.kind}, {manifest.status})")
    typer.echo(f"created {manifest.created_at:%Y-%m-%d %H:%M:%S} UTC, evalcore {manifest.evalcore_version}")
    echo_line(f"dataset: {json_text(manifest.dataset)}")
    echo_line(f"methods: {', '.join(manifest.methods)}   counts: {json_text(manifest.counts)}")
    if manifest.judges:
        echo_line(f"judges: {', '.join(manifest.judges)}")
    for target, figures in indexing.items():
        echo_line(f"indexing coverage ({target}): {json_text(figures)}")
    if summary.empty:
        typer.echo("no metric values yet (score the run to add them)")
        return
    for row in summary.itertuples(index=False):
        mean = "–" if row.mean is None or row.mean != row.mean else f"{row.mean:.4f}"
        reasons = row.not_scored_reasons if isinstance(row.not_scored_reasons, str) else ""
        extra = f"  not scored: {reasons}" if reasons else ""
        echo_line(f"  {row.method:<20} {row.metric:<28} {mean:>8}  ({row.n_scored}/{row.n}){extra}")
    from evalcore.cli.judge_noise_output import print_run_noise

    print_run_noise(_judge_noise(store, run_id))
    from evalcore.cli.trial_output import print_run_trials

    print_run_trials(_trials(store, run_id))
    if len({r["doc_type"] for r in by_type}) > 1:
        typer.echo("hit_rate@5 by gold document type:")
        for r in by_type:
            echo_line(f"  {r['method']:<20} {r['doc_type']:<12} {r['mean']:.4f}  (n={r['n']})")
    if corrected:
        from evalcore.cli.corrected_commands import print_corrected_means

        print_corrected_means(store, run_id)


def _trials(store, run_id: str):
    """The system's spread over its trials per method x metric (empty unless asked with --trials T)."""
    from evalcore.analysis.comparison.trial_noise import run_spread

    return run_spread(store, run_id)


def _judge_noise(store, run_id: str):
    """The judge's noise per method x metric (empty unless the run was scored with --repeats K)."""
    from evalcore.analysis.comparison.judge_noise import noise_table

    return noise_table(store, run_id)


def export_cmd(
    run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'."),
    fmt: str = typer.Option("csv", "--format", "-f", help=f"One of: {', '.join(FORMATS)}."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Output file (default: stdout)."),
    to: Optional[str] = typer.Option(
        None, "--to", help="phoenix://HOST:PORT/PROJECT: log the scores onto the run's traces as span "
                           "annotations named evalcore.<metric> (re-exporting updates them; docs/phoenix.md)."),
    phoenix_timeout: Optional[float] = PHOENIX_TIMEOUT,
    phoenix_request_timeout: Optional[float] = PHOENIX_REQUEST_TIMEOUT,
) -> None:
    """Export one row per question x method: question, ground truth, answer, one column per metric."""
    from evalcore.outputs.export import export_run

    limits = phoenix_limits(phoenix_timeout, phoenix_request_timeout, to is not None, "exports (--to)")
    if to is not None:
        from evalcore.outputs.phoenix_scores import export_scores

        if output is not None or fmt != "csv":
            raise EvalcoreError("--to sends the scores to Phoenix; it takes no --format or --output")

        summary = export_scores(state.store(), run, to, limits)
        echo_line(f"logged {summary.n_annotations} span annotations ({', '.join(summary.metrics)}) "
                   f"on {summary.n_spans} traces to {to}", err=True)
        return

    if fmt == "parquet" and output is None:
        raise EvalcoreError("parquet export needs -o FILE")
    data = export_run(state.store(), run, fmt, output)
    if data is not None:  # text, through the terminal guard like all output (-o FILE keeps every byte)
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
    else:
        typer.echo(f"wrote {output}", err=True)


def delete_cmd(run: str = typer.Argument(..., help="Run id (or unique prefix/name)."),
               yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete a run and everything stored for it."""
    store = state.store()
    run_id = store.resolve(run)
    if not yes and not typer.confirm(f"delete run {run_id}?", default=False):
        raise typer.Exit(1)
    store.delete_run(run_id)
    typer.echo(f"deleted {run_id}")


def clean_cmd(dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed.")) -> None:
    """Remove what interrupted imports and deletes left in the store's .staging and .trash folders.

    A staging folder is removed only when its import is gone: on Linux and macOS when no
    process holds its writer lock; elsewhere (and for folders without a lock file) when nothing
    in it changed for 24 hours. Everything in .trash is a run already deleted from view.
    Runs, shared data and imports still in progress are never touched. Importing also cleans
    staging on its own.
    """
    from evalcore.store.staging import human_bytes

    store = state.store()
    kept: list[Path] = []
    removed = store.clean_staging(dry_run=dry_run, kept=kept) + store.clean_trash(dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for item in removed:
        typer.echo(f"{verb} {item.path}  {human_bytes(item.bytes)}  ({item.reason})")
    total = human_bytes(sum(item.bytes for item in removed))
    if removed:
        typer.echo(f"{'would free' if dry_run else 'freed'} {total} in {len(removed)} folder(s)")
    else:
        typer.echo(f"nothing to clean in {store.root / '.staging'} or {store.root / '.trash'}")
    if kept:
        typer.echo(f"left {len(kept)} staging folder(s) alone: an import may still be writing them")
    store_health_commands.print_quarantined(store)


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("runs")(runs_cmd)
    app.command("show")(show_cmd)
    app.command("export")(export_cmd)
    app.command("delete")(delete_cmd)
    store_app = typer.Typer(help="Maintenance of the run store folder.", no_args_is_help=True,
                            rich_markup_mode=None)
    store_app.command("clean")(clean_cmd)
    store_health_commands.register(store_app)
    app.add_typer(store_app, name="store")
