"""The embedding service every vector-using metric goes through.

    from evalcore.embeddings import get_embedder
    emb = get_embedder()                      # packaged all-MiniLM-L6-v2, offline
    emb = get_embedder("path/to/model", store)  # any sentence-transformers folder or cached HF name
    emb = get_embedder("text-embedding-3-small@https://api.openai.com/v1", store)
    vectors = emb.encode(["a", "b"])          # float32, L2-normalised rows, shape (n, dim)

With a store, vectors are cached in the store's area for them (`RunStore.shared_cache`:
`<store>/_shared/embeddings/`) by (model, text hash),
so re-scoring, or scoring another method against the same ground truths, encodes nothing twice.
Embedders are shared per (model, store) and loaded models per model within a process, so every
metric sees one loaded model and one in-memory cache (`reset_embedders()` forgets them).
"""

from __future__ import annotations

from typing import Any

from evalcore.embeddings.embedder import Embedder, SentenceTransformerBackend, l2_normalise
from evalcore.embeddings.models import (
    DEFAULT_MODEL_ID,
    ModelRef,
    ModelUnavailableError,
    resolve_model,
)

__all__ = ["DEFAULT_MODEL_ID", "Embedder", "ModelRef", "ModelUnavailableError", "get_embedder",
           "l2_normalise", "reset_embedders", "resolve_model", "cache_area"]

_EMBEDDERS: dict[tuple[str, str | None], Embedder] = {}
_BACKENDS: dict[str, Any] = {}  # model id -> backend: one loaded model per process, whatever the store


def cache_area(store: Any) -> Any:
    """The store's area for embedding caches (a store/shared_cache.SharedCache), or None without
    a store (memory only). For a store on object storage it is a folder on this machine: the
    caches' part files and merge lock need a local file system."""
    return store.shared_cache("embeddings", local=True) if store is not None else None


def get_embedder(model: str | None = None, store: Any = None) -> Embedder:
    """The Embedder for `model` (None = packaged all-MiniLM-L6-v2), cached in `store` if given.

    Raises ModelUnavailableError (an EvalcoreError) at once when a local model cannot be found;
    weights load lazily, on the first text that is not in the cache.
    """
    # imported here: it brings httpx (~70 ms), which only a remote embedding model needs
    from evalcore.embeddings.openai_compat import OpenAICompatibleBackend, parse_model_at_url

    area = cache_area(store)
    endpoint = parse_model_at_url(model.strip()) if isinstance(model, str) else None
    if endpoint is not None:
        backend: Any = OpenAICompatibleBackend(*endpoint)
    else:
        backend = SentenceTransformerBackend(resolve_model(model))
    backend = _BACKENDS.setdefault(backend.model_id, backend)
    key = (backend.model_id, str(area.location) if area is not None else None)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = Embedder(backend, cache_area=area)
    return _EMBEDDERS[key]


def warm_up(model: str | None = None, store: Any = None, in_child: bool = False) -> None:
    """Load a local model's weights now (one short forward pass, nothing cached), so that a
    scoring pass can do it in the background while judge calls are in flight. A remote
    embedding endpoint needs no loading: nothing is sent.

    `in_child`: load it in a child process when this one has not imported torch yet (see
    worker.py), so that the loading does not compete with this process's own work; the
    model's vectors are the same either way."""
    embedder = get_embedder(model, store)
    if getattr(embedder.backend, "source", "") == "sentence-transformers":
        if not (in_child and embedder.backend.start_worker()):
            embedder.backend.embed(["warm-up"])


def reset_embedders(keep_models: bool = False) -> None:
    """Forget the per-process embedders' in-memory caches (and their loaded models unless
    `keep_models`), so the next encode sees only what the store's cache holds."""
    _EMBEDDERS.clear()
    if not keep_models:
        for backend in _BACKENDS.values():
            getattr(backend, "close_worker", lambda: None)()
        _BACKENDS.clear()
