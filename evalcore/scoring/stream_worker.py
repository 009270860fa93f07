"""A live run's chunks scored in a child process: the parent's side.

Why: scoring while asking in a thread took the interpreter lock from the event loop that asks,
and a run of 1,000 answers with its default scoring took ~2.3x the ideal wall time against
~1.6x asking alone (bench/bench_runner.py). The child scores on the other core with the very
ChunkStream the thread runs (scoring/stream_chunks.py), writing each chunk's part files into
the run itself, as the Ray scoring actors do; the parent publishes them with its answers.

Protocol (evalcore/common/child_pipe.py), one reply per request, in order:
  (store root, run id, metrics, groups, options)       -> nothing (the child builds its writer)
  ("decide", items) -> ("ok", None | why not)          ("score", items) -> ("ok", None)
  ("close", have, n_items) -> ("ok", None | (report, history entry))
Any request may be answered ("error", "Type: message"): the parent then gives streaming up and
the run is scored after the last answer, as when the child is gone. The child ignores Ctrl-C
(the parent decides when to stop) and exits when its stdin closes, so a parent that dies
leaves it to finish the chunk in hand and go.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

from evalcore.common.child_pipe import receive_message, send_message, start_child
from evalcore.metrics.base import Item
from evalcore.scoring.pass_report import MetricReport, ScoreReport
from evalcore.store import RunStore, written_parts

CHILD = "evalcore.scoring.stream_worker_child"


class WorkerGone(RuntimeError):
    """The child could not answer (it failed, or is gone)."""


def report_to_wire(report: ScoreReport) -> dict[str, Any]:
    """A pass's report as plain figures (MetricReport.to_dict per metric)."""
    return {"metrics": list(report.metrics), "skipped": dict(report.skipped), "errors": dict(report.errors),
            "by_metric": {name: m.to_dict() for name, m in report.by_metric.items()},
            "n_items": report.n_items, "n_values": report.n_values, "parts_written": report.parts_written}


def report_from_wire(run_id: str, wire: dict[str, Any]) -> ScoreReport:
    report = ScoreReport(run_id=run_id, metrics=wire["metrics"], skipped=wire["skipped"], errors=wire["errors"],
                         n_items=wire["n_items"], n_values=wire["n_values"], parts_written=wire["parts_written"])
    for name, figures in wire["by_metric"].items():
        report.by_metric.setdefault(name, MetricReport()).merge(figures)
    return report


class WorkerStream:
    """ChunkStream's interface (decide, score, close, release), answered by a child process."""

    def __init__(self, store: RunStore, run_id: str, metrics: list[str], groups: list[str], options: dict[str, Any]):
        self._run_id = run_id
        self._lock = threading.Lock()
        self._released = False
        self.proc = start_child(CHILD)  # it imports the metrics while this process starts asking
        try:
            send_message(self.proc.stdin, (str(store.root), run_id, metrics, groups, options))
        except OSError:
            pass  # reported by the first request

    def _ask(self, *request: Any) -> Any:
        with self._lock:
            try:
                send_message(self.proc.stdin, request)
                kind, payload = receive_message(self.proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                raise WorkerGone(f"scoring worker gone ({type(exc).__name__})") from None
        if kind != "ok":
            raise WorkerGone(f"scoring worker: {payload}")
        return payload

    def decide(self, first: list[Item]) -> str | None:
        return self._ask("decide", first)

    def score(self, chunk: list[Item]) -> None:
        written_parts.adopt(self._ask("score", chunk) or [])  # the parts it wrote, as written (store/written_parts.py)

    def close(self, have: frozenset[str], n_items: int) -> tuple[ScoreReport, dict[str, Any]] | None:
        closed = self._ask("close", have, n_items)
        if closed is None:
            return None
        wire, entry = closed
        return report_from_wire(self._run_id, wire), entry

    def release(self) -> None:
        """Let the child go: it exits at the end of its input, after the request in hand."""
        if self._released:
            return
        self._released = True
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        threading.Thread(target=self.proc.wait, name="evalcore-scoring-worker-reaper", daemon=True).start()
