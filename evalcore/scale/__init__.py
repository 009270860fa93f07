"""Running evalcore's scoring and asking passes on a Ray cluster (optional `evalcore[scale]`).

Nothing here is imported by the default (local) path. The engines reuse the local code for
everything that decides a value (metric selection, the metric functions, the judge client,
the store's part files and compaction); Ray only decides where each block of answers is
computed. See docs/scale.md.
"""
