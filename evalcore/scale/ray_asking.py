"""`evalcore run --engine ray`: the asking phase of a live run spread over Ray actors.

Why this shape (and what stays the local engine's):
* The driver does everything that decides *which* answers exist: it creates or resumes the
  run, writes its questions, and plans the missing (question, method) jobs with the local
  `plan_jobs` against the answers already stored. Each job is put into exactly one shard
  (round-robin over the question-major plan, so every shard still interleaves methods), so
  no answer is asked twice by this pass; a resumed run re-plans only what is missing.
* Each shard goes to one plain Ray actor (not Ray Data: asking is a single pass over a list,
  and plain actors can be cancelled task by task) running the local asking loop
  (`evalcore.runner.engine.ask_jobs`) with its own target clients. The run's `--concurrency`
  is split between the actors (sizes differ by at most one and add up to it exactly), so the
  target never sees more requests in flight from the whole cluster than from one local run.
* Every actor writes its answers as part files through its own RunWriter on the run's
  folder, batch by batch as locally (a killed actor loses at most its unwritten batch);
  nothing is visible to readers until the driver publishes, which it does every few seconds
  while the actors ask (as a local live run does) and once at the end, whatever the outcome.
* Ctrl-C on the driver cancels the actors' tasks (the asking loop flushes its buffer on
  cancellation), waits a moment for them, kills the actors, and lets the runner publish and
  mark the run `cancelled`. An actor that dies does not stop the others: they finish their
  shards, then the pass fails naming it, and `--resume` asks only what is still missing.

Known limits (docs/scale.md): shards are fixed when the pass starts (a slow actor is not
helped by idle ones); target headers given as ${ENV_NAME} are resolved in each worker's own
environment (the same on a local instance, the cluster's on a remote one).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable

from evalcore.runner.config import EvalConfig
from evalcore.errors import EvalcoreError
from evalcore.runner.engine import AskStats, Job, ResponseSink, ask_jobs, target_clients
from evalcore.runner.progress import RunProgress
from evalcore.scale.ray_pool import PLACEMENT_S, free_cpus, size_pool
from evalcore.scale.ray_session import ray_session
from evalcore.schemas import EvalResponse
from evalcore.store import RunStore

# Asking is I/O-bound: an actor reserves a quarter of a CPU, and the actors together at most
# half the CPUs Ray reports free (a scoring pass in the same cluster must still get its pool).
ASKER_CPUS = 0.25
POLL_S = 0.5         # how often the driver collects the actors' counts
CANCEL_GRACE_S = 10.0  # how long a cancelled actor gets to flush its buffer before it is killed


def asker_plan(nodes: float | list[float], concurrency: int, n_jobs: int,
               workers: int | None = None) -> tuple[list[int], float]:
    """(lanes per actor, CPUs reserved per actor) on `nodes` (the CPUs free on each node, or
    their total as one number). One actor per free CPU (or `workers`), never more actors than
    requests allowed in flight, jobs to ask, or Ray can place; the lanes add up to `concurrency`."""
    free = nodes if isinstance(nodes, (int, float)) else sum(nodes)
    wanted = max(1, min(int(workers) if workers else int(free), concurrency, n_jobs))
    size, cpus = size_pool(nodes, wanted, ASKER_CPUS, keep_task_cpu=False, what="asking actors",
                           asked=bool(workers))
    base, extra = divmod(concurrency, size)
    return [base + (1 if i < extra else 0) for i in range(size)], cpus


def shard_jobs(jobs: list[Job], n: int) -> list[list[Job]]:
    """Every job in exactly one of `n` shards, round-robin (each keeps the question-major order)."""
    return [jobs[i::n] for i in range(n)]


class _CountingSink(ResponseSink):
    """The local sink, also counting what was asked (for the driver's progress and counts)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.asked = 0
        self.errors: Counter = Counter()

    def add(self, response: EvalResponse) -> bool:
        self.asked += 1  # called from the actor's event loop only
        if response.error_kind:
            self.errors[response.error_kind] += 1
        return super().add(response)


class _Asker:
    """The asking actor (async): runs the local asking loop over its shard with `lanes`
    requests in flight, writing part files into the run. Wrapped by ray.remote in `_start`."""

    def __init__(self, store_root: str, run_id: str, config: EvalConfig, lanes: int):
        from evalcore.store.writer import RunWriter

        store = RunStore(store_root)
        self.writer = RunWriter(run_id, store.run_dir(run_id))
        self.config = config.model_copy(update={"concurrency": lanes, "progress": False})
        self.sink = _CountingSink(self.writer, self.config.batch_size)

    async def ask(self, jobs: list[Job]) -> dict[str, Any]:
        clients = target_clients(self.config)
        try:
            stats = await ask_jobs(jobs, clients, self.config, self.sink, show_progress=False)
        finally:
            for client in clients.values():
                await client.aclose()
        return {"asked": stats.asked, "written": stats.written, "errors": dict(stats.errors),
                "seconds": stats.seconds}

    async def progress(self) -> dict[str, Any]:
        return {"asked": self.sink.asked, "written": self.sink.written, "errors": dict(self.sink.errors)}


def _start(ray: Any, store: RunStore, run_id: str, config: EvalConfig, lanes: list[int],
           cpus: float) -> list[Any]:
    # The config (headers included) travels through the object store, never in a task spec or
    # a runtime_env, which Ray keeps in its control store.
    config_ref = ray.put(config)
    actor = ray.remote(num_cpus=cpus, max_restarts=0, max_task_retries=0)(_Asker)
    return [actor.remote(str(store.root), run_id, config_ref, n) for n in lanes]


def _started(ray: Any, actors: list[Any], cpus: float) -> list[Any]:
    """The actors placed and started within PLACEMENT_S; the others are killed, never waited
    for (their shares of the jobs go to the started ones; each keeps its own lanes, so fewer
    requests are in flight, never more). None started: one line."""
    probes = {actor.progress.remote(): actor for actor in actors}
    ready, _ = ray.wait(list(probes), num_returns=len(probes), timeout=PLACEMENT_S)
    started = []
    for probe in ready:
        try:
            ray.get(probe)
            started.append(probes[probe])
        except Exception:  # noqa: BLE001 - an actor whose start failed: left out like an unplaced one
            continue
    for actor in actors:
        if actor not in started:
            ray.kill(actor)
    if not started:
        raise EvalcoreError(f"the Ray cluster did not start any of {len(actors)} asking actors of {cpus:g} CPU "
                            f"within {PLACEMENT_S:.0f} s (it reports {sum(free_cpus(ray)):g} CPUs free now)")
    return started


def _poll(ray: Any, actors: list[Any]) -> list[dict[str, Any]]:
    """Each live actor's counts so far (a dead actor counts nothing here; its task reports it)."""
    out = []
    for actor in actors:
        try:
            out.append(ray.get(actor.progress.remote(), timeout=POLL_S * 4))
        except Exception:  # noqa: BLE001 - a dead or busy actor: its result ref says why
            continue
    return out


def _stop(ray: Any, refs: list[Any]) -> None:
    """Cancel the actors' tasks and give them a moment to flush their buffers."""
    for ref in refs:
        try:
            ray.cancel(ref)
        except Exception:  # noqa: BLE001 - already finished or gone
            pass
    try:
        ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)
    except Exception:  # noqa: BLE001
        pass


