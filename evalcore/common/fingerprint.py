"""Content fingerprints, so a manifest says exactly which dataset/file a run used."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_fingerprint(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of the file's bytes (streamed, bounded memory), as 'sha256:<hex>'."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return "sha256:" + digest.hexdigest()
