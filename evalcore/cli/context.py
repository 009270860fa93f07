"""Options shared by every command (set by the root callback)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalcore.store import RunStore


@dataclass
class CliState:
    store_root: Path | None = None

    def store(self) -> RunStore:
        return RunStore(self.store_root)


state = CliState()
