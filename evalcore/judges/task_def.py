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

from pydantic import BaseModel, ValidationError

from evalcore.judges.prompts import RenderedPrompt, render
from evalcore.schemas import EvalQuestion, EvalResponse

ABSENT = "(absent)"


class ParseError(ValueError):
    """The reply is not the JSON the task asked for (the message says what is wrong)."""


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
    _schema: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def schema(self) -> dict[str, Any]:
        """The reply's JSON schema in the strict form both providers accept: every property
        required, no extra properties, no titles or defaults (built once)."""
        if not self._schema:
            self._schema.update(strict_schema(self.reply.model_json_schema()))
        return self._schema

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

    def parse(self, obj: Any, inputs: dict[str, Any]) -> dict[str, Any]:
        """Validate a decoded reply against the model, then the input-dependent rules."""
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

    def estimate_output(self, inputs: dict[str, Any]) -> int:
        fixed, per = self.output_tokens
        listed = [v for k, v in inputs.items() if isinstance(v, list) and k not in self.offline_only]
        return fixed + per * sum(len(v) for v in listed)

    def estimate_input(self, inputs: dict[str, Any]) -> int:
        """Prompt tokens, roughly: characters / 3.5 (what the dry run has always used)."""
        p = self.prompt(self.with_counts(inputs))
        return math.ceil(len(p.system + p.user) / 3.5)



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
