"""Indexing coverage: how much of the corpus the system under test actually indexed.

The figures come from the target's own index statistics (`GET /index/stats`, snapshotted in the
run manifest as target_info.index_stats), so they describe the index the answers came from.
Why it matters: a low retrieval recall is often a document that was never chunked, not a bad
ranker — zero-chunk and skipped-chunk rates point there first.

Accepted input keys (a server reports what it has; absent figures stay absent, never 0):
docs_processed, docs_indexed, docs_skipped, zero_chunk_docs, chunks, chunks_skipped,
tokens_per_chunk {min, mean, p95, max, unit} or chunk_tokens [per-chunk counts],
doc_types {type: count}, versions {chunker, embedding, index}.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from evalcore.errors import EvalcoreError


def _count(stats: dict[str, Any], key: str) -> int | None:
    value = stats.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise EvalcoreError(f"index stats: '{key}' must be a non-negative number, got {value!r}")
    return int(value)


def _rate(numerator: int | None, denominator: int | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _token_figures(stats: dict[str, Any]) -> dict[str, Any] | None:
    raw = stats.get("chunk_tokens")
    if isinstance(raw, list) and raw:
        arr = np.asarray(raw, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise EvalcoreError("index stats: 'chunk_tokens' holds a non-finite value")
        return {"min": float(arr.min()), "mean": float(arr.mean()),
                "p95": float(np.percentile(arr, 95)), "max": float(arr.max()),
                "unit": stats.get("token_unit", "tokens"), "computed_from": "chunk_tokens"}
    given = stats.get("tokens_per_chunk")
    if isinstance(given, dict):
        return {k: given[k] for k in ("min", "mean", "p95", "max", "unit") if k in given}
    return None


def indexing_coverage(index_stats: dict[str, Any] | None) -> dict[str, Any] | None:
    """Coverage figures from a target's index statistics; None when the target reports none."""
    if not index_stats:
        return None
    if not isinstance(index_stats, dict):
        raise EvalcoreError("index stats must be a JSON object")
    processed = _count(index_stats, "docs_processed")
    chunks = _count(index_stats, "chunks")
    skipped_chunks = _count(index_stats, "chunks_skipped")
    out: dict[str, Any] = {
        "docs_processed": processed,
        "docs_indexed": _count(index_stats, "docs_indexed"),
        "docs_skipped": _count(index_stats, "docs_skipped"),
        "chunks": chunks,
        "zero_chunk_rate": _rate(_count(index_stats, "zero_chunk_docs"), processed),
        "doc_skip_rate": _rate(_count(index_stats, "docs_skipped"), processed),
        "skipped_chunk_rate": _rate(skipped_chunks, (chunks or 0) + (skipped_chunks or 0)),
        "tokens_per_chunk": _token_figures(index_stats),
        "doc_types": index_stats.get("doc_types") if isinstance(index_stats.get("doc_types"), dict) else None,
        "versions": index_stats.get("versions") if isinstance(index_stats.get("versions"), dict) else None,
    }
    return {k: v for k, v in out.items() if v is not None}


def run_indexing_coverage(target_info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per target of a run (a run may ask several servers): name -> coverage figures."""
    targets = target_info.get("targets") if isinstance(target_info.get("targets"), dict) else None
    if targets:
        found = {name: indexing_coverage(info.get("index_stats")) for name, info in targets.items()
                 if isinstance(info, dict)}
    else:
        found = {"default": indexing_coverage(target_info.get("index_stats"))}
    return {name: figures for name, figures in found.items() if figures}


def _doc_types(question) -> set[str]:
    types = set()
    for gold in question.gold_passages:
        if gold.rel_path and "." in gold.rel_path.rsplit("/", 1)[-1]:
            types.add(gold.rel_path.rsplit(".", 1)[-1].lower())
    doc_type = question.metadata.get("doc_type") if isinstance(question.metadata, dict) else None
    if isinstance(doc_type, str) and doc_type:
        types.add(doc_type.lower())
    return types


def coverage_by_doc_type(store, run_id: str, metric: str = "hit_rate@5") -> list[dict[str, Any]]:
    """Mean of a retrieval metric per method and gold document type (file extension of the gold
    passages' rel_path, or metadata.doc_type; `_doc_types` is the rule for one question). Questions
    whose gold has no known type are left out and counted under '(unknown)'; NaN values (no gold)
    are not scored. In SQL over the stored question records: building 100,000 question objects
    in Python made `evalcore show` take seconds. The values come from metric_wide (one row per
    answer: the metric's column, NULL where NaN) rather than from the long metric rows."""
    from evalcore.store import query_df, wide_columns
    from evalcore.store.wide import value_expr

    value = value_expr(metric, wide_columns(store, [run_id]), "m")
    rows = query_df(store, rf"""
        WITH g AS (
            SELECT question_id,
                   lower(regexp_extract(json_extract_string(p, '$.rel_path'), '\.([^./]+)$', 1)) AS t
            FROM questions, unnest(CAST(json_extract(record, '$.gold_passages') AS JSON[])) AS u(p)
            WHERE run_id = $run
            UNION
            SELECT question_id, lower(json_extract_string(record, '$.metadata.doc_type'))
            FROM questions
            WHERE run_id = $run AND json_type(record, '$.metadata.doc_type') = 'VARCHAR'
        ), types AS (SELECT DISTINCT question_id, t FROM g WHERE t IS NOT NULL AND t <> '')
        SELECT m.method, coalesce(ty.t, '(unknown)') AS doc_type, avg({value}) AS mean, count(*) AS n
        FROM metric_wide m LEFT JOIN types ty USING (question_id)
        WHERE m.run_id = $run AND {value} IS NOT NULL
        GROUP BY ALL ORDER BY m.method, doc_type""", {"run": run_id}, runs=[run_id])
    return [{"method": r.method, "doc_type": r.doc_type, "metric": metric, "mean": float(r.mean), "n": int(r.n)}
            for r in rows.itertuples(index=False)]
