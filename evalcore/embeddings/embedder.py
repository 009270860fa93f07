"""The Embedder: one entry point for sentence vectors, whatever computes them.

Why it exists: semantic metrics, heuristic judges and anything else that needs vectors should
encode each distinct text once per model, ever. `encode` therefore
1. hashes every text (sha256 of the exact string) and deduplicates within the call,
2. looks the hashes up in memory, then in the store's cache (other runs, other processes),
3. encodes only what is left, longest first in chunks (similar lengths share a padded batch,
   so little compute is wasted on padding), with a progress bar for big jobs,
4. writes the new vectors as one part file and returns rows in input order, L2-normalised.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from evalcore.embeddings.cache import ArrayCache, namespace, text_key
from evalcore.embeddings.models import LOAD_LOCK, ModelRef, load_sentence_transformer, read_config
from evalcore.embeddings.tokens import get_token_encoder
from evalcore.errors import EvalcoreError

PROGRESS_MIN_TEXTS = 256  # below this a progress bar is noise


class Backend(Protocol):
    model_id: str
    source: str

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def describe(self) -> str: ...


class SentenceTransformerBackend:
    """A sentence-transformers model, loaded on first use (a fully cached re-score never loads it).

    For the common mean-pooling models (the default MiniLM among them) the sentence vector is
    the mean of the last layer's token vectors, so it is taken from the shared TokenEncoder:
    BERTScore on the same model then reuses that forward pass instead of running its own.
    Texts the shortcut cannot reproduce exactly (longer than the model's max_seq_length, or
    with surrounding whitespace) go through sentence-transformers itself.

    One backend is shared by every thread of a process (a scoring pass warms it up in a
    background thread): `embed` runs one call at a time and the model loads once.
    """

    source = "sentence-transformers"

    def __init__(self, ref: ModelRef, batch_size: int = 32):
        self.ref = ref
        self.model_id = ref.model_id
        self.batch_size = batch_size
        self._model: Any = None
        self._plan: tuple[int, int] | None | bool = False  # False = not inspected yet
        self._worker: Any = None  # an EmbeddingWorker loading/holding the model in a child process
        self._lock = threading.RLock()

    def describe(self) -> str:
        return self.ref.describe()

    @property
    def model(self) -> Any:
        if self._model is None:
            with LOAD_LOCK:
                if self._model is None:
                    self._model = load_sentence_transformer(self.ref)
        return self._model

    def _st_encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                    normalize_embeddings=False, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def _loaded_here(self) -> bool:
        if self._plan is False:
            self._plan = mean_pooling_plan(self.ref)
        return self._model is not None or bool(self._plan and get_token_encoder(self.ref, self._plan[0]).loaded)

    def start_worker(self) -> bool:
        """Load the model in a child process (worker.py) instead of here, when this process has
        not imported torch yet: the 4-5 s of importing and loading then run on another core.
        False (nothing started) when the model or torch is already here: loading here is quicker."""
        if self._worker is None and not self._loaded_here() and "torch" not in sys.modules:
            from evalcore.embeddings.worker import EmbeddingWorker

            self._worker = EmbeddingWorker(self.ref)
        return self._worker is not None

    def close_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._worker is not None and not self._loaded_here():
            from evalcore.embeddings.worker import WorkerError

            try:
                return self._worker.embed(texts)
            except WorkerError:  # e.g. the model cannot load: the in-process path raises the real error
                self.close_worker()
        self.close_worker()  # loaded here meanwhile (e.g. BERTScore): one copy is enough
        if self._plan is False:
            self._plan = mean_pooling_plan(self.ref)
        if not self._plan:
            return self._st_encode(texts)
        layers, max_seq = self._plan
        encoder = get_token_encoder(self.ref, layers)
        lengths = [len(ids) for ids in encoder.ids(texts)]
        shared = [i for i, t in enumerate(texts) if t and t == t.strip() and lengths[i] <= max_seq]
        states = encoder.states([texts[i] for i in shared])
        rest = sorted(set(range(len(texts))) - set(shared))
        first = states[texts[shared[0]]].mean if shared else None
        dim = first.shape[0] if first is not None else None
        rest_vectors = self._st_encode([texts[i] for i in rest]) if rest else None
        dim = dim if dim is not None else rest_vectors.shape[1]
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i in shared:
            out[i] = states[texts[i]].mean
        if rest_vectors is not None:
            out[rest] = rest_vectors
        return out


def mean_pooling_plan(ref: ModelRef) -> tuple[int, int] | None:
    """(layers, max_seq_length) when the folder is Transformer + mean Pooling [+ Normalize], which
    our own forward pass reproduces exactly; None otherwise (use sentence-transformers as is)."""
    if ref.source not in {"packaged", "local"}:
        return None
    folder = Path(ref.location)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) \
                or modules[0].get("path", "") not in ("", "."):
            return None
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        modes = {k: v for k, v in pooling.items() if k.startswith("pooling_mode")}
        if modes.get("pooling_mode_mean_tokens") is not True or any(v for k, v in modes.items()
                                                                    if k != "pooling_mode_mean_tokens"):
            return None
        st_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        if st_config.get("do_lower_case"):
            return None
        max_seq = int(st_config["max_seq_length"])
        layers = int(read_config(ref)["num_hidden_layers"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, EvalcoreError):
        return None
    return layers, max_seq


def l2_normalise(rows: np.ndarray) -> np.ndarray:
    """Unit rows in float32; an all-zero row stays zero (cosine 0 rather than NaN)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


