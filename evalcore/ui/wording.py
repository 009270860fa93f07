"""How pages put things into words, as pure functions: a word diff of two answers as plain
text, short system labels for charts, and which judge scored something (the heuristic judge
always named as "word overlap, not a model"). No Streamlit, no store, no numbers a person
reads as results (those come from evalcore.analysis; Pareto fronts from
evalcore.analysis.charts.distributions.front_2d)."""

from __future__ import annotations

import difflib
from typing import Iterable, Sequence

# The judge named in words lives in evalcore.analysis.labels.judge_labels (the HTML report says it too).
from evalcore.analysis.labels.judge_labels import HEURISTIC_BADGE, HEURISTIC_NOTE, is_heuristic, judge_name, judged_by, judges_text  # noqa: F401  (pages import them from here)


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
