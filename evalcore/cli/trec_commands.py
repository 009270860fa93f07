"""`evalcore trec QRELS RUN`: trec_eval-compatible scoring of TREC run files, fast enough for
millions of lines (see evalcore.metrics.trec_eval and docs/metrics/retrieval.md)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from evalcore.errors import InputError

DEFAULT_METRICS = "ndcg@10,mrr@10,map,recall@100,P_10"

HELP = """Score a TREC run against TREC qrels, with trec_eval's rules.

\b
Files (whitespace-separated, one record per line):
  QRELS  qid iter docno relevance      e.g. "301 0 FBIS3-10082 1"
  RUN    qid Q0 docno rank score tag   e.g. "301 Q0 FBIS3-10082 1 12.75 bm25"

\b
Rules (those of trec_eval, so numbers match published ones):
  - documents are ordered by score, highest first; equal scores by docno,
    descending; the rank column is ignored
  - relevance <= 0 is non-relevant; --relevance-level N (trec_eval -l N) makes
    only relevance >= N relevant for P, recall, success, MRR and MAP, while nDCG
    keeps every positive grade as its gain
  - only queries in both files are scored; --complete scores judged queries
    missing from the run as 0 (trec_eval -c)
  - a query with no relevant document scores 0 (its count is printed)
  - a document listed twice for one query is an error

\b
Metric names (ours, or trec_eval's in brackets); k is any cutoff:
  precision@k [P_k]   recall@k [recall_k]   hit_rate@k [success_k]
  mrr, mrr@k [recip_rank]   map, map@k [map_cut_k]   ndcg, ndcg@k [ndcg_cut_k]
  ndcg_exp@k (gain 2^rel - 1)   num_rel  num_ret  num_rel_ret

\b
Examples:
  evalcore trec qrels.txt run.txt
  evalcore trec qrels.dl19.txt run.txt -m ndcg@10,map -l 2 --json
  evalcore trec qrels.txt run.txt -m P_5,recip_rank --per-query
"""


def _qid_key(qid: str) -> tuple:
    return (0, int(qid), "") if qid.isdigit() else (1, 0, qid)


def trec_cmd(
    qrels: Path = typer.Argument(..., help="TREC qrels file: qid iter docno relevance.", show_default=False),
    run: Path = typer.Argument(..., help="TREC run file: qid Q0 docno rank score tag.", show_default=False),
    metrics: str = typer.Option(DEFAULT_METRICS, "--metrics", "-m",
                                help="Comma-separated metric names (ours or trec_eval's; see above)."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print JSON: {metric: mean}. With --per-query: "
                                      "{\"all\": {metric: mean}, \"queries\": {qid: {metric: value}}}."),
    per_query: bool = typer.Option(False, "--per-query", "-q",
                                   help="Also print every query's value (trec_eval -q)."),
    relevance_level: int = typer.Option(1, "--relevance-level", "-l", min=1,
                                        help="Minimum relevance that counts as relevant (trec_eval -l)."),
    complete: bool = typer.Option(False, "--complete", "-c",
                                  help="Score judged queries missing from the run as 0 (trec_eval -c)."),
) -> None:
    from evalcore.datasets.trec import line_of_row, read_qrels_table, read_run_table
    from evalcore.metrics.trec_eval import DuplicateDocument, evaluate, metric_function, rankings_from_tables

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    if not names:
        raise typer.BadParameter("give at least one metric name", param_hint="--metrics")
    for name in names:
        try:
            metric_function(name)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--metrics") from None
    for path in (qrels, run):
        if not path.is_file():
            raise InputError(str(path), "no such file")
    qrels_table, run_table = read_qrels_table(qrels), read_run_table(run)
    try:
        rankings, coverage = rankings_from_tables(run_table, qrels_table, level=relevance_level, complete=complete)
    except DuplicateDocument as exc:
        path = run if exc.where == "run" else qrels
        raise InputError(str(path), str(exc), record=line_of_row(path, exc.row), field="docno") from None
    if coverage.evaluated == 0:
        raise InputError(str(run), "no query of the run has judgements in the qrels (check the query ids)")
    values = evaluate(rankings, names)
    means = {name: float(v.sum()) if name.startswith("num_") else float(v.mean()) for name, v in values.items()}
    order = sorted(range(rankings.n_queries), key=lambda i: _qid_key(str(rankings.qids[i])))

    notes = [f"{coverage.evaluated} queries scored"]
    if coverage.run_only:
        notes.append(f"{coverage.run_only} run queries without judgements ignored")
    if coverage.qrels_only:
        notes.append(f"{coverage.qrels_only} judged queries missing from the run "
                     + ("scored 0" if complete else "ignored (--complete scores them 0)"))
    if coverage.no_relevant:
        notes.append(f"{coverage.no_relevant} queries have no relevant document and score 0")
    typer.echo("; ".join(notes), err=True)

    if as_json:
        if per_query:
            queries = {str(rankings.qids[i]): {n: float(values[n][i]) for n in names} for i in order}
            typer.echo(json.dumps({"all": means, "queries": queries}, indent=2))
        else:
            typer.echo(json.dumps(means, indent=2))
        return
    width = max(22, *(len(n) + 1 for n in names))
    for name in names:
        if per_query:
            for i in order:
                typer.echo(f"{name:<{width}}\t{rankings.qids[i]}\t{_fmt(name, float(values[name][i]))}")
        typer.echo(f"{name:<{width}}\tall\t{_fmt(name, means[name])}")


def _fmt(name: str, value: float) -> str:
    return str(int(round(value))) if name.startswith("num_") else f"{value:.4f}"


def register(app: typer.Typer) -> None:
    """Adds `evalcore trec`."""
    app.command("trec", help=HELP, short_help="Score a TREC run against qrels (trec_eval-compatible, fast).")(trec_cmd)
