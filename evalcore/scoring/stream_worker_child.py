"""The child's side of evalcore.scoring.stream_worker: score a live run's chunks with one
ChunkStream until stdin closes (the protocol is described there). Run as
`python -m evalcore.scoring.stream_worker_child` by WorkerStream, never imported by evalcore."""

from __future__ import annotations

import gc
import os
import signal
import sys

from evalcore.common.child_pipe import receive_message, send_message


# How much lower than the run's own the child's CPU priority is (POSIX niceness): the run's
# asking and the server it asks, when that runs on this machine, come first. The child's work
# can wait (only its last chunk is on the run's path: scoring/streaming.py), theirs cannot: at
# the run's start, the child's imports (~0.5 s of CPU) took the core the server needed, and a
# live run lagged a bare one by ~10 answers at 0.25 s. 12 alternated pairs, 1,000 questions
# (bench/bench_runner.py's runs, niceness 15): the last answer 18 ms sooner, the run 16 ms shorter
# (medians). 10 leaves it ~a tenth of a busy core's share: on a machine a local server keeps
# busy, its scoring is not all pushed past the last answer.
NICENESS = 10


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it closes our stdin
    if hasattr(os, "nice"):  # (POSIX)
        try:
            os.nice(NICENESS)
        except OSError:  # not allowed here (a sandbox): run at the parent's priority
            pass
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever a library prints must not corrupt the protocol
    try:
        root, run_id, metrics, groups, options = receive_message(inp)
    except EOFError:
        os._exit(0)
    try:
        from evalcore.scoring.stream_chunks import ChunkStream
        from evalcore.scoring.stream_worker import report_to_wire
        from evalcore.store import RunStore, RunWriter, written_parts

        store = RunStore(root)
        stream = ChunkStream(store, RunWriter(run_id, store.run_dir(run_id)), run_id, metrics, groups, options)
        failed = None
    except Exception as exc:  # noqa: BLE001 - every request is answered with it
        failed = f"{type(exc).__name__}: {exc}"
    # what the imports made lives as long as this process: no full collection walks it again
    # (60 ms each, stalling the chunk the end of the run waits for: evalcore/common/frozen_heap.py);
    # again after the first chunk, which imports the metrics' own modules
    gc.freeze()
    first = True
    while True:
        try:
            kind, *args = receive_message(inp)
        except EOFError:
            break
        if failed is not None:
            send_message(out, ("error", failed))
            continue
        try:
            if kind == "decide":
                reply = stream.decide(*args)
            elif kind == "score":  # the parts it wrote go to the parent, which merges them (no read back)
                since = written_parts.mark()
                stream.score(*args)
                reply = written_parts.hand_over(since)
            else:
                closed = stream.close(*args)
                reply = None if closed is None else (report_to_wire(closed[0]), closed[1])
            send_message(out, ("ok", reply))
            if first and kind == "score":
                first = False
                gc.freeze()
        except Exception as exc:  # noqa: BLE001 - the parent gives streaming up and scores afterwards
            failed = f"{type(exc).__name__}: {exc}"
            send_message(out, ("error", failed))
    os._exit(0)  # every part file is written whole (atomic); nothing else to flush


if __name__ == "__main__":
    main()
