"""Metrics: one small module per group, collected by registry.METRICS."""
