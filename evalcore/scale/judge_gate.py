"""One judge concurrency and rate limit for a whole Ray cluster.

Each worker has its own judge client (and its own local semaphore); without a shared limit
N workers would keep N x judge_concurrency requests in flight and trip the provider's rate
limit, whose retries then cost more wall time than they save. The gate is one named async
Ray actor: a request holds one of its `slots` while in flight, and with `per_minute` set no
more than that many requests start in any 60 s window (evenly spaced starts). Cache hits do
not pass through it (the judge client calls the gate around HTTP requests only).

A worker that dies holding a slot would leak it, so a slot is a lease: it is given back
after `lease_seconds` even when its holder never releases it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any, AsyncIterator

DEFAULT_LEASE_SECONDS = 600.0


class _GateState:
    """The gate's logic without Ray (tested directly): slots with leases, spaced starts."""

    def __init__(self, slots: int, per_minute: float | None = None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS):
        if slots < 1:
            raise ValueError("a judge gate needs at least one slot")
        self.slots = int(slots)
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.lease_seconds = lease_seconds
        self.held: dict[str, float] = {}  # lease id -> expiry (monotonic)
        self.next_start = 0.0
        self.most_held = 0
        self.granted = 0
        self._changed = asyncio.Condition()

    def _expire(self, now: float) -> None:
        for lease, expiry in list(self.held.items()):
            if expiry <= now:
                del self.held[lease]

    async def acquire(self) -> str:
        async with self._changed:
            while True:
                now = time.monotonic()
                self._expire(now)
                if len(self.held) < self.slots:
                    break
                soonest = min(self.held.values()) - now
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=max(0.01, soonest))
            lease = uuid.uuid4().hex
            start = max(now, self.next_start)
            self.next_start = start + self.interval
            self.held[lease] = start + self.lease_seconds
            self.most_held = max(self.most_held, len(self.held))
            self.granted += 1
        if start > now:  # spaced start: wait outside the lock, holding the slot
            await asyncio.sleep(start - now)
        return lease

    async def release(self, lease: str) -> None:
        async with self._changed:
            self.held.pop(lease, None)
            self._changed.notify_all()

    def stats(self) -> dict[str, Any]:
        return {"slots": self.slots, "held": len(self.held), "most_held": self.most_held,
                "granted": self.granted, "interval_s": self.interval}


class JudgeGateActor:
    """The Ray actor around _GateState (wrapped by ray.remote in `start_gate`)."""

    def __init__(self, slots: int, per_minute: float | None = None,
                 lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.state = _GateState(slots, per_minute, lease_seconds)

    async def acquire(self) -> str:
        return await self.state.acquire()

    async def release(self, lease: str) -> None:
        await self.state.release(lease)

    def stats(self) -> dict[str, Any]:
        return self.state.stats()


def start_gate(ray: Any, slots: int, per_minute: float | None = None) -> Any:
    """Start the gate actor for one scoring pass (anonymous: two passes never share one)."""
    actor = ray.remote(num_cpus=0, max_concurrency=10_000)(JudgeGateActor)
    return actor.remote(slots, per_minute)


def gate_factory(handle: Any):
    """What a worker installs as `judge.gate`: an async context manager holding one slot."""

    @contextlib.asynccontextmanager
    async def hold() -> AsyncIterator[None]:
        lease = await handle.acquire.remote()
        try:
            yield
        finally:
            handle.release.remote(lease)  # fire and forget: the lease expires if this is lost

    return hold
