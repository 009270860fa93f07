"""OpenInference traces in, scores out: the Phoenix integration (docs/phoenix.md).

spans.py reads span records (Phoenix span-dataframe exports, Phoenix REST spans, OTLP JSON
lines) into one shape; trace_tree.py assembles traces from them (each span once, only under its
root); openinference.py turns one trace into one answer; trace_import.py publishes a run from
them; phoenix.py talks to a Phoenix server's REST API, through the bounded requests of
phoenix_http.py.
"""
