"""Length-prefixed pickles between evalcore and a child process of its own.

Why one module: the embedding worker (embeddings/worker.py) and the scoring worker of a live
run (scoring/stream_worker.py) both run a second interpreter that must import this same
evalcore and talk to it over its stdin/stdout. Nothing else writes to those pipes, and both
ends are this program, so pickle is safe here (never for anything read from a file or a peer).
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

_HEADER = struct.Struct("!Q")


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


def start_child(module: str) -> subprocess.Popen:
    """`python -P -m module` with pipes on stdin/stdout, importing this same evalcore (a work
    tree, an editable install...): `-P` keeps the current folder off the child's path, where an
    `evalcore/` of another checkout (or a stray `json.py`) would be imported instead. Its stderr goes nowhere: the parent's stderr may be a pipe its own
    caller reads to the end, and a child holding it would keep that caller waiting; a child
    reports its errors as messages."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([sys.executable, "-P", "-m", module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path})
