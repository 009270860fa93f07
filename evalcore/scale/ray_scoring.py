"""`evalcore score RUN --engine ray`: the scoring pass as a Ray Data pipeline.

Why this shape (and what stays the local engine's):
* The driver does what decides *which* values exist: it resolves the run, publishes what an
  earlier pass left behind, selects metrics with the local `select_metrics`, and at the end
  publishes (compacts) the run and records the pass in the manifest, exactly as locally.
* Workers read the run's answers in blocks straight from the store's published responses
  (store/blocks.py: the store alone knows which file and format; local or s3://), never through
  the driver; the questions, which every block needs, are shipped once per worker.
* Blocks go through one fixed-size pool of scoring actors (map_batches), so what is slow to
  build is built once per actor: the embedding model (a GPU requested per actor when the
  cluster has GPUs and embedding metrics run), the judge client (behind one cluster-wide gate
  actor for concurrency and rate, with the shared judge cache). One pool, not one per metric
  kind: with chained pools on a small cluster Ray Data waited forever (2.60, 2 CPUs, three
  pools), and the blocks would cross the object store once per pool. The metric functions
  are the local ones, so values equal `--engine local` (tests/scale: 1e-9, embeddings 1e-6).
* Every actor writes its own part files (metrics, claims, context verdicts, judge calls)
  into the run, exactly as the local pass does per chunk; nothing is visible to readers until
  the driver publishes. A pass that dies keeps every finished block (the next writer
  publishes them); re-scoring replaces values, as locally.
* Composites (phase 2) read the values phase 1 published; they are cheap arithmetic and run
  on the driver with the local code.

Known limits (docs/scale.md): the driver holds the run's questions and reads the answers in
batches twice (to choose the metrics; for the composites); judge call counts can include
cache hits a local pass would have answered from its in-memory memo (values are the same).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from evalcore.errors import EvalcoreError
from evalcore.metrics.base import Item, MetricSpec, ScoringContext
from evalcore.scoring.queries import run_questions
from evalcore.store import query_df
from evalcore.scale.ray_pool import free_cpus, placement_deadline, size_pool
from evalcore.scale.ray_session import ray_session
from evalcore.schemas import EvalQuestion, EvalResponse
from evalcore.schemas.ids import STORED
from evalcore.scoring.chunk import in_chunks, run_has, score_chunk, write_chunk
from evalcore.scoring.engine import COMPOSITE, DEFAULT_CHUNK, metric_registry, select_metrics, stored_metric_values
from evalcore.scoring.pass_report import MetricReport, ScoreReport
from evalcore.scoring.pass_record import history_entry, pass_record, store_judge_calls
from evalcore.store import RunStore
from evalcore.store.blocks import PublishedTable, published_table

if TYPE_CHECKING:
    from evalcore.judges.tally import CallTally

DETERMINISTIC_BATCH = 2000   # rows per block for cheap metrics: one part file per table per block
EMBEDDING_BATCH = 512        # a few encode batches per block
JUDGE_BATCH = DEFAULT_CHUNK  # judge requests of a block are sent together (two rounds)
MAX_BLOCKS = 512             # beyond this, blocks simply hold several batches
KEEP_RESOURCES = ("embedder:", "bertscorer:")  # built once per actor; memos are per block


# ---- what a worker does with one block --------------------------------------------------------
class _Scorer:
    """The scoring actor: scores blocks of answers with the selected metrics exactly as the
    local pass scores a chunk, writes the rows as part files, returns a one-line summary.

    Built once per actor: the store handle, the parsed questions, the judge client (behind
    the cluster-wide gate) and, on first use, the embedding model; per block: a fresh
    ScoringContext, so memos do not grow over millions of answers."""

    def __init__(self, *, store_root: str, run_id: str, metric_names: list[str], options: dict[str, Any],
                 questions: dict[str, str], idf_questions: list[str], gate: Any = None,
                 have: list[str] | None = None):
        from evalcore.store.writer import RunWriter

        self.store = RunStore(store_root)
        self.run_id = run_id
        self.writer = RunWriter(run_id, self.store.run_dir(run_id))
        registry = metric_registry()
        self.specs = [registry[name] for name in metric_names]
        self.options = dict(options)
        self.questions = {qid: EvalQuestion.model_validate_json(raw, context=STORED) for qid, raw in questions.items()}
        # BERTScore's idf is over the whole pass's questions (ScoringContext.items), never a block
        self.pass_items: list[Item] = [(self.questions[qid], None) for qid in idf_questions]  # type: ignore[misc]
        self.have = frozenset(have) if have is not None else None  # the run's, from the driver's scan
        self.kept: dict[str, Any] = {}
        self.judge = None
        if any("judge" in s.needs for s in self.specs):
            from evalcore.judges import make_judge

            self.judge = make_judge(self.options.get("judge"), store=self.store,
                                    concurrency=self.options.get("judge_concurrency"))
            if gate is not None:
                from evalcore.scale.judge_gate import gate_factory

                self.judge.gate = gate_factory(gate)
            self.judge.preload()

    def _context(self) -> ScoringContext:
        options = dict(self.options)
        if self.judge is not None:
            options["judge"] = self.judge  # get_work accepts a built judge: one client per actor
        ctx = ScoringContext(run_id=self.run_id, store=self.store, options=options,
                             items=self.pass_items, have=self.have)
        ctx.adopt(self.kept)
        return ctx

    def _keep(self, ctx: ScoringContext) -> None:
        self.kept = ctx.kept(KEEP_RESOURCES)

    def items_of(self, records: Iterable[str]) -> list[Item]:
        items = []
        for raw in records:
            response = EvalResponse.model_validate_json(raw, context=STORED)
            question = self.questions.get(response.question_id)
            if question is not None:  # unmatched answers are counted (and skipped) by the driver
                items.append((question, response))
        return items

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        items = self.items_of(str(r) for r in batch["record"])
        return {"summary": np.array([json.dumps(self.score(items)) if items else ""], dtype=object)}

    def score(self, items: list[Item]) -> dict[str, Any]:
        """Score a block as the local pass scores its chunks; the block's summary for the driver."""
        ctx = self._context()
        from evalcore.judges.tally import CallTally

        summary: dict[str, Any] = {"metrics": {}, "errors": {}, "values": 0, "parts": 0}
        report = ScoreReport(run_id=self.run_id, metrics=[s.name for s in self.specs])
        tally = CallTally()  # the calls whose rows this block wrote
        judged = self.judge is not None
        for chunk in in_chunks(items, JUDGE_BATCH) if judged else [items]:
            rows = score_chunk(self.specs, chunk, ctx, report)
            if judged:
                calls = self.judge.drain_calls()
                if calls:
                    self.writer.write_judge_calls(calls)
                    tally.add(calls)
            if write_chunk(self.writer, rows):
                summary["parts"] += 1
            summary["values"] += len(rows.values)
        summary["tally"] = tally.to_wire()
        summary["errors"] = report.errors
        summary["metrics"] = {name: m.to_dict() for name, m in report.by_metric.items()}
        self._keep(ctx)
        return summary


