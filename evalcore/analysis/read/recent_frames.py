"""A few recently built frames kept per process, keyed by the store's state token.

Why: at 100,000 questions per system some per-answer frames take about a second to build,
and a page reads the same one several times in one visit (Charts' answer classes and its
diagnosis; Annotate's estimate and its next draw). The store's state token changes whenever
anything a reader sees changes, so a kept frame is never stale; every caller gets its own copy,
so nobody can change what the next caller reads."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

import pandas as pd

from evalcore.store import RunStore


class RecentFrames:
    """The last `size` frames built by one function, least recently used dropped first.
    `copy`: how a caller's copy is made (a value nobody can change, such as a tuple of frozen
    records, needs none). `runs_only`: the frame reads runs and no annotation, so it is keyed by
    the runs' half of the state (RunStore.state_parts) and outlives a label being saved."""

    def __init__(self, size: int = 4, copy: Callable[[Any], Any] = lambda frame: frame.copy(),
                 runs_only: bool = False) -> None:
        self._size = size
        self._runs_only = runs_only
        self._copy = copy
        self._frames: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: RunStore, key: Hashable, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """The frame for (store, its current state, key): kept, or built now by `build()`."""
        state = store.state_parts()[0] if self._runs_only else store.state_token()
        memo = (str(store.root), state, key)
        with self._lock:
            if memo in self._frames:
                self._frames.move_to_end(memo)
                return self._copy(self._frames[memo])
        out = build()
        with self._lock:
            self._frames[memo] = out
            while len(self._frames) > self._size:
                self._frames.popitem(last=False)
        return self._copy(out)

    def clear(self) -> None:
        with self._lock:
            self._frames.clear()
