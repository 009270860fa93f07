"""Placeholder until the performance metrics land (see METRICS.md)."""

SPECS: list = []
