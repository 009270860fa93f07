"""Repeated trials of a system: how many (`evalcore run --trials T`) and which one an answer is.

Why a trial is part of an answer's identity: a RAG system samples (its LLM at a temperature, a
retriever with ties), so one answer per question is one draw. With T trials every question is
asked T times per method; each answer carries its trial index (0 .. T-1), is stored under it
(docs/store.md, "Trials") and is scored on its own. Trial 0 is the answer every run always had:
a run from before trials existed, or asked with T = 1, is a run of one trial, and its rows
read exactly as they did.

The two types refuse what is not plainly a whole number in range, wherever it comes from: a
flag (`--trials 1.5`, `--trials 0`), a config file, or a recorded-answers file's `trial`
column (a CSV cell is text: "2" and "2.0" are 2; "2.5", "+1", "1_0", "２" or true are refused,
each in one line naming the file, record and field).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

MAX_TRIALS = 100  # trials per question and method: T of `run --trials T`; a trial index is below it
_DIGITS = re.compile(r"([0-9]{1,12})(?:\.0*)?")  # "2", and "2.0" as a CSV of floats writes it


def _whole(value: Any) -> int | None:
    """`value` as an int when it plainly is one: an int (not a bool), a float without a
    fraction, or text of ASCII digits (with a `.0` as pandas writes a float column); None
    otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    found = _DIGITS.fullmatch(value.strip()) if isinstance(value, str) else None
    if found:
        return int(found.group(1))
    return None


def _in_range(value: Any, low: int, high: int, what: str) -> int:
    """`value` as a whole number from `low` to `high`; ValueError naming `what` and the range."""
    number = _whole(value)
    if number is None or not low <= number <= high:
        shown = repr(value) if isinstance(value, str) else str(value)
        raise ValueError(f"{what} is a whole number from {low} to {high}, got {shown[:40]}")
    return number


def _trial_index(value: Any) -> int:
    """An answer's trial: 0 .. MAX_TRIALS - 1; absent (None) is trial 0, the only one a run
    without trials has."""
    return 0 if value is None else _in_range(value, 0, MAX_TRIALS - 1, "a trial")


def _trial_count(value: Any) -> int:
    """How many trials a run asks: 1 .. MAX_TRIALS."""
    return _in_range(value, 1, MAX_TRIALS, "the number of trials")


TrialIndex = Annotated[int, BeforeValidator(_trial_index)]
TrialCount = Annotated[int, BeforeValidator(_trial_count)]


def first_trial(value: int) -> bool:
    """Whether a trial index is trial 0: what the records leave out, so a run without trials
    stores and exports exactly the records it always did."""
    return value == 0
