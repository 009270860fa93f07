"""Spans -> traces, each span counted once, and only when its trace's root reaches it.

Span exports are not sets of well-formed trees. An OTLP exporter retries a batch the collector
already took, so the same spans arrive twice; two exports get concatenated into one file; a
broken tracer records a span as its own parent, two spans as each other's parents, or a span
under a parent that is in another trace or nowhere. Summing every span that carries a trace id
doubled a trace's contexts, tokens and cost in the first case and took a cycle's tokens in the
second. So, for every source (span files of any shape and Phoenix servers alike):

- a span is keyed by (trace id, span id): a repeat with the same content counts once; a repeat
  whose content differs is refused, naming the span and the first field that differs (which
  copy is right cannot be told);
- a trace's spans are those its root reaches through parent links, walked with a queue (a
  parent chain of any depth is fine); every other span is ignored and counted, never summed.

The root is the trace's one span without a parent. A trace recorded below its entry point has
none; its root is then its one span whose parent is in no trace of the source (a remote caller).
A trace with no root at all (only a cycle, or only spans claiming a parent in another trace) is
ignored whole and counted; two roots remain an error, as one trace must be one answer.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

from evalcore.errors import InputError
from evalcore.traces.spans import Span

_COMPARED = ("parent_id", "name", "kind", "start", "end", "status", "status_message", "project")


@dataclass
class TraceTree:
    """One trace: its root and the spans the root reaches (the root included), in source order."""

    trace_id: str
    root: Span
    spans: list[Span]

    def parents_first(self) -> list[Span]:
        """The spans breadth first from the root: each after its parent, shallower spans before
        deeper ones; walking this order, what lies above a span is known when the span is
        reached (retrieval.py finds the outermost retriever spans so)."""
        children: dict[str, list[Span]] = {}
        for span in self.spans:
            if span is not self.root and span.parent_id is not None:
                children.setdefault(span.parent_id, []).append(span)
        order = [self.root]
        for span in order:  # the list grows as it is walked
            order.extend(children.get(span.span_id, ()))
        return order

    def children_first(self) -> list[Span]:
        """The spans with each one after every span below it: walking this order, what lies
        below a span is known when the span is reached (llm_usage.py counts nested LLM spans so)."""
        return self.parents_first()[::-1]


@dataclass
class Traces:
    """Every trace of a source, and what was left out of them (for the import's warning)."""

    trees: list[TraceTree] = field(default_factory=list)
    repeated_spans: int = 0  # identical copies counted once
    unreachable_spans: int = 0  # spans no root reaches, in traces that have a root
    rootless_traces: int = 0  # traces ignored whole
    rootless_spans: int = 0

    def left_out(self) -> dict[str, int]:
        """The non-zero counts, as the run's manifest keeps them."""
        counts = {"repeated": self.repeated_spans, "unreachable": self.unreachable_spans,
                  "rootless_traces": self.rootless_traces, "rootless_spans": self.rootless_spans}
        return {k: v for k, v in counts.items() if v}

    def warnings(self) -> list[str]:
        out = []
        if self.repeated_spans:
            out.append(f"{self.repeated_spans} span(s) delivered more than once with the same content: "
                       "each counted once")
        if self.unreachable_spans:
            out.append(f"ignored {self.unreachable_spans} span(s) their trace's root does not reach (a cycle, "
                       "a span that is its own parent, a parent missing or in another trace): not counted")
        if self.rootless_traces:
            out.append(f"ignored {self.rootless_traces} trace(s) without a root span ({self.rootless_spans} "
                       "span(s): only cycles or spans claiming a parent in another trace): not counted")
        return out


def _where(span: Span) -> Any:
    return span.where if span.where is not None else f"span {span.span_id}"


def _canonical(value: Any) -> str:
    """Equal content -> equal text (NaN equals NaN here, unlike ==; datetimes by their text)."""
    return json.dumps(value, sort_keys=True, default=str)


def _first_difference(a: Span, b: Span) -> str | None:
    for name in _COMPARED:
        if _canonical(getattr(a, name)) != _canonical(getattr(b, name)):
            return name
    for key in sorted(set(a.attributes) | set(b.attributes)):
        if key not in a.attributes or key not in b.attributes or \
                _canonical(a.attributes[key]) != _canonical(b.attributes[key]):
            return key
    return None


def unique_spans(spans: Iterable[Span], file: str) -> tuple[list[Span], int]:
    """Each (trace id, span id) once, in first-seen order, and how many identical repeats were
    dropped; an InputError naming the span and field when a repeat says something else."""
    seen: dict[tuple[str, str], Span] = {}
    repeated = 0
    for span in spans:
        key = (span.trace_id, span.span_id)
        first = seen.get(key)
        if first is None:
            seen[key] = span
            continue
        differs = _first_difference(first, span)
        if differs is not None:
            raise InputError(file, f"span {span.span_id} of trace {span.trace_id} appears twice with different "
                             f"content (first at record {_where(first)}): which copy is right cannot be told",
                             record=_where(span), field=differs)
        repeated += 1
    return list(seen.values()), repeated


def _root(trace_id: str, spans: list[Span], all_ids: set[str], file: str) -> Span | None:
    """The trace's root (see the module docstring), None when it has none."""
    roots = [s for s in spans if s.parent_id is None]
    if not roots:
        roots = [s for s in spans if s.parent_id not in all_ids]
    if len(roots) > 1:
        listed = ", ".join(s.span_id for s in roots[:5])
        raise InputError(file, f"trace {trace_id} has {len(roots)} root spans ({listed}); "
                         "one trace must be one answer with one root span", record=_where(roots[0]))
    return roots[0] if roots else None


def _reached(root: Span, spans: list[Span]) -> list[Span]:
    """The spans `root` reaches through parent links, in source order; a queue, not recursion."""
    children: dict[str, list[Span]] = {}
    for span in spans:
        if span.parent_id is not None and span is not root:
            children.setdefault(span.parent_id, []).append(span)
    reached = {id(root)}
    queue = deque([root.span_id])
    while queue:
        for child in children.pop(queue.popleft(), ()):
            if id(child) not in reached:
                reached.add(id(child))
                queue.append(child.span_id)
    return [s for s in spans if id(s) in reached]


def assemble_traces(spans: Iterable[Span], file: str) -> Traces:
    """The traces of a source, in first-seen order, each span once and only under its root."""
    unique, repeated = unique_spans(spans, file)
    by_trace: dict[str, list[Span]] = {}
    for span in unique:
        by_trace.setdefault(span.trace_id, []).append(span)
    all_ids = {s.span_id for s in unique}
    out = Traces(repeated_spans=repeated)
    for trace_id, members in by_trace.items():
        root = _root(trace_id, members, all_ids, file)
        if root is None:
            out.rootless_traces += 1
            out.rootless_spans += len(members)
            continue
        reached = _reached(root, members)
        out.unreachable_spans += len(members) - len(reached)
        out.trees.append(TraceTree(trace_id, root, reached))
    return out
