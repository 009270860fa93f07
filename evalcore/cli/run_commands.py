"""Placeholder: the run commands land with their issue."""

import typer


def register(app: typer.Typer) -> None:
    """Adds nothing yet."""
