"""Small pure helpers the pages share: Pareto fronts, word diffs, Cohen's kappa, and reading
per-context verdicts out of metric details. No Streamlit, no store: easy to test alone."""

from __future__ import annotations

import difflib
import json
import math
from collections import Counter
from typing import Any, Iterable, Sequence


def pareto_mask(quality: Sequence[float], cost: Sequence[float]) -> list[bool]:
    """True where a point is non-dominated for (quality up, cost down).

    A point is dominated when another is at least as good on both axes and strictly better
    on one. NaN points are never on the front (they cannot be compared).
    """
    pts = list(zip(quality, cost))
    out = []
    for i, (q, c) in enumerate(pts):
        if q is None or c is None or math.isnan(q) or math.isnan(c):
            out.append(False)
            continue
        dominated = any(
            j != i and q2 is not None and c2 is not None and not math.isnan(q2) and not math.isnan(c2)
            and q2 >= q and c2 <= c and (q2 > q or c2 < c)
            for j, (q2, c2) in enumerate(pts))
        out.append(not dominated)
    return out


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """Word-level diff of two answers as (op, text) rows: '=' same, '-' only in a, '+' only in b.

    Rendered as a table/plain text by the page (never HTML), so answer text stays inert.
    """
    wa, wb = a.split(), b.split()
    rows: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag == "equal":
            rows.append(("=", " ".join(wa[i1:i2])))
        else:
            if i2 > i1:
                rows.append(("-", " ".join(wa[i1:i2])))
            if j2 > j1:
                rows.append(("+", " ".join(wb[j1:j2])))
    return rows


def diff_text(rows: Iterable[tuple[str, str]]) -> str:
    """The diff as unified-style plain text: `[-removed-]` and `{+added+}` markers."""
    parts = []
    for op, text in rows:
        parts.append(text if op == "=" else f"[-{text}-]" if op == "-" else f"{{+{text}+}}")
    return " ".join(parts)


def cohen_kappa(pairs: Iterable[tuple[str, str]]) -> float:
    """Cohen's kappa for (rater1, rater2) labels: (p_o - p_e) / (1 - p_e).

    p_o is observed agreement, p_e the agreement expected from each rater's label
    frequencies. Returns NaN with no pairs; 1.0 when both raters use one identical label
    (p_e = 1, perfect but uninformative agreement).
    """
    pairs = list(pairs)
    n = len(pairs)
    if n == 0:
        return float("nan")
    p_o = sum(1 for a, b in pairs if a == b) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    p_e = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if p_e >= 1.0:
        return 1.0 if p_o >= 1.0 else 0.0
    return (p_o - p_e) / (1 - p_e)


def _verdict_label(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "relevant" if value else "not_relevant"
    if isinstance(value, (int, float)):
        return "relevant" if float(value) >= 0.5 else "not_relevant"
    text = str(value).strip().lower()
    if text in {"yes", "relevant", "true", "1"}:
        return "relevant"
    if text in {"no", "not_relevant", "irrelevant", "false", "0"}:
        return "not_relevant"
    return text or None


def context_verdicts(details: str | dict | None) -> list[dict[str, Any]]:
    """Per-context relevance verdicts from context_precision details, in rank order.

    Accepts `{"contexts": [...]}`, `{"verdicts": [...]}` or `{"per_context": [...]}` with items
    carrying rank/index, verdict/relevant, score and reason; a plain list of verdicts counts
    as ranks 1..n. Unknown shapes give an empty list (the page then says none were stored).
    """
    if details is None or (isinstance(details, float) and math.isnan(details)):
        return []
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except json.JSONDecodeError:
            return []
    if not isinstance(details, dict):
        return []
    items = details.get("contexts") or details.get("verdicts") or details.get("per_context") or []
    out = []
    for pos, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            item = {"verdict": item}
        rank = item.get("rank") or item.get("index") or pos
        verdict = item.get("verdict", item.get("relevant"))
        out.append({"rank": int(rank), "verdict": _verdict_label(verdict),
                    "score": item.get("score"), "reason": item.get("reason")})
    return sorted(out, key=lambda r: r["rank"])


def short_system_labels(keys: Sequence[str], run_names: dict[str, str]) -> dict[str, str]:
    """Axis and legend labels for `run_id:method` keys, as short as stays unambiguous.

    Why: run ids (`demo-20261122-025512-e0a262`) make every chart label ~40 characters, which
    plotly then rotates and crams. One run -> the method alone (the page names the run);
    several runs with distinct names -> `name / method`; otherwise `run_id / method`. Any
    collision falls back to the full key.
    """
    parts = [k.partition(":")[::2] for k in keys]
    runs = {run for run, _ in parts}
    names = {run: run_names.get(run) or run for run in runs}
    if len(runs) == 1:
        labels = {k: method for k, (_, method) in zip(keys, parts)}
    elif len(set(names.values())) == len(runs):
        labels = {k: f"{names[run]} / {method}" for k, (run, method) in zip(keys, parts)}
    else:
        labels = {k: f"{run} / {method}" for k, (run, method) in zip(keys, parts)}
    return labels if len(set(labels.values())) == len(labels) else {k: k for k in keys}
