"""Placeholder until the composites metrics land (see METRICS.md)."""

SPECS: list = []
