"""What a writer killed at the wrong moment leaves behind, and the crash-ordering of a publish.

- A part file is written as `.part-….parquet.tmp` and renamed; kill -9 between the two leaves
  the temporary file, which no reader ever sees. Compaction removes such files once they are
  older than an hour (a younger one may belong to a writer still writing it).
- A compaction writes the new canonical files into data/, then replaces the pointer. The new
  files' directory entries must be durable before the pointer names them, or a power cut can
  leave a pointer naming a file that does not exist: data/ is fsynced first.
"""

from __future__ import annotations

import os
import time

from evalcore.schemas import EvalQuestion
from evalcore.store.layout import parts_dir


def _run(store):
    from evalcore.schemas import RunManifest
    from evalcore.store.layout import FORMAT_VERSION

    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="leftovers-1", name="leftovers",
                                          evalcore_version="test"))
    writer.write_questions([EvalQuestion(id="q1", question="why?")])
    writer.publish()
    return writer


def test_compaction_sweeps_stale_part_temporaries_only(store):
    writer = _run(store)
    folder = parts_dir(writer.dir, "responses")
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / ".part-20260101T000000000000-deadbeef.parquet.tmp"
    fresh = folder / ".part-20260101T000000000000-cafef00d.parquet.tmp"
    stale.write_bytes(b"half a parquet file")
    fresh.write_bytes(b"being written right now")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    writer.write_questions([EvalQuestion(id="q2", question="how?")])
    writer.publish()
    assert not stale.exists(), "a temporary part file left by a killed writer was never removed"
    assert fresh.exists(), "a temporary part file a writer may still be writing was removed"


def test_new_canonical_files_are_durable_before_the_pointer(store, monkeypatch):
    from evalcore.store import compaction

    writer = _run(store)
    events: list[str] = []
    real_fsync = os.fsync

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isdir(path):
            events.append(f"dir:{os.path.basename(path)}")
        return real_fsync(fd)

    real_write_pointer = compaction.write_pointer

    def write_pointer(*args, **kwargs):
        events.append("pointer")
        return real_write_pointer(*args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(compaction, "write_pointer", write_pointer)
    writer.write_questions([EvalQuestion(id="q2", question="how?")])
    writer.publish()
    assert "pointer" in events
    assert "dir:data" in events[:events.index("pointer")], events
