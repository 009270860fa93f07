"""Placeholder until the citation metrics land (see METRICS.md)."""

SPECS: list = []
