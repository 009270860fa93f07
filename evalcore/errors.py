"""Errors users see: each names the file, the record and the field that is wrong.

Also the warning a loader gives when it drops repeated question ids on request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # every command imports this module: pydantic loads with the first model, not here
    from pydantic import ValidationError


class EvalcoreError(Exception):
    """Base for errors the CLI reports as a message (no traceback) and a non-zero exit."""


class InputError(EvalcoreError):
    """Bad input data. `record` is a 1-based line/record number where one applies."""

    def __init__(self, file: str, message: str, record: int | str | None = None, field: str | None = None):
        self.file = str(file)
        self.record = record
        self.field = field
        self.detail = message
        where = self.file
        if record is not None:
            where += f", record {record}"
        if field:
            where += f", field '{field}'"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class DroppedDuplicate:
    """One record left out because its question id already appeared (`kept_record`)."""

    id: str
    record: int | str
    kept_record: int | str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "record": self.record, "kept_record": self.kept_record}


class DuplicateIdsDropped(UserWarning):
    """A loader asked to keep the first copy of repeated question ids dropped the later ones.

    A warning rather than silence, because dropping records changes what a run measures.
    `file` and `dropped` carry the details, so callers that keep a record of them (the run
    manifest, the CLI's one line per id) never have to parse the message.
    """

    def __init__(self, file: str, dropped: Sequence[DroppedDuplicate]):
        self.file = str(file)
        self.dropped = tuple(dropped)
        parts = "; ".join(f"{d.id!r} first kept at record {d.kept_record}, dropped record {d.record}"
                          for d in self.dropped)
        n = len(self.dropped)
        super().__init__(f"{self.file}: kept the first copy of repeated question ids and dropped "
                         f"{n} record{'s' if n != 1 else ''}: {parts}")

    def lines(self) -> list[str]:
        """One self-contained line per dropped record, for terminals and logs."""
        return [f"{self.file}: dropped record {d.record}, a repeated question id {d.id!r} "
                f"(first kept at record {d.kept_record})" for d in self.dropped]


class StoreError(EvalcoreError):
    """A problem with the run store: unknown run, unsafe run id, unreadable manifest."""


def from_validation(file: str, record: int | str | None, exc: ValidationError, prefix: str = "") -> InputError:
    """Turn pydantic's error into an InputError naming the first bad field."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    field = f"{prefix}{loc}" if loc else (prefix.rstrip(".") or None)
    msg = first.get("msg", str(exc))
    extra = len(exc.errors()) - 1
    if extra > 0:
        msg += f" (and {extra} more problem{'s' if extra > 1 else ''})"
    return InputError(file, msg, record=record, field=field)


def note_published(exc: BaseException, what: str) -> None:
    """Say on a failure (a full disk, typically) that part of the command's work was published
    before it: the CLI's one line then says that instead of "nothing already stored was
    changed", which would be untrue (a scoring pass whose composites failed after its other
    metrics were published; a live run that failed after publishing some answers)."""
    exc.evalcore_published = what  # type: ignore[attr-defined]


def published_note(exc: BaseException) -> str | None:
    """What `note_published` recorded on `exc`, if anything."""
    return getattr(exc, "evalcore_published", None)
