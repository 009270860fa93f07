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

Protocol, over the child's stdin/stdout: length-prefixed pickles between two copies of this
program (nothing else writes to these pipes). First the model reference, then one message per
request: a list of texts, answered ("ok", float32 rows) or ("error", message). The child
loads the model as soon as it starts and exits when its stdin closes.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from evalcore.embeddings.models import ModelRef

_HEADER = struct.Struct("!Q")


class WorkerError(Exception):
    """The child could not answer (it failed to load, failed to encode, or is gone)."""


def send_message(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive_message(stream: BinaryIO) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    size = _HEADER.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # noqa: S301 - our own child, over our own pipe


class EmbeddingWorker:
    """The parent's handle on one child process holding one model."""

    def __init__(self, ref: ModelRef):
        # the child must import this same evalcore (a work tree, an editable install...)
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
        self._lock = threading.Lock()
        # stderr goes nowhere: the parent's stderr may be a pipe its own caller reads to the end,
        # and a child holding it would keep that caller waiting; errors come back as messages
        self.proc = subprocess.Popen([sys.executable, "-m", "evalcore.embeddings.worker_child"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": path})
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
