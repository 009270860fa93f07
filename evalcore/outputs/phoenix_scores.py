"""A run's scores out to Phoenix: each answer's metric values as span annotations on its trace's
root span, named `evalcore.<metric>` with the identifier `evalcore:<run id>` (Phoenix upserts on
name, span and identifier, so a second export updates instead of adding copies).

Why here and not in evalcore/traces: the values come from the analysis layer
(analysis/read/trace_scores.py), and traces/ sits below analysis (it imports spans into runs); what
reads analysis to send it somewhere is an output, like the report and the export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from evalcore.analysis.read.trace_scores import trace_metric_values
from evalcore.errors import EvalcoreError, InputError
from evalcore.traces.phoenix import kind, refused
from evalcore.traces.phoenix_http import Limits, Refused, Session, run_session
from evalcore.traces.phoenix_url import PhoenixTarget, parse_url

if TYPE_CHECKING:
    from evalcore.store import RunStore

BATCH = 200  # annotations per request


def _annotations(rows: Any, run_id: str) -> Iterator[dict[str, Any]]:
    for row in rows.itertuples(index=False):
        value = None if row.value is None or math.isnan(row.value) else float(row.value)
        result: dict[str, Any] = {"score": value}
        if isinstance(row.label, str) and row.label:
            result["label"] = row.label
        elif value is None:
            result["label"] = "not scored"
        if isinstance(row.reason, str) and row.reason:
            result["explanation"] = row.reason
        judge = row.judge_id if isinstance(row.judge_id, str) and row.judge_id else None
        metadata = {"evalcore_run": run_id, "method": row.method, "question_id": row.question_id,
                    "metric_version": row.version}
        if judge:
            metadata["judge"] = judge
        yield {"name": f"evalcore.{row.metric}", "annotator_kind": "LLM" if judge else "CODE",
               "span_id": row.span_id, "identifier": f"evalcore:{run_id}", "result": result,
               "metadata": metadata}


@dataclass
class ExportSummary:
    n_annotations: int
    n_spans: int
    metrics: list[str]


def _receipt(reply: Any, source: str, batch: int, sent: int) -> None:
    """Phoenix's answer to a synchronous annotation request: one inserted id per annotation."""
    where = f"reply to annotation batch {batch}"
    if not isinstance(reply, dict) or not isinstance(reply.get("data"), list):
        got = kind(reply.get("data")) if isinstance(reply, dict) else kind(reply)
        raise InputError(source, f"expected an object whose 'data' lists the inserted annotations, got {got}",
                         record=where, field="data" if isinstance(reply, dict) else None)
    receipts = reply["data"]
    for i, item in enumerate(receipts):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise InputError(source, f"expected an object with the annotation's 'id', got {kind(item)}",
                             record=where, field=f"data.{i}")
    if len(receipts) != sent:
        raise InputError(source, f"{len(receipts)} annotation(s) acknowledged of the {sent} sent", record=where,
                         field="data")


async def _send(session: Session, target: PhoenixTarget, annotations: list[dict[str, Any]]) -> None:
    for batch, start in enumerate(range(0, len(annotations), BATCH), 1):
        chunk = annotations[start:start + BATCH]
        doing = (f"sending span annotations, {start} of {len(annotations)} sent before this; "
                 "exporting again resends them all")
        try:
            reply = await session.call("POST", "v1/span_annotations", doing, f"reply to annotation batch {batch}",
                                       params={"sync": "true"}, json={"data": chunk})
        except Refused as exc:
            raise refused(target, exc, doing) from None
        _receipt(reply, session.source, batch, len(chunk))


def export_scores(store: RunStore, run_ref: str, url: str, limits: Limits | None = None) -> ExportSummary:
    """Log a run's metric values onto its traces' root spans, within `limits`; refuses before
    sending anything when the run has no values or an answer did not come from a trace."""
    target = parse_url(url)
    run_id = store.resolve(run_ref)
    rows = trace_metric_values(store, run_id)
    if rows.empty:
        raise EvalcoreError(f"run {run_id} has no metric values yet (score it first: evalcore score {run_id})")
    missing = rows[rows["span_id"].isna()]
    if not missing.empty:
        first = missing.iloc[0]
        raise EvalcoreError(f"run {run_id} has answers that did not come from traces (question "
                            f"{first['question_id']!r}, method {first['method']!r}): only runs imported from "
                            "OpenInference traces can be exported to Phoenix")
    projects = sorted({p for p in rows["project"].dropna().unique()} - {target.project})
    if projects:
        raise EvalcoreError(f"run {run_id} was imported from Phoenix project {projects[0]!r}, not "
                            f"{target.project!r}: export to the project its traces are in")
    annotations = list(_annotations(rows, run_id))
    run_session(target.base_url, f"phoenix {target.project}", limits or Limits(),
                lambda session: _send(session, target, annotations))
    return ExportSummary(len(annotations), rows["span_id"].nunique(), sorted(rows["metric"].unique()))
