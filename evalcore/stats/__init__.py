"""Aggregation and comparison of stored metric values (means with CIs, paired tests, Pareto)."""
