"""`run.json`: the run manifest, what `evalcore runs` reads of every run.

Why a module of its own: listing the runs validates one manifest per run and nothing else, so
it imports this model alone, not every contract (schemas/__init__.py loads them when named).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_serializer

from evalcore.schemas.ids import canonical_id
from evalcore.schemas.storable import storable_names
from evalcore.schemas.strict import Strict, utcnow

RunStatus = Literal["created", "running", "complete", "failed", "cancelled"]


class RunManifest(Strict):
    """`run.json`: what a run is, how it was made, and where it stands. Never holds secrets."""

    format_version: int
    run_id: str
    # a run name is typed by people (`--name`, a config's `name`) and looked up by them: the id
    # rule (evalcore.schemas.ids) applies, also to names read from an older run.json
    name: Annotated[str, AfterValidator(canonical_id)]
    kind: Literal["import", "live", "example"] = "import"
    status: RunStatus = "created"
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    evalcore_version: str
    methods: list[str] = Field(default_factory=list)
    dataset: dict[str, Any] = Field(default_factory=dict)
    source: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    judges: list[str] = Field(default_factory=list)
    target_info: dict[str, Any] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _storable(self, handler: Any) -> Any:
        """Every string as it can be written: a file name that is not UTF-8 (its bytes held as
        surrogate escapes) spelled with `\\xNN`, NUL and other lone surrogates as U+FFFD
        (evalcore.schemas.storable). The entry points store names that way already; this is the
        guard for any path, name or note that reaches run.json another way, which used to end
        an import in "unexpected PydanticSerializationError"."""
        return storable_names(handler(self))
