"""`evalcore import` and `evalcore export`: runs into the store (recorded answers, OpenInference
traces from a file or a Phoenix server) and out of it (a run's table, or its scores to Phoenix).

Why apart from store_commands.py: these two carry the Phoenix bounds and the export formats,
which `runs`, `show` and `delete` never use and, in one module with them, imported at every start.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from evalcore.cli.context import echo_line, state
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

if TYPE_CHECKING:
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
        result = import_recorded(state.store(changing=True), file, name=name, dataset=dataset, method=method, kind=kind,
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
    result = import_traces(state.store(changing=True), spans, source, name=name or default_name,
                           method=method or project or default_name, project=project,
                           method_from=method_from, id_from=id_from, dataset=dataset, source_info=info)
    for line in result.notes:
        echo_line(line, err=True)
    echo_line(f"imported {result.n_records} answers to {result.n_questions} questions "
               f"({', '.join(result.methods)}) as run:", err=True)
    typer.echo(result.run_id)


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


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("export")(export_cmd)