# ---- the driver --------------------------------------------------------------------------------
def _responses_file(store: RunStore, run_id: str) -> PublishedTable:
    """The run's published answers, as published when this pass started."""
    answers = published_table(store, run_id, "responses")
    if answers is None:
        raise EvalcoreError(f"run {run_id} has no published answers to score")
    return answers


def block_rows(rows: int, actors: int, batch: int, judged: bool) -> int:
    """Rows per block: the metric kind's batch, smaller when the run is too small to give every
    actor two blocks (four for judged passes, whose blocks take long), so no actor idles while
    another works through one big block."""
    per_actor = 4 if judged else 2
    return max(1, min(batch, -(-rows // (per_actor * actors))))


# Ray Data (2.60) reads Parquet footers on a pool of FooterReader actors: 32 of them, unless this
# variable says otherwise when read_parquet is called (its file indexer reads it then, in the
# driver). A pass reads one file, the run's published answers: on a busy 2-CPU machine starting
# those actors for one footer made the example's Ray pass 7-20 s longer (30-33 s, was 40-52 s).
FOOTER_READERS_ENV = "RAY_DATA_PARQUET_FOOTER_NUM_ACTORS"


@contextmanager
def _one_footer_reader() -> Iterator[None]:
    """One FooterReader actor for the read built inside (a value the user set is kept)."""
    if FOOTER_READERS_ENV in os.environ:
        yield
        return
    os.environ[FOOTER_READERS_ENV] = "1"
    try:
        yield
    finally:
        os.environ.pop(FOOTER_READERS_ENV, None)


def _read_blocks(ray: Any, answers: PublishedTable, rows: int, batch: int, actors: int) -> Any:
    """A Ray dataset of the answers' records, read by the workers (local or s3://), in at
    least two blocks per actor: a run's published table is one file, which Ray reads as one
    block per row group, and one block would keep every actor but one idle."""
    with _one_footer_reader():
        ds = answers.ray_dataset(ray.data, num_cpus=READ_CPUS)
    blocks = max(1, min(-(-rows // batch), MAX_BLOCKS))
    return ds.repartition(blocks)


# Ray Data (2.60) leaves half of the cluster to reservations of its own: an actor pool asking
# for more than the other half never gets its blocks scheduled and the pass waits forever (seen
# here with two actors at 0.75 CPU on 2 CPUs). So the pool's CPU reservations add up to at most
# half the CPUs Ray reports free: one actor per CPU, each reserving half a CPU (it still uses a
# whole core when busy; the reservation is only Ray's bookkeeping), and fewer on small nodes,
# where Ray Data's own whole-CPU tasks must still find a node (scale/ray_pool.py).
ACTOR_CPUS = 0.5
READ_CPUS = 0.25


def pool_plan(nodes: float | list[float], gpus: int = 0, embeds: bool = False,
              workers: int | None = None) -> tuple[int, float]:
    """(scoring actors, CPUs reserved per actor) on `nodes` (the CPUs free on each node, or
    their total as one number): `workers` actors when given; one per GPU when embedding
    metrics run on a GPU cluster; else one per free CPU; fewer when Ray could not place them
    all and still run its own tasks (ray_pool.size_pool)."""
    free = nodes if isinstance(nodes, (int, float)) else sum(nodes)
    if workers:
        wanted = int(workers)
    elif embeds and gpus:
        wanted = gpus
    else:
        wanted = int(free)
    return size_pool(nodes, wanted, ACTOR_CPUS, keep_task_cpu=True, what="scoring actors", asked=bool(workers))


def _actor_resources(ray: Any, size: int, cpus: float, gpu: bool, judged: bool) -> dict[str, Any]:
    """The fixed-size actor pool and each actor's resources (a GPU for embedding models).
    A judged block takes seconds to minutes: an actor then takes one block at a time, so
    blocks queued behind a busy actor do not wait while another actor is idle."""
    pool = ray.data.ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=1 if judged else None)
    remote: dict[str, Any] = {"compute": pool, "num_cpus": cpus}
    return {**remote, "num_gpus": 1} if gpu else remote


def _merge_summaries(report: ScoreReport, summaries: Iterable[dict[str, Any]], tally: "CallTally") -> None:
    """Fold the blocks' summaries into the report, and their stored judge calls into `tally`."""
    for s in summaries:
        report.n_values += s["values"]
        report.parts_written += s["parts"]
        report.errors.update(s["errors"])
        for name, m in s["metrics"].items():
            report.by_metric.setdefault(name, MetricReport()).merge(m)
        tally.merge(s["tally"])


def score_run_ray(store: RunStore, run_ref: str, metrics: Iterable[str] | None = None,
                  groups: Iterable[str] | None = None, options: dict[str, Any] | None = None,
                  address: str | None = None, num_cpus: int | None = None, progress: bool = False,
                  workers: int | None = None, judge_per_minute: float | None = None) -> ScoreReport:
    """Compute and store metric values for every (question, method) of a run on Ray."""
    started = time.monotonic()
    from evalcore.judges.client import Judge
    from evalcore.metrics.options import check_options

    options = check_options(options or {})
    if isinstance(options.get("judge"), Judge):
        raise EvalcoreError("--engine ray takes the judge as a spec (e.g. anthropic:MODEL), not a built client")
    run_id = store.resolve(run_ref)
    writer = store.open_run(run_id)  # publishes what a pass that died left behind
    questions = {q.id: q for q in run_questions(store, run_id)}
    answers = _responses_file(store, run_id)
    scan = scan_answers(answers, questions)
    if not scan.n_items:
        raise EvalcoreError(f"run {run_id} has no answers to score")
    stored = query_df(store, "SELECT DISTINCT metric FROM metrics WHERE run_id = ?", [run_id], runs=[run_id])
    specs, skipped = select_metrics(metric_registry(), [], metrics, groups, options, set(stored["metric"]), have=scan.have)
    report = ScoreReport(run_id=run_id, metrics=[s.name for s in specs], skipped=skipped,
                         n_items=scan.n_items, unmatched_responses=scan.unmatched)
    phase1 = [s for s in specs if s.group != COMPOSITE]
    phase2 = [s for s in specs if s.group == COMPOSITE]
    wire_options = {k: v for k, v in options.items() if k != "progress"}
    wire_options["progress"] = False  # no per-block bars from the workers
    from evalcore.judges.tally import CallTally

    tally = CallTally()
    complete = False
    try:
        if phase1:
            with ray_session(address, num_cpus, progress) as ray:
                _phase1_on_ray(ray, store, run_id, answers, questions, scan, phase1, wire_options,
                               report, workers, judge_per_minute, tally)
        complete = True
    finally:
        # also when interrupted: finished blocks become visible, and the manifest records the
        # stored calls with that publish (scoring_record.py), never before it
        recorded = tally if options.get("judge_update_manifest", True) and tally.calls else None
        entry = history_entry(specs, {**options, "engine": "ray"}) if complete and specs and not phase2 else None
        writer.publish(record=pass_record(recorded, entry))
    if phase2:
        _phase2_local(store, writer, run_id, answers, questions, phase2, options, report, scan.have,
                      entry=history_entry(specs, {**options, "engine": "ray"}))
    report.seconds = time.monotonic() - started
    return report


def _phase1_on_ray(ray: Any, store: RunStore, run_id: str, answers: PublishedTable,
                   questions: dict[str, EvalQuestion], scan: "AnswerScan", specs: list[MetricSpec],
                   options: dict[str, Any], report: ScoreReport, workers: int | None,
                   judge_per_minute: float | None, tally: "CallTally") -> None:
    gpus = int(ray.available_resources().get("GPU", 0))
    embeds = any("embeddings" in s.needs for s in specs)
    judged = any("judge" in s.needs for s in specs)
    gate = None
    if judged and str(options.get("judge") or "") != "heuristic":
        from evalcore.scale.judge_gate import start_gate

        gate = start_gate(ray, int(options.get("judge_concurrency") or 16), judge_per_minute)
    question_json = {qid: questions[qid].model_dump_json() for qid in scan.question_ids}
    kwargs = {"store_root": str(store.root), "run_id": run_id, "metric_names": [s.name for s in specs],
              "options": options, "questions": question_json,
              "idf_questions": list(scan.question_ids) if embeds else [], "gate": gate, "have": sorted(scan.have)}
    size, actor_cpus = pool_plan(free_cpus(ray), gpus, embeds, workers)
    batch = block_rows(scan.n_items, size, JUDGE_BATCH if judged else EMBEDDING_BATCH if embeds else DETERMINISTIC_BATCH,
                       judged)
    with placement_deadline(ray, size, actor_cpus):  # a dataset keeps the settings it was built with
        ds = _read_blocks(ray, answers, scan.n_items, batch, size)
        ds = ds.map_batches(_Scorer, fn_constructor_kwargs=kwargs, batch_size=batch, batch_format="numpy",
                            **_actor_resources(ray, size, actor_cpus, gpu=embeds and gpus > 0, judged=judged))
        summaries = [json.loads(str(row["summary"])) for row in ds.iter_rows() if row["summary"]]
    _merge_summaries(report, summaries, tally)


def _phase2_local(store: RunStore, writer: Any, run_id: str, answers: PublishedTable,
                  questions: dict[str, EvalQuestion], specs: list[MetricSpec], options: dict[str, Any],
                  report: ScoreReport, have: set[str] | None = None, entry: dict[str, Any] | None = None) -> None:
    """Composites over the values just published, with the local engine's code, reading the
    answers again chunk by chunk (the driver never holds them all). The pass's history `entry`
    is recorded with the publish that ends it, if every chunk was stored."""
    ctx = ScoringContext(run_id=run_id, store=store, options=options,
                         have=frozenset(have) if have is not None else None,
                         stored_metrics=stored_metric_values(store, run_id))
    complete = False
    try:
        for chunk in iter_items(answers, questions, DEFAULT_CHUNK):
            rows = score_chunk(specs, chunk, ctx, report)
            if write_chunk(writer, rows):
                report.parts_written += 1
            report.n_values += len(rows.values)
        complete = True
    finally:
        store_judge_calls(ctx, writer)
        writer.publish(record=pass_record(None, entry if complete else None))


# ---- the driver reads the answers in batches, never all at once --------------------------------
SCAN_BATCH = 5000


@dataclass
class AnswerScan:
    """What the driver needs to know of the answers: what the run can meet (for metric
    selection), the questions that have answers (in first-seen order), and the counts."""

    have: set[str] = field(default_factory=set)
    question_ids: dict[str, None] = field(default_factory=dict)
    n_items: int = 0
    unmatched: int = 0


def iter_items(answers: PublishedTable, questions: dict[str, EvalQuestion], size: int) -> Iterator[list[Item]]:
    """(question, answer) pairs of the run's published answers, `size` at a time (answers
    whose question is not in the run are skipped: the scan counts them)."""
    for records in answers.records(size):
        chunk = []
        for raw in records:
            response = EvalResponse.model_validate_json(raw, context=STORED)
            question = questions.get(response.question_id)
            if question is not None:
                chunk.append((question, response))
        if chunk:
            yield chunk


def scan_answers(answers: PublishedTable, questions: dict[str, EvalQuestion]) -> AnswerScan:
    """One pass over the answers in batches, keeping only what metric selection needs (the
    local `run_has` per batch), so the driver's memory does not grow with the answers."""
    scan = AnswerScan()
    for chunk in iter_items(answers, questions, SCAN_BATCH):
        scan.have |= run_has(chunk)
        scan.n_items += len(chunk)
        for q, _ in chunk:
            scan.question_ids.setdefault(q.id)
    scan.unmatched = answers.rows - scan.n_items
    return scan
