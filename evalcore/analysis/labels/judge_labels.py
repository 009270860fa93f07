"""One short, human label for the judges behind a system's scores.

Why: a run's judges are stored as full ids, one per prompt (`heuristic:lexical-v3/answer_class@1`,
`anthropic:claude-haiku-4-5/claims@2`, ...). A scored system easily has ten of them, which pushed
every other column of the Runs table off screen and ended each Questions column in a list of
prompt ids. What a reader needs at a glance is *who* judged: the model, or the fact that the
offline heuristic judge (word overlap) did. The full ids stay available beside the label (a
tooltip, an expander); this module is the one home of the short form so every page says the same.
"""

from __future__ import annotations

from typing import Iterable

# Fixed text (ours, not data): what the offline heuristic judge is, in two words.
HEURISTIC_SHORT = "heuristic (word overlap)"


def _ids(judge_ids: str | Iterable[str | None] | None) -> list[str]:
    """The judge ids as a clean list: a stored comma-separated `judges` text is split; blanks,
    None and NaN (a pandas missing value, alone or in a list) are dropped."""
    if judge_ids is None or isinstance(judge_ids, float):
        return []
    if isinstance(judge_ids, str):
        judge_ids = judge_ids.split(",")
    return [j.strip() for j in judge_ids if isinstance(j, str) and j.strip() and j.strip() != "–"]


def judge_models(judge_ids: str | Iterable[str | None] | None) -> list[str]:
    """The distinct judges (`provider:model`, prompt and version dropped), models first, the
    heuristic judge last, each group sorted: the order the short label names them in."""
    names = {j.partition("/")[0] for j in _ids(judge_ids)}
    return sorted(names, key=lambda n: (n.startswith("heuristic"), n))


def _one(name: str) -> str:
    """`heuristic:lexical-v3` -> `heuristic (word overlap)`; `anthropic:claude-haiku-4-5` ->
    `claude-haiku-4-5` (the model names the judge; the provider is in the full id)."""
    if name.startswith("heuristic"):
        return HEURISTIC_SHORT
    provider, sep, model = name.partition(":")
    return model if sep and model else provider


def short_judge_label(judge_ids: str | Iterable[str | None] | None) -> str:
    """One short label for the judges of a system: `claude-haiku-4-5`, `heuristic (word overlap)`,
    or, when several judges scored it, the first (models before the heuristic) and how many more:
    `claude-haiku-4-5 +1`. '' when nothing was judged (every score computed).

    Accepts judge ids as a list or as the stored comma-separated `judges` text. The result is
    plain text built from stored ids: render it as text (never Markdown/HTML)."""
    labels: list[str] = []
    for name in judge_models(judge_ids):
        label = _one(name)
        if label not in labels:
            labels.append(label)
    if not labels:
        return ""
    return labels[0] if len(labels) == 1 else f"{labels[0]} +{len(labels) - 1}"


def full_judge_ids(judge_ids: str | Iterable[str | None] | None) -> str:
    """Every distinct full judge id, sorted, one per line: the details behind the short label."""
    return "\n".join(sorted(set(_ids(judge_ids))))


# Fixed text (ours, not data): what the offline heuristic judge is, said wherever its verdicts show.
HEURISTIC_NOTE = "word overlap, not a model"
HEURISTIC_BADGE = f"heuristic judge: {HEURISTIC_NOTE}"


def judge_name(judge_id: str) -> str:
    """The judge of a stored judge id (`provider:model/prompt@version` -> `provider:model`)."""
    return judge_id.partition("/")[0]


def is_heuristic(judge_id: str) -> bool:
    return judge_id.startswith("heuristic")


def judges_text(judge_ids: Iterable[str]) -> str:
    """The judges of some scores in words: `heuristic:lexical-v3 (word overlap, not a model)`;
    several judges are all listed. '' when there is none (the scores were computed, not judged)."""
    names = sorted({judge_name(j) for j in judge_ids if isinstance(j, str) and j})
    return ", ".join(f"{n} ({HEURISTIC_NOTE})" if is_heuristic(n) else n for n in names)


def judged_by(judge_ids: Iterable[str]) -> str:
    """`judged by …` (judges_text), or '' when nothing was judged."""
    text = judges_text(judge_ids)
    return f"judged by {text}" if text else ""
