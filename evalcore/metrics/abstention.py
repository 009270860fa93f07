"""Placeholder until the abstention metrics land (see METRICS.md)."""

SPECS: list = []