class Embedder:
    """Cached, deduplicating, batched sentence encoder for one model.

    `calls` counts backend invocations and `encoded` the texts actually sent to the model
    (tests and the benchmark use them to prove what the cache saved).
    """

    def __init__(self, backend: Backend, cache_area: Any = None, chunk_size: int = 512,
                 progress: bool | None = None):
        """`cache_area`: the store's area for embedding caches (`cache_area(store)`); None keeps
        the vectors in memory only."""
        self.backend = backend
        self.model_id = backend.model_id
        self.cache = ArrayCache(namespace(cache_area, "vectors", self.model_id),
                                meta={"kind": "sentence-vectors", "model_id": self.model_id})
        self.chunk_size = max(1, int(chunk_size))
        self.progress = progress
        self.calls = 0
        self.encoded = 0

    @property
    def label(self) -> str:
        """What to record next to every score computed from these vectors."""
        return self.backend.describe()

    @property
    def dim(self) -> int | None:
        return self.cache.width

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 unit rows for `texts`, in order; each distinct text encoded at most once."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        text_of = dict(zip(keys, texts))
        found = self.cache.get(text_of)
        missing = [k for k in text_of if k not in found]
        if missing:
            found.update(self._compute(missing, text_of))
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _compute(self, missing: list[str], text_of: dict[str, str]) -> dict[str, np.ndarray]:
        order = sorted(missing, key=lambda k: len(text_of[k]), reverse=True)
        chunks = [order[i:i + self.chunk_size] for i in range(0, len(order), self.chunk_size)]
        out_rows = []
        with progress_bar(len(order), self.progress, f"encoding with {self.model_id}") as advance:
            for chunk in chunks:
                vectors = self.backend.embed([text_of[k] for k in chunk])
                self.calls += 1
                self.encoded += len(chunk)
                if vectors.ndim != 2 or len(vectors) != len(chunk):
                    raise EvalcoreError(f"{self.model_id} returned {vectors.shape} vectors for {len(chunk)} texts")
                out_rows.append(l2_normalise(vectors))
                advance(len(chunk))
        rows = np.concatenate(out_rows, axis=0)
        self.cache.put(order, rows)
        return dict(zip(order, rows))


class progress_bar:
    """A transient rich progress bar on stderr for large jobs; a no-op otherwise.

    `enabled=None` means "only when stderr is a terminal", so CI logs stay clean. It uses the one
    progress console (evalcore.common.inert_text.progress_console): when another live display is already
    running there (e.g. the scoring command's own bar), rich refuses a second one and we go on
    without a bar.
    """

    def __init__(self, total: int, enabled: bool | None, description: str):
        show = enabled if enabled is not None else sys.stderr.isatty()
        self.active = bool(show) and total >= PROGRESS_MIN_TEXTS
        self.total = total
        self.description = description
        self._bar: Any = None

    def __enter__(self):
        if not self.active:
            return lambda n: None
        from rich.errors import LiveError
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from evalcore.common.inert_text import progress_options, visible

        bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                       TimeRemainingColumn(), transient=True, **progress_options())
        try:
            bar.start()
        except LiveError:
            return lambda n: None
        self._bar = bar
        task = bar.add_task(visible(self.description), total=self.total)
        return lambda n: bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
