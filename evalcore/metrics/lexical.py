"""Placeholder until the lexical metrics land (see METRICS.md)."""

SPECS: list = []
