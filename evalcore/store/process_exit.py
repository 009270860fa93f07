"""How a command that used an s3:// store ends its process: without the interpreter's teardown.

Why: on object storage, the store's Parquet and DuckDB reads go through s3fs, a filesystem
written in Python, and the native threads of pyarrow's I/O pool (and DuckDB's) call into it.
pyarrow keeps reading ahead, and releases the Python file objects it read from, on those
threads after a read has returned to us (apache/arrow#33975, #39162). When the interpreter
tears itself down while such a thread is inside Python, the thread is stopped in the middle
of C++ code and the process aborts ("terminate called without an active exception", exit
134) or hangs, after the command's output was written: a reader of an s3:// store that had
done everything right still failed. The store cannot join those threads (pyarrow exposes no
way to), so once the command is done the process runs its exit handlers (pyarrow's own S3
finalisation, s3fs closing its sessions, logging), flushes its output and leaves with
`os._exit`, so no native thread can meet a half-destroyed interpreter. A process that never
opened object storage ends normally.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
from typing import NoReturn

from evalcore.store import s3


def exit_code(code: object) -> int:
    """The status `sys.exit(code)` would give: None is 0, an int itself, anything else is
    printed on stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def end_process(code: object = 0) -> NoReturn:
    """End the process with `code` (as sys.exit takes it). After a command that used object
    storage: exit handlers run, output flushed, then os._exit (see the module docstring)."""
    if not s3.used():
        sys.exit(code)
    status = exit_code(code)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said on it
            pass
    os._exit(status)
