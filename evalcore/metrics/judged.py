"""Placeholder until the judged metrics land (see METRICS.md)."""

SPECS: list = []
