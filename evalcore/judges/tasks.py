"""Judge tasks: one definition per task, the unit both judge kinds implement.

A task is everything the judge layer needs to know about one kind of question put to a judge,
kept together so that adding a judged metric means writing one `TaskDef` (plus its spec,
`evalcore.metrics.judged.specs.judged_metric`, and its docs section), not editing eight files:

- `version` of its prompt file, `<name>.v<version>.yaml` (in evalcore/prompts, or a task's
  own `prompt_dir`): the (name, version) pair is part of every stored judge id;
- `reply`, a pydantic model of the answer the judge must give. It is the JSON schema sent to
  providers that accept one (structured outputs), and the first check on every reply;
- `check(output, inputs)`, the rules that need the inputs (one verdict per context, claim
  numbers in range), returning the normalised output metric code relies on;
- `heuristic(inputs)`, the offline judge's output in the same shape;
- `output_tokens`, a reply-size estimate for `score --dry-run` (fixed + per listed item);
- `counts(inputs)`, the `n_*` numbers its prompt quotes;
- `inputs(question, response)`, the request one answer makes, and `needs_ground_truth`: a
  metric that asks the task once per answer derives its scoring and estimate from them;
- `offline_only`, input keys only the heuristic reads (default: `answers`, every acceptable
  gold answer). The prompt never shows them and they do not enter its fence, so an LLM
  judge's prompt, and its cache key, stay exactly what they were without them.

Metrics ask for tasks, never for prompts, so switching judges never changes metric code.
Built-in definitions live in `evalcore.judges.task_library` (registered at the end of this
module); the `TaskDef` type lives in `evalcore.judges.task_def` and is re-exported here.
"""

from __future__ import annotations

from typing import Any

from evalcore.judges import task_library
from evalcore.judges.task_def import (ABSENT, ParseError, PartsError, TaskDef, combine,  # noqa: F401 (the public names)
                                      strict_schema)

REPAIR_VERSION = "1"

TASKS: dict[str, TaskDef] = {}
# task -> prompt version in use; kept in step with TASKS by `register`
PROMPT_VERSIONS: dict[str, str] = {}


def register(defn: TaskDef, replace: bool = False) -> TaskDef:
    """Add a task. The prompt file must exist now, so a typo fails at import, not mid-run."""
    if defn.name in TASKS and not replace:
        raise ValueError(f"judge task {defn.name!r} is already defined")
    from evalcore.judges.prompts import load_prompt

    load_prompt(defn.name, defn.version, directory=defn.prompt_dir)
    TASKS[defn.name] = defn
    PROMPT_VERSIONS[defn.name] = defn.version
    return defn


def unregister(name: str) -> None:
    """Remove a task (tests that define their own)."""
    TASKS.pop(name, None)
    PROMPT_VERSIONS.pop(name, None)


def get_task(name: str) -> TaskDef:
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"no judge task {name!r}; defined: {', '.join(sorted(TASKS))}") from None


def inputs_for(task: str, **kw: Any) -> dict[str, Any]:
    """Inputs dict with the derived counts the prompts quote."""
    return get_task(task).with_counts(kw)


for _defn in task_library.BUILT_IN:
    register(_defn)
