"""`evalcore metrics`: what can be scored, straight from the metric registry.

Why a command: `--metrics`/`--group` take registry names, and which of them need a judge,
embeddings, retrieved contexts or a ground truth decides whether a run can be scored with
them. Listing the registry itself (not a hand-kept table) keeps the answer true.
"""

from __future__ import annotations

import json
import re
from typing import Optional

import typer

from evalcore.cli.context import console
from evalcore.errors import EvalcoreError


def _order(spec) -> tuple:
    """By group, then name with cutoffs in numeric order (hit_rate@3 before hit_rate@10)."""
    return spec.group, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", spec.name)]


def metrics_cmd(
    group: Optional[str] = typer.Option(None, "--group", help="Only this group (see the group column)."),
    needs: Optional[str] = typer.Option(None, "--needs", help="Only metrics needing this input, e.g. judge."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List every metric: group, inputs it needs, direction and what it measures."""
    from evalcore.metrics.base import NEEDS
    from evalcore.metrics.registry import METRICS, groups

    if group is not None and group not in groups():
        raise EvalcoreError(f"unknown metric group {group!r}; known: {', '.join(sorted(groups()))}")
    if needs is not None and needs not in NEEDS:
        raise EvalcoreError(f"unknown input {needs!r}; known: {', '.join(sorted(NEEDS))}")
    specs = [s for s in METRICS.values()
             if (group is None or s.group == group) and (needs is None or needs in s.needs)]
    rows = [{"name": s.name, "group": s.group, "needs": sorted(s.needs),
             "higher_is_better": s.higher_is_better, "binary": s.binary, "version": s.version,
             "description": s.description, "options": [o.name for o in s.options], "docs": s.docs_page}
            for s in sorted(specs, key=_order)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no metric matches")
        return
    from rich.table import Table

    table = Table(show_lines=False)
    for col in ("metric", "group", "needs", "better", "measures"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["group"], ", ".join(r["needs"]) or "-",
                      "higher" if r["higher_is_better"] else "lower", r["description"])
    console().print(table)
    typer.echo(f"{len(rows)} metrics. Score with `evalcore score RUN --metrics a,b` or `--groups G`; "
               "see docs/metrics/ for formulas.")


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics_cmd)
