"""The child's side of evalcore.embeddings.worker: load one model, then embed what the parent
sends until its stdin closes (the protocol is described there). Run as
`python -m evalcore.embeddings.worker_child` by EmbeddingWorker, never imported by evalcore."""

from __future__ import annotations

import os
import sys

from evalcore.embeddings.embedder import SentenceTransformerBackend
from evalcore.embeddings.models import ModelRef
from evalcore.common.child_pipe import receive_message, send_message


def main() -> None:
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever a library prints must not corrupt the protocol
    try:
        backend = SentenceTransformerBackend(ModelRef(*receive_message(inp)))
    except EOFError:
        os._exit(0)
    error = None
    try:
        backend.embed(["warm-up"])  # load now: the point of the child
    except Exception as exc:  # noqa: BLE001 - sent to the parent, which loads in-process instead
        error = f"{type(exc).__name__}: {exc}"
    while True:
        try:
            texts = receive_message(inp)
        except EOFError:
            break
        if error is not None:
            send_message(out, ("error", error))
            continue
        try:
            send_message(out, ("ok", backend.embed(texts)))
        except Exception as exc:  # noqa: BLE001 - the parent decides what to do
            send_message(out, ("error", f"{type(exc).__name__}: {exc}"))
    # nothing to flush or clean up: skip the interpreter's slow teardown of torch
    os._exit(0)


if __name__ == "__main__":
    main()
