"""OpenInference traces in, scores out: the Phoenix integration (docs/phoenix.md).

spans.py reads span records (Phoenix span-dataframe exports, Phoenix REST spans, OTLP JSON
lines) into one shape; openinference.py turns one trace into one answer; trace_import.py
publishes a run from them; phoenix.py talks to a Phoenix server through arize-phoenix-client.
"""
