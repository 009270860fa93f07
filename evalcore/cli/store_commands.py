"""Commands over the run store: runs, show, delete, and `store clean` (`store check` and `store
repair` live in store_health_commands.py; `import` and `export`, which move runs in and out of
the store, in transfer_commands.py, so that listing the runs loads none of their Phoenix and
export machinery)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from evalcore.cli.context import echo_line, state
from evalcore.cli import store_health_commands


def runs_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table.")) -> None:
    """List the runs in the store, newest first."""
    from evalcore.analysis.runs.listing_cache import run_listing  # no pandas, and no DuckDB for an unchanged store
    from evalcore.analysis.runs.run_listing import rows_json

    store = state.store()
    listing = run_listing(store)
    for problem in listing.problems:
        echo_line(f"warning: skipped a run: {problem}", err=True)
    rows = listing.rows
    if as_json:
        store_health_commands.print_damaged(listing, err=True)  # stdout stays JSON
        typer.echo(rows_json(list(rows)))
        return
    if not rows:
        if not store_health_commands.print_damaged(listing):
            typer.echo(f"no runs in {store.root} (try: evalcore import --example)")
        return
    from evalcore.cli.context import print_table

    print_table(None, ("run_id", "name", "status", "methods", "n_questions", "n_responses", "n_errors", "created_at"),
                ((row.run_id, row.name, row.status, row.methods, row.n_questions, row.n_responses, row.n_errors,
                  str(row.created_at)[:19]) for row in rows))
    store_health_commands.print_damaged(listing)


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


def delete_cmd(run: str = typer.Argument(..., help="Run id (or unique prefix/name)."),
               yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete a run and everything stored for it."""
    store = state.store()
    run_id = store.resolve(run)
    if not yes and not typer.confirm(f"delete run {run_id}?", default=False):
        raise typer.Exit(1)
    state.changing = True
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
    app.command("runs")(runs_cmd)
    app.command("show")(show_cmd)
    app.command("delete")(delete_cmd)
    store_app = typer.Typer(help="Maintenance of the run store folder.", no_args_is_help=True,
                            rich_markup_mode=None)
    store_app.command("clean")(clean_cmd)
    store_health_commands.register(store_app)
    app.add_typer(store_app, name="store")
