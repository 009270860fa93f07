"""A local embedding model loaded, and run, in a child process.

Why: importing torch and transformers and loading even the small MiniLM costs 4-5 s of CPU.
A scoring pass with an LLM judge did that in a background thread while its judge calls were
in flight, and the two competed for the one interpreter lock: replies were handled late, and
the model was still loading when the last call came back. A child process loads it on
another core while this process mostly waits for the network. The child runs the very code
the in-process backend runs (SentenceTransformerBackend.embed), so its vectors are the same.

Only worth it when this process has not imported torch yet (SentenceTransformerBackend
decides; once torch is here, loading here is quicker than starting a second interpreter).

This module is the parent's side; the child's program is evalcore.embeddings.worker_child (so
the parent never imports the backend module, which imports this one).

Protocol, over the child's stdin/stdout: length-prefixed pickles (evalcore/common/child_pipe.py).
First the model reference, then one message per request: a list of texts, answered ("ok",
float32 rows) or ("error", message). The child loads the model as soon as it starts and exits
when its stdin closes.
"""

from __future__ import annotations

import pickle
import threading
import numpy as np

from evalcore.common.child_pipe import receive_message, send_message, start_child
from evalcore.embeddings.models import ModelRef

class WorkerError(Exception):
    """The child could not answer (it failed to load, failed to encode, or is gone)."""


class EmbeddingWorker:
    """The parent's handle on one child process holding one model."""

    def __init__(self, ref: ModelRef):
        self._lock = threading.Lock()
        self.proc = start_child("evalcore.embeddings.worker_child")
        try:
            send_message(self.proc.stdin, (ref.model_id, ref.location, ref.source))
        except OSError:
            pass  # reported by the first embed

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            try:
                send_message(self.proc.stdin, list(texts))
                kind, payload = receive_message(self.proc.stdout)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                raise WorkerError(f"embedding worker gone ({type(exc).__name__})") from None
        if kind != "ok":
            raise WorkerError(str(payload))
        return np.asarray(payload, dtype=np.float32)

    def close(self) -> None:
        """Let the child go (it exits on end of input); nothing waits for it."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
