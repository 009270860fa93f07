"""One vocabulary for every categorical verdict: grades, answer classes, claim and context verdicts.

Why one module: the judge writes these words, the store counts them in run summaries, the
Annotate page offers them as corrections and agreement compares them. When each place kept its
own list, a judge's `not_supported` met an annotator's `unsupported` and never agreed. Every
other module imports the enums (or the tuples of their values) from here.

Grades follow G-Eval's letter bands on a 0-100 score (A >= 80, B >= 60, C >= 40, D >= 20, else E).
The score is rounded to 6 decimals before it is cut, so a weighted sum that is exactly on a
band in decimal (0.62 x ... = 20.0) but lands a hair below it in binary floating point gets
the letter a person computing by hand would give.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum


class Grade(StrEnum):
    A = "A"
    B = "B"
    C = "C"
    D = "D"
    E = "E"


class AnswerClass(StrEnum):
    CORRECT = "CORRECT"
    WRONG = "WRONG"
    DONT_KNOW = "DONT_KNOW"


class ClaimVerdict(StrEnum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported"


class ContextVerdict(StrEnum):
    RELEVANT = "relevant"
    NOT_RELEVANT = "not_relevant"


# (lowest score of the band on 0-100, letter), best band first
GRADE_BANDS: tuple[tuple[float, Grade], ...] = ((80.0, Grade.A), (60.0, Grade.B), (40.0, Grade.C),
                                                (20.0, Grade.D))
GRADE_POINTS = {Grade.A: 4, Grade.B: 3, Grade.C: 2, Grade.D: 1, Grade.E: 0}

# Which verdicts a person may give per annotation target kind: the judge's own words.
TARGET_LABELS: dict[str, tuple[str, ...]] = {
    "claim": tuple(ClaimVerdict),
    "context": tuple(ContextVerdict),
    "answer_class": tuple(AnswerClass),
    "grade": tuple(Grade),
}

# An annotation with this label takes back the same person's previous label on the same item
# (undo): annotations are append-only, so an undo is a new row, never a deletion.
RETRACTED = "(retracted)"

# Which metrics store a grade or an answer class in their `label` column is on their spec
# (MetricSpec.label_kind; evalcore.metrics.registry.labelled_metrics).


def grade_for(score_100: float) -> Grade:
    """Letter grade of a 0-100 score (rounded to 6 decimals first, see the module docstring)."""
    if score_100 is None or math.isnan(score_100):
        raise ValueError("cannot grade a missing score")
    score = round(float(score_100), 6)
    for floor, letter in GRADE_BANDS:
        if score >= floor:
            return letter
    return Grade.E


def _verdict_word(value: object, yes: StrEnum, no: StrEnum, yes_words: set[str], no_words: set[str]):
    """A two-way verdict from what a judge wrote: a number/bool (>= 0.5 is yes) or a word."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return yes if float(value) >= 0.5 else no
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    return yes if text in yes_words else no if text in no_words else None


def claim_verdict(value: object) -> ClaimVerdict | None:
    """A claim verdict from a judge's yes/no/1/0/supported word (None when it gave none)."""
    return _verdict_word(value, ClaimVerdict.SUPPORTED, ClaimVerdict.NOT_SUPPORTED,
                         {"yes", "supported", "true", "1", "entailed"},
                         {"no", "not_supported", "unsupported", "false", "0", "contradicted"})


def context_verdict(value: object) -> ContextVerdict | None:
    """A context verdict from a judge's yes/no/1/0/relevant word (None when it gave none)."""
    return _verdict_word(value, ContextVerdict.RELEVANT, ContextVerdict.NOT_RELEVANT,
                         {"yes", "relevant", "true", "1"}, {"no", "not_relevant", "irrelevant", "false", "0"})


# ---- how a labelled answer was drawn: the one grammar of sample ids --------------------------
# A random sample is named `srs:<seed>`: a simple random sample walking the seeded order of
# evalcore.analysis.labels.sample_order. The seed is written in ASCII digits without a sign, spaces or
# leading zeros (0 to 10**18 - 1), so one seed has exactly one spelling: two spellings of one
# seed ("srs:03", "srs:3") would read as two samples, and a look-alike ("srs:３" in full-width
# digits, a Cyrillic "ѕ", a zero-width space) must never pass for a sample it is not. Anything
# else is not a sample id; `labels import` refuses it and a label stored with one before this
# grammar existed counts as hand-picked (`store check` names it). docs/labels.md.
SAMPLE_PREFIX = "srs:"
_SAMPLE_ID = re.compile(r"srs:(0|[1-9][0-9]{0,17})", re.ASCII)
SAMPLE_GRAMMAR = "srs:<seed>, the seed a whole number in ASCII digits without leading zeros (e.g. srs:0, srs:3)"


def sample_id(seed: int) -> str:
    """The id of the random sample walking `seed`'s order."""
    seed = int(seed)
    if not 0 <= seed < 10**18:
        raise ValueError(f"a sample seed is a whole number from 0 to 10**18 - 1, got {seed}")
    return f"{SAMPLE_PREFIX}{seed}"


def sample_seed(text: object) -> int | None:
    """The seed a sample id names, or None when `text` does not follow the grammar exactly."""
    match = _SAMPLE_ID.fullmatch(text) if isinstance(text, str) else None
    return int(match.group(1)) if match else None


# ---- pairwise preferences: which of two systems' answers to one question is better -----------
# A preference label (Annotation.target_kind "preference") is about one question and two systems
# (run x method), A and B, and says "A", "B" or "tie". A is the annotation's own run_id / method,
# B is named by its target_ref, `preference:<run B>:<method B>` (a run id never holds ':', so the
# first ':' after the run ends it; the method is the rest, as the run stores it). One pair has one
# spelling: A is the system whose (run id, method) sorts first, so two people who picked the two
# systems in either order label the same item; a file naming them the other way round is turned
# round on import, its label with it (`flip`). docs/labels.md, "Pairwise preferences".
PREFERENCE = "preference"
_PREFERENCE_REF = re.compile(r"preference:([A-Za-z0-9][A-Za-z0-9._-]*):(.+)", re.DOTALL)


class Preference(StrEnum):
    A = "A"
    B = "B"
    TIE = "tie"


def preference_ref(other_run: str, other_method: str) -> str:
    """The target_ref naming system B of a preference."""
    return f"{PREFERENCE}:{other_run}:{other_method}"


def preference_other(target_ref: object) -> tuple[str, str] | None:
    """(run, method) of system B from a preference's target_ref; None when it is not one."""
    match = _PREFERENCE_REF.fullmatch(target_ref) if isinstance(target_ref, str) else None
    return (match.group(1), match.group(2)) if match else None


def preference_word(value: object) -> Preference | None:
    """A person's preference from what a file or tool wrote: A, B or tie (any case)."""
    text = str(value).strip().casefold() if value is not None else ""
    return {"a": Preference.A, "b": Preference.B, "tie": Preference.TIE}.get(text)


def flip(label: str) -> str:
    """The same preference with the two systems swapped (A <-> B; a tie and a retraction stay)."""
    return {Preference.A.value: Preference.B.value, Preference.B.value: Preference.A.value}.get(label, label)
