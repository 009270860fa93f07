"""Commands about question sets: datasets, stats."""

from __future__ import annotations

import json
from typing import Optional

import typer

from evalcore.datasets import FORMATS, load_questions
from evalcore.datasets.stats import dataset_stats


def datasets_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the question formats evalcore reads (and the public sets it can fetch by name)."""
    from evalcore.datasets.registry import PUBLIC_SETS

    if as_json:
        typer.echo(json.dumps({"formats": {k: v.description for k, v in FORMATS.items()},
                               "public": {k: v.description for k, v in PUBLIC_SETS.items()}}, indent=2))
        return
    typer.echo("File formats (use with --dataset FILE; detected automatically):")
    for fmt in FORMATS.values():
        typer.echo(f"  {fmt.name:<16} {fmt.description}")
    if PUBLIC_SETS:
        typer.echo("\nPublic sets by name (need `pip install evalcore[datasets]` and network):")
        for item in PUBLIC_SETS.values():
            typer.echo(f"  {item.name:<16} {item.description}")


def stats_cmd(
    dataset: str = typer.Argument(..., help="A question file (any supported format)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Force a format (see `evalcore datasets`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Count questions by category, type, difficulty, answerability and gold annotations."""
    stats = dataset_stats(load_questions(dataset, fmt))
    if as_json:
        typer.echo(json.dumps(stats, ensure_ascii=False, indent=2))
        return
    for key, value in stats.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for k, v in value.items():
                typer.echo(f"  {k:<28} {v}")
        else:
            typer.echo(f"{key:<30} {value}")


def register(app: typer.Typer) -> None:
    app.command("datasets")(datasets_cmd)
    app.command("stats")(stats_cmd)
