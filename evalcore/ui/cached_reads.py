"""How pages read: every number comes from an evalcore.analysis function, memoised with
st.cache_data under the store's state token.

Why this and nothing more: the analysis layer computes every number the CLI prints too, so the
app and the CLI agree by construction; the store's state token (RunStore.state_token) changes
whenever anything readers can see changes, so a cached result is never stale, and a new run
or annotation shows on the next render. No cache files, no background builds, no SQL here.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from evalcore.store import RunStore


def store() -> RunStore:
    """The store named by EVALCORE_STORE (set by `evalcore app`), else ./runs."""
    return RunStore()


@st.cache_data(show_spinner=False, max_entries=1024)
def _call(_fn: Callable[..., Any], name: str, root: str, token: str, args: tuple, kwargs: tuple) -> Any:
    """`_fn` is called as given (Streamlit hashes no argument whose name starts with "_"); its
    full name keys the cache instead, so two functions never share an entry."""
    return _fn(RunStore(root), *args, **dict(kwargs))


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(store, *args, **kwargs) for an analysis function, cached per store state. Arguments
    must be hashable values (str, numbers, tuples, frozen dataclasses)."""
    s = store()
    if not fn.__module__.startswith("evalcore.analysis."):
        raise ValueError(f"pages read through evalcore.analysis, not {fn.__module__}")
    return _call(fn, f"{fn.__module__}.{fn.__qualname__}", str(s.root.resolve()), s.state_token(), args,
                 tuple(sorted(kwargs.items())))


def clear() -> None:
    """Forget every cached result (tests; a store replaced underneath the app)."""
    _call.clear()
