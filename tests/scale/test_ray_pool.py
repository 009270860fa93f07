"""Ray pools sized from what the cluster has free, node by node, and never waited on for ever
(issue 34, item 10a; evalcore/scale/ray_pool.py).

On three nodes of one CPU the default scoring pool (one actor per CPU, half a CPU each) took a
piece of every node, and Ray Data's own whole-CPU tasks (listing the file to read) then fitted
nowhere: the pass waited for ever. The cluster test itself is in
tests/reliability/test_ray_nodes.py (it reuses that module's three-node cluster); here the
sizing rule, which needs no cluster, and the deadline on actors that cannot be placed.
"""

from __future__ import annotations

import pytest

from evalcore.errors import EvalcoreError
from evalcore.scale import ray_asking, ray_pool
from evalcore.scale.ray_scoring import pool_plan


def _leaves_a_task_cpu(nodes: list[float], actors: int, per_actor: float) -> bool:
    """Whether every way of spreading `actors` over `nodes` leaves one node a whole CPU
    (brute force over the placements, for the small cases below)."""
    from itertools import product

    for placement in product(range(len(nodes)), repeat=actors):
        left = list(nodes)
        for node in placement:
            left[node] -= per_actor
        if min(left) < -1e-9:
            continue  # Ray would not place it so
        if max(left) < ray_pool.TASK_CPUS - 1e-9:
            return False
    return True


@pytest.mark.parametrize("nodes", [[1.0, 1.0, 1.0], [2.0], [1.0, 1.0], [4.0], [2.0, 2.0], [1.5, 1.0, 1.0],
                                   [3.0, 0.5]])
def test_the_scoring_pool_leaves_room_for_ray_datas_tasks_and_reserves_at_most_half(nodes):
    for workers in (None, 3, 5):
        size, per_actor = pool_plan(nodes, workers=workers)
        assert size >= 1 and size * per_actor <= sum(nodes) * ray_pool.POOL_SHARE + 1e-9
        assert _leaves_a_task_cpu(nodes, size, per_actor), (nodes, workers, size, per_actor)
    assert pool_plan([1.0, 1.0, 1.0]) == (2, 0.5)  # the three small nodes: two actors, not three
    assert pool_plan([2.0]) == (2, 0.5)  # the CI machine: as before


def test_a_cluster_without_room_is_one_line_and_a_smaller_pool_is_said():
    with pytest.raises(EvalcoreError, match=r"no room for scoring actors: it reports 1 CPUs free on 1 node"):
        pool_plan([1.0])
    assert ray_asking.asker_plan([1.0], concurrency=4, n_jobs=10) == ([4], 0.25)  # asking runs no Ray Data task


def test_the_pool_is_sized_from_the_cpus_ray_reports_free(monkeypatch):
    class FakeRay:
        @staticmethod
        def available_resources():
            return {"CPU": 3.0}

    import ray._private.state as state

    monkeypatch.setattr(state, "available_resources_per_node", lambda: {"a": {"CPU": 1.0}, "b": {"CPU": 0.0},
                                                                         "c": {"CPU": 2.0}})
    assert sorted(ray_pool.free_cpus(FakeRay)) == [0.0, 1.0, 2.0]
    monkeypatch.setattr(state, "available_resources_per_node", lambda: {})
    assert ray_pool.free_cpus(FakeRay) == [3.0]


def test_asking_actors_that_cannot_be_placed_are_not_waited_for(ray_local, monkeypatch, tmp_path):
    """Asking actors asking for more CPUs than any node has: not waited on beyond the placement
    deadline, one line, and nothing asked (the asking loop used to wait on them for ever)."""
    from evalcore.runner.config import EvalConfig
    from evalcore.runner.engine import plan_jobs
    from evalcore.schemas import EvalQuestion
    from evalcore.store import RunStore

    monkeypatch.setattr(ray_asking, "PLACEMENT_S", 3.0)  # a deadline, not a measurement
    monkeypatch.setattr(ray_asking, "asker_plan", lambda *args, **kwargs: ([1], 64.0))  # no node has 64 CPUs
    config = EvalConfig(target="http://127.0.0.1:9", dataset=str(tmp_path / "q.jsonl"), score=False, progress=False)
    jobs = plan_jobs([EvalQuestion(id="q1", question="q?")], config.methods, set())
    with pytest.raises(EvalcoreError, match=r"did not start any of 1 asking actors of 64 CPU within 3 s"):
        ray_asking.ask_on_ray(config, RunStore(tmp_path / "runs"), "r", jobs)


class _Pool:
    """Ray as `_started` sees it: which actors' first call answered in time, and which were killed."""

    def __init__(self, answering: set[str]):
        self.answering, self.killed = answering, []

    def wait(self, refs, num_returns, timeout):
        ready = [r for r in refs if r.split(":")[0] in self.answering]
        return ready, [r for r in refs if r not in ready]

    def get(self, ref):
        return {}

    def kill(self, actor):
        self.killed.append(actor.name)


class _Actor:
    def __init__(self, name: str):
        self.name = name
        self.progress = type("Method", (), {"remote": staticmethod(lambda: f"{name}:probe")})


def test_the_asking_pool_shrinks_to_the_actors_that_started(monkeypatch):
    monkeypatch.setattr(ray_asking, "free_cpus", lambda ray: [1.0])
    actors = [_Actor("a"), _Actor("b"), _Actor("c")]
    pool = _Pool({"a", "c"})
    assert [a.name for a in ray_asking._started(pool, actors, 0.25)] == ["a", "c"]
    assert pool.killed == ["b"]  # never waited on again; its share of the jobs goes to the others


def test_a_scoring_pool_that_cannot_be_placed_fails_in_one_line(ray_local, monkeypatch, tmp_path):
    from evalcore.cli.main import app
    from evalcore.scale import ray_scoring
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["--store", str(tmp_path / "runs"), "import", "--example"])
    run_id = res.stdout.strip().splitlines()[-1]
    monkeypatch.setattr(ray_pool, "PLACEMENT_S", 5.0)  # a deadline, not a measurement
    monkeypatch.setattr(ray_scoring, "pool_plan", lambda *args, **kwargs: (1, 64.0))  # no node has 64 CPUs
    from evalcore.store import RunStore

    with pytest.raises(EvalcoreError, match=r"did not start 1 scoring actors of 64 CPU within 5 s") as failed:
        ray_scoring.score_run_ray(RunStore(tmp_path / "runs"), run_id, metrics=["token_f1"])
    assert "\n" not in str(failed.value)
