"""Errors users see: each names the file, the record and the field that is wrong."""

from __future__ import annotations

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
