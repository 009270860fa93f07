"""How many actors a Ray pass can ask for, from the CPUs the cluster has free node by node.

Why per node: on a cluster of small nodes the total says little. On three nodes of one CPU,
three scoring actors of half a CPU each fit, one per node, and then Ray Data's own tasks,
which take a whole CPU each (listing the files to read, repartitioning), fit on no node: the
pass waited forever with every actor alive and idle (Ray Data 2.60; `--workers 2` ran, since
one node kept its CPU). So a scoring pool is sized so that, however Ray spreads its actors, one
node keeps a whole CPU for those tasks; every pool reserves at most half the CPUs Ray reports
free (not its total: another job may hold the rest); and an actor that still cannot be placed
(the cluster changed meanwhile) is not waited for beyond `PLACEMENT_S`: the pass fails with one
line, or (asking) goes on with the actors that started.
"""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from evalcore.errors import EvalcoreError

log = logging.getLogger(__name__)

POOL_SHARE = 0.5      # of the CPUs Ray reports free, at most this share is reserved by a pool
TASK_CPUS = 1.0       # what one of Ray Data's own tasks reserves (its default: a whole CPU)
PLACEMENT_S = 120.0   # how long a pool's actors may take to be placed and started


def free_cpus(ray: Any) -> list[float]:
    """The CPUs Ray reports free on each live node now (one entry per node)."""
    try:
        from ray._private.state import available_resources_per_node  # Ray's DeveloperAPI

        per_node = [float(r.get("CPU", 0.0)) for r in available_resources_per_node().values()]
    except Exception:  # noqa: BLE001 - an older or newer Ray: the cluster's total, as one node
        per_node = []
    return per_node or [float(ray.available_resources().get("CPU", 0.0))]


def placeable(nodes: Sequence[float], per_actor: float, keep_task_cpu: bool) -> int:
    """The most actors of `per_actor` CPUs that fit on `nodes` wherever Ray puts them, and
    (`keep_task_cpu`) still leave one node with a whole CPU for a Ray Data task. A node keeps
    that CPU until it holds floor((free - 1) / per_actor) + 1 actors; one actor fewer than all
    nodes together can absorb leaves at least one such node."""
    fits = sum(math.floor(c / per_actor + 1e-9) for c in nodes)
    if not keep_task_cpu:
        return fits
    absorb = sum(math.floor((c - TASK_CPUS) / per_actor + 1e-9) + 1 for c in nodes if c >= TASK_CPUS)
    return max(0, min(fits, absorb - 1))


def size_pool(nodes: float | Sequence[float], wanted: int, most_per_actor: float, *, keep_task_cpu: bool,
              what: str, asked: bool = False) -> tuple[int, float]:
    """(actors, CPUs reserved per actor) for a pool of `wanted` actors on `nodes` (free CPUs per
    node; a number is one node). Each actor reserves at most `most_per_actor`, the pool at most
    POOL_SHARE of the free CPUs; a pool that Ray could not place whole is made smaller (with a
    warning when the user `asked` for that many), and none at all is one line."""
    nodes = [float(nodes)] if isinstance(nodes, (int, float)) else [float(c) for c in nodes]
    free = sum(nodes)
    wanted = max(1, int(wanted))
    per_actor = min(most_per_actor, max(0.01, free * POOL_SHARE / wanted))
    size = min(wanted, placeable(nodes, per_actor, keep_task_cpu))
    if size < 1:
        beside = ", and Ray Data's own tasks need a whole CPU of one node beside them" if keep_task_cpu else ""
        raise EvalcoreError(f"the Ray cluster has no room for {what}: it reports {free:g} CPUs free on "
                            f"{len(nodes)} node(s){beside}; free some CPUs or add a node")
    if size < wanted and asked:
        log.warning("%d %s would not all fit on the Ray cluster's %d node(s) (%g CPUs free) with room left "
                    "for Ray Data's own tasks: using %d", wanted, what, len(nodes), free, size)
    return size, per_actor


@contextmanager
def placement_deadline(ray: Any, actors: int, per_actor: float) -> Iterator[None]:
    """Run a Ray Data pass whose actor pool must be placed and started within PLACEMENT_S (Ray
    Data's own default is to wait for ever); past it, one line saying what did not fit."""
    context = ray.data.DataContext.get_current()
    before = context.wait_for_min_actors_s
    context.wait_for_min_actors_s = int(PLACEMENT_S)
    try:
        yield
    except Exception as exc:
        if "Timed out while starting actors" not in str(exc):
            raise
        raise EvalcoreError(f"the Ray cluster did not start {actors} scoring actors of {per_actor:g} CPU within "
                            f"{PLACEMENT_S:.0f} s (it reports {sum(free_cpus(ray)):g} CPUs free now); pass "
                            "--workers with fewer, or free the cluster") from None
    finally:
        context.wait_for_min_actors_s = before
