"""The base of every I/O contract, and the clock their default times read.

Why a module of its own: a reader of run.json needs RunManifest alone (schemas/manifest.py),
and each contract module defines several models; importing them all to get the base cost
`evalcore runs` a tenth of its start.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Strict(BaseModel):
    """Base for every I/O contract: unknown fields are rejected. Each model's validator is built
    when the model is first used, not when evalcore.schemas is imported: building all of them cost
    every command a tenth of a second, and `evalcore runs` reads one (RunManifest)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)
