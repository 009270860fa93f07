"""`evalcore store check`, `repair` and `upgrade`: finding damage in the store, rebuilding a
run's lost pointer (the work is in evalcore/store/health.py), and writing the derived tables
a run compacted by an older evalcore lacks."""

from __future__ import annotations

from typing import Optional

import typer

from evalcore.cli.context import echo_line, state


def check_cmd(
    run: Optional[str] = typer.Argument(None, help="One run (id, unique prefix, name or 'latest'); default: all."),
    quick: bool = typer.Option(False, "--quick", help="Read each file's footer only, not every row."),
) -> None:
    """Open every file every run's pointer names, like `git fsck`: list damaged runs (a symbolic
    link anywhere in a run included), files nothing accounts for, and (for the whole store) its
    own folders outside the runs that are links, and warn of question ids stored twice under the
    id rule (a run from before the rule: compare refuses it) and of random samples whose labels
    no longer walk their seed's order (those labels count as hand-picked: docs/labels.md). Exit
    code 1 when a run is damaged or a folder of the store is a link."""
    from evalcore.analysis.read.id_collisions import colliding_ids, warning_lines
    from evalcore.analysis.labels.sample_audit import findings as sample_findings

    store = state.store()
    run_ids = [store.resolve(run)] if run else None
    checks = store.check(run_ids, deep=not quick)
    damaged = strays = files = 0
    linked = [] if run else store.linked_folders()  # the store's own folders outside its runs
    for problem in linked:
        echo_line(f"DAMAGED store: {problem}")
    for check in checks:
        files += check.files_checked
        for problem in check.damage:
            echo_line(f"DAMAGED {check.run_id}: {problem}")
        for stray in check.strays:
            echo_line(f"stray   {check.run_id}/{stray}")
        if not check.damaged:  # a run that reads whole: are its ids one id twice under the id rule?
            for line in warning_lines(colliding_ids(store, check.run_id)):
                echo_line(f"WARNING {line}")
            for line in sample_findings(store, check.run_id):  # do its random samples still walk their order?
                echo_line(f"WARNING {check.run_id}: {line}")
        damaged += check.damaged
        strays += len(check.strays)
    links = f", {len(linked)} of the store's own folders or files a symbolic link (or a FIFO, socket or device)" \
        if linked else ""
    typer.echo(f"checked {len(checks)} run(s), {files} file(s): {damaged} damaged, {strays} stray file(s){links}")
    if damaged or linked:
        typer.echo("each DAMAGED line says what to do; `evalcore store repair RUN` removes the symbolic links in a run "
                   "(never what they point to) and the FIFOs, sockets and device nodes, and rebuilds a lost or damaged "
                   "pointer from its newest readable files", err=True)
        raise typer.Exit(1)


def repair_cmd(run: str = typer.Argument(..., help="Run id, unique prefix, name, or 'latest'.")) -> None:
    """Remove the symbolic links in a run (each link itself, never what it points to; a link the
    run's rows are read through is refused, naming it), and rebuild a lost or unreadable table
    pointer from the newest readable generation of each table in its data/ folder, saying what
    was found. Deletes no file: files it cannot use stay where they are. A run that reads whole
    and holds no link is left alone."""
    for line in state.store(changing=True).repair(run).lines():
        typer.echo(line)


def upgrade_cmd(run: Optional[str] = typer.Argument(None, help="One run (id, unique prefix, name or 'latest'); default: all.")) -> None:
    """Write the derived tables (summaries, the one-row-per-answer metric_wide) that runs last
    compacted by an older evalcore lack. Readers compute them on every read until then, which
    costs seconds per page on a large run. Each run is one ordinary compaction: safe to stop."""
    store = state.store(changing=True)
    done = store.upgrade([store.resolve(run)] if run else None)
    for run_id in done:
        typer.echo(f"upgraded {run_id}")
    typer.echo(f"{len(done)} run(s) upgraded; every other run already had its derived tables")


def print_damaged(listing, err: bool = False) -> int:
    """The damaged runs and annotation files of a listing (analysis.runs.listing_cache), one
    line each (for `evalcore runs`); returns how many runs."""
    for row in listing.damaged_runs:
        named = f" ({row.name})" if isinstance(row.name, str) else ""  # unknown when run.json was not read
        echo_line(f"damaged run {row.run_id}{named}: {row.reason}; see `evalcore store check {row.run_id}`", err=err)
    for row in listing.damaged_annotations:
        echo_line(f"damaged annotations file {row.file}: {row.reason.rstrip('.')}; its labels are left out of every reading "
                   "(the file is kept: restore it from a backup, or move it away)", err=err)
    return len(listing.damaged_runs)


def print_quarantined(store) -> None:
    """Part files set aside by a write (unreadable, another table's or another run's; for
    `evalcore store clean`): reported, never removed."""
    from evalcore.store.staging import human_bytes

    found = store.quarantined()
    for path, size in found:
        typer.echo(f"quarantined {path}  {human_bytes(size)}  (a part file its run could not absorb, set aside by a "
                   "write; kept for you to inspect or delete)")


def register(store_app: typer.Typer) -> None:
    store_app.command("check")(check_cmd)
    store_app.command("repair")(repair_cmd)
    store_app.command("upgrade")(upgrade_cmd)
