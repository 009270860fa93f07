"""A Phoenix server, through arize-phoenix-client: its project's spans in, span annotations out.

`phoenix://HOST:PORT/PROJECT` names a project on a Phoenix server reached over plain HTTP
(`phoenixs://` for HTTPS). An API key, when the server needs one, comes from PHOENIX_API_KEY
(read by the client itself); a URL with credentials in it is refused, so no key reaches a
manifest or a log.

Scores go back as span annotations on each answer's root span, named `evalcore.<metric>`,
with the identifier `evalcore:<run id>`: Phoenix upserts on (name, span, identifier), so
exporting a run twice updates its annotations instead of adding copies, and two runs over the
same traces (two judges, say) stay side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import urlsplit

from evalcore.errors import EvalcoreError

if TYPE_CHECKING:
    from evalcore.store import RunStore
    from evalcore.traces.spans import Span

INSTALL_HINT = "Phoenix needs arize-phoenix-client: pip install 'evalcore[phoenix]'"
SCHEMES = {"phoenix": "http", "phoenixs": "https"}
BATCH = 200  # annotations per request
SPAN_LIMIT = 10_000_000  # get_spans pages through everything below this


@dataclass(frozen=True)
class PhoenixTarget:
    base_url: str
    project: str

    @property
    def label(self) -> str:
        return f"project {self.project!r} on {self.base_url}"


def is_phoenix_url(text: str) -> bool:
    return text.split("://", 1)[0].lower() in SCHEMES and "://" in text


def parse_url(text: str) -> PhoenixTarget:
    """phoenix://HOST:PORT/PROJECT -> (http://HOST:PORT, PROJECT); a clear error otherwise."""
    parts = urlsplit(text)
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise EvalcoreError(f"{text!r}: expected phoenix://HOST:PORT/PROJECT")
    if parts.username or parts.password:
        raise EvalcoreError("a Phoenix URL must not hold credentials; set PHOENIX_API_KEY instead")
    project = parts.path.strip("/")
    if not parts.hostname or not project or "/" in project:
        raise EvalcoreError(f"{text!r}: expected phoenix://HOST:PORT/PROJECT (one project name after the port)")
    try:
        port = parts.port
    except ValueError as exc:
        raise EvalcoreError(f"{text!r}: {exc}") from None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return PhoenixTarget(f"{scheme}://{host}{':' + str(port) if port else ''}", project)


def client(target: PhoenixTarget) -> Any:
    try:
        from phoenix.client import Client
    except ImportError:
        raise EvalcoreError(INSTALL_HINT) from None
    return Client(base_url=target.base_url)


def _server_error(target: PhoenixTarget, exc: Exception, doing: str) -> EvalcoreError:
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        detail = exc.response.text.strip().splitlines()[0][:200] if exc.response.text.strip() else ""
        if exc.response.status_code == 404 and doing == "reading spans":
            return EvalcoreError(f"no project {target.project!r} on the Phoenix server at {target.base_url} "
                                 f"(HTTP 404{': ' + detail if detail else ''})")
        return EvalcoreError(f"Phoenix at {target.base_url} refused ({doing}): HTTP "
                             f"{exc.response.status_code}{': ' + detail if detail else ''}")
    return EvalcoreError(f"cannot reach Phoenix at {target.base_url} ({doing}): {type(exc).__name__}: {exc}")


def server_spans(target: PhoenixTarget) -> list[Span]:
    """Every span of the project, through the client's paged REST call (no scraping)."""
    import httpx

    from evalcore.traces.spans import from_rest_span

    try:
        raw = client(target).spans.get_spans(project_identifier=target.project, limit=SPAN_LIMIT)
    except (httpx.HTTPError, OSError) as exc:
        raise _server_error(target, exc, "reading spans") from None
    source = f"phoenix {target.project}"
    return [from_rest_span(span, source, f"span {i}", project=target.project) for i, span in enumerate(raw, 1)]


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


def export_scores(store: RunStore, run_ref: str, url: str) -> ExportSummary:
    """Log a run's metric values onto its traces' root spans; refuses before sending anything
    when the run has no values or an answer did not come from a trace."""
    import httpx

    from evalcore.analysis.trace_scores import trace_metric_values

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
    phoenix = client(target)
    try:
        for i in range(0, len(annotations), BATCH):
            phoenix.spans.log_span_annotations(span_annotations=annotations[i:i + BATCH], sync=True)
    except (httpx.HTTPError, OSError) as exc:
        raise _server_error(target, exc, f"sending span annotations, {i} of {len(annotations)} sent "
                                         "before this; exporting again resends them all") from None
    return ExportSummary(len(annotations), rows["span_id"].nunique(), sorted(rows["metric"].unique()))
