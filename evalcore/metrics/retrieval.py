"""Placeholder until the retrieval metrics land (see METRICS.md)."""

SPECS: list = []
