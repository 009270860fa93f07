"""Placeholder until the semantic metrics land (see METRICS.md)."""

SPECS: list = []
