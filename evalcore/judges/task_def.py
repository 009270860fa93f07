"""The judge task definition type (`TaskDef`), apart from the registry of tasks.

Why its own module: the built-in definitions (task_library) and the registry that holds them
(tasks) both need the type; with the type here, tasks imports task_library and task_library
imports only this, so there is no import cycle. What a task is: see evalcore.judges.tasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from evalcore.judges.prompts import RenderedPrompt, render
from evalcore.schemas import EvalQuestion, EvalResponse

ABSENT = "(absent)"


class ParseError(ValueError):
    """The reply is not the JSON the task asked for (the message says what is wrong)."""


class PartsError(ParseError):
    """A combined task's reply (TaskDef.parts) of which some parts are unusable: `kept` holds
    the usable parts' outputs, `failed` {part task name: what is wrong}. Why apart from a plain
    ParseError: the client then asks again for the failed parts only, and a part that stays
    unusable marks only the metrics that read it."""

    def __init__(self, kept: dict[str, Any], failed: dict[str, str]):
        super().__init__("; ".join(f"{name} part: {why}" for name, why in failed.items()))
        self.kept = kept
        self.failed = failed


def _no_counts(inputs: dict[str, Any]) -> dict[str, int]:
    return {}


@dataclass(frozen=True)
class TaskDef:
    name: str
    version: str
    reply: type[BaseModel]
    heuristic: Callable[[dict[str, Any]], dict[str, Any]]
    check: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None
    output_tokens: tuple[int, int] = (100, 0)
    counts: Callable[[dict[str, Any]], dict[str, int]] = _no_counts
    prompt_dir: Path | None = None
    description: str = ""
    offline_only: tuple[str, ...] = ("answers",)
    # The request one answer makes, for a metric that asks this task once per answer
    # (metrics.judged.judged_metric derives its scoring and its dry-run estimate from it);
    # None: the task is asked by code of its own (claims, reviews, classes).
    inputs: Callable[[EvalQuestion, EvalResponse], dict[str, Any]] | None = None
    # The request needs a reference answer: a question without one is not sent (its value is
    # NaN, "no ground truth") and the metric needs "ground_truth".
    needs_ground_truth: bool = False
    # A combined task (`combine`): the tasks whose questions it asks in one reply. Each part is
    # validated and checked by its own definition, so one bad part leaves the others usable.
    parts: tuple["TaskDef", ...] = ()
    _schema: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def schema(self, parts: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The reply's JSON schema in the strict form both providers accept: every property
        required, no extra properties, no titles or defaults (built once). With `parts` (a
        combined task's part names), the schema of those parts' keys alone: what a repair of
        those parts asks for."""
        if parts:
            return strict_schema(_merged_reply(f"{self.name}_repair", self._parts(parts)).model_json_schema())
        if not self._schema:
            self._schema.update(strict_schema(self.reply.model_json_schema()))
        return self._schema

    def _parts(self, names: tuple[str, ...] | None) -> list["TaskDef"]:
        return [p for p in self.parts if names is None or p.name in names]

    def part_keys(self, names: tuple[str, ...]) -> list[str]:
        """The reply keys of the named parts."""
        return [k for p in self._parts(names) for k in p.reply.model_fields]

    def with_counts(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """`inputs` plus the derived counts the prompt quotes."""
        return {**inputs, **self.counts(inputs)}

    def prompt(self, inputs: dict[str, Any], version: str | None = None) -> RenderedPrompt:
        """Untrusted strings/lists are fenced; `n_*` counts are ours and written as-is;
        a missing optional text becomes the plain word (absent), outside any fence."""
        data: dict[str, Any] = {}
        plain: dict[str, str] = {}
        for key, value in inputs.items():
            if key in self.offline_only:
                continue
            if key.startswith("n_"):
                plain[key] = str(int(value))
            elif value is None or (isinstance(value, str) and not value.strip()):
                plain[key] = ABSENT
            else:
                data[key] = value
        return render(self.name, data, version or self.version, plain, directory=self.prompt_dir)

    def parse(self, obj: Any, inputs: dict[str, Any], parts: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Validate a decoded reply against the model, then the input-dependent rules. A
        combined task validates each part (or only the named `parts`) by its own definition
        and raises PartsError naming the unusable ones."""
        if self.parts:
            return self._parse_parts(obj, inputs, parts)
        try:
            model = self.reply.model_validate(obj)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "reply"
            more = len(exc.errors()) - 1
            raise ParseError(f"{where}: {first.get('msg')}" + (f" (and {more} more problems)" if more else "")) \
                from None
        out = model.model_dump()
        return self.check(out, inputs) if self.check else out

    def _parse_parts(self, obj: Any, inputs: dict[str, Any], names: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise ParseError("reply: must be a JSON object")
        kept: dict[str, Any] = {}
        failed: dict[str, str] = {}
        for part in self._parts(names):
            try:
                kept.update(part.parse(obj, inputs))
            except ParseError as exc:
                failed[part.name] = str(exc)
        if failed:
            raise PartsError(kept, failed)
        return kept

    def estimate_output(self, inputs: dict[str, Any]) -> int:
        fixed, per = self.output_tokens
        listed = [v for k, v in inputs.items() if isinstance(v, list) and k not in self.offline_only]
        return fixed + per * sum(len(v) for v in listed)

    def estimate_input(self, inputs: dict[str, Any]) -> int:
        """Prompt tokens, roughly: characters / 3.5 (what the dry run has always used)."""
        p = self.prompt(self.with_counts(inputs))
        return math.ceil(len(p.system + p.user) / 3.5)



def _merged_reply(name: str, parts: list[TaskDef]) -> type[BaseModel]:
    """One reply model holding every part's fields (the schema a combined task sends)."""
    fields: dict[str, Any] = {}
    for part in parts:
        for key, info in part.reply.model_fields.items():
            fields[key] = (info.annotation, info)
    return create_model(name, __config__=ConfigDict(extra="ignore"), **fields)


def combine(name: str, version: str, parts: list[TaskDef], description: str = "") -> TaskDef:
    """A task that asks the questions of several tasks in one reply (one call instead of
    one per task): its reply holds every part's keys, each part is validated and checked by
    its own definition, the offline judge answers with every part's heuristic, and the
    reply-size estimate is the parts' sum. The parts must share no reply key."""
    keys = [k for p in parts for k in p.reply.model_fields]
    if len(keys) != len(set(keys)):
        raise ValueError(f"the parts of judge task {name!r} share reply keys: {keys}")

    def heuristic(inputs: dict[str, Any]) -> dict[str, Any]:
        return {k: v for p in parts for k, v in p.heuristic(inputs).items()}

    def counts(inputs: dict[str, Any]) -> dict[str, int]:
        return {k: v for p in parts for k, v in p.counts(inputs).items()}

    return TaskDef(name, version, _merged_reply(f"{name}_reply", parts), heuristic=heuristic,
                   output_tokens=(sum(p.output_tokens[0] for p in parts), sum(p.output_tokens[1] for p in parts)),
                   counts=counts, description=description,
                   offline_only=tuple(dict.fromkeys(k for p in parts for k in p.offline_only)), parts=tuple(parts))


# Keywords left out of the schema sent to providers: titles and defaults say nothing to a
# model, and range/length limits are refused by some structured-output implementations
# (the reply model still enforces them when the reply is parsed).
_NOT_SENT = ("title", "default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
             "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "pattern")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made strict: every object lists all its properties as required
    and allows no others. OpenAI's strict json_schema mode needs exactly this, and
    Anthropic's structured outputs accept it."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]  # type: ignore[return-value]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict_schema(v) for k, v in schema.items() if k not in _NOT_SENT}
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out