def ask_on_ray(config: EvalConfig, store: RunStore, run_id: str, jobs: list[Job],
               on_written: Callable[[int], None] | None = None, address: str | None = None,
               workers: int | None = None) -> AskStats:
    """Ask every job once on Ray actors, answers written as part files into the run (the caller
    publishes). `on_written(n)` is called on the driver as the written count grows."""
    stats = AskStats()
    if not jobs:
        return stats
    started = time.perf_counter()
    with ray_session(address) as ray:
        lanes, cpus = asker_plan(free_cpus(ray), config.concurrency, len(jobs), workers)
        actors = _started(ray, _start(ray, store, run_id, config, lanes, cpus), cpus)
        refs = [a.ask.remote(ray.put(shard)) for a, shard in zip(actors, shard_jobs(jobs, len(actors)))]
        try:
            results = _drive(ray, actors, refs, len(jobs), config.progress, on_written)
        except BaseException:
            _stop(ray, refs)
            raise
        finally:
            for actor in actors:
                ray.kill(actor)
    failures = [r for r in results if isinstance(r, BaseException)]
    for r in results:
        if isinstance(r, dict):
            stats.asked += r["asked"]
            stats.written += r["written"]
            stats.errors.update(r["errors"])
    stats.seconds = time.perf_counter() - started
    if failures:
        first = str(failures[0]).strip().splitlines()
        raise EvalcoreError(f"{len(failures)} of {len(refs)} asking actors failed ({first[-1] if first else '?'}); "
                            f"the {stats.written} answers the others wrote are kept: continue with --resume")
    return stats


def _drive(ray: Any, actors: list[Any], refs: list[Any], total: int, show_progress: bool,
           on_written: Callable[[int], None] | None) -> list[Any]:
    """Wait for every shard, reporting progress; each shard's result dict or its exception."""
    pending = list(refs)
    asked = written = 0
    with RunProgress(total, "asking (ray)", enabled=show_progress) as bar:
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_S)
            counts = _poll(ray, actors)
            now_asked = sum(c["asked"] for c in counts)
            now_written = sum(c["written"] for c in counts)
            if now_asked > asked:
                bar.advance(sum(sum(c["errors"].values()) for c in counts), n=now_asked - asked)
                asked = now_asked
            if now_written > written and on_written is not None:
                written = now_written
                on_written(written)
    results: list[Any] = []
    for ref in refs:
        try:
            results.append(ray.get(ref))
        except Exception as exc:  # noqa: BLE001 - an actor that died; the others' answers are kept
            results.append(exc)
    return results
