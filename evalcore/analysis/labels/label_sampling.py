"""Random-sample labelling: which answer a person labels next so the labels can feed estimates.

Why: prediction-powered inference is valid only when the labelled answers are a uniform random
sample of the population (run x method x metric); answers an annotator picks by hand (odd-looking
verdicts, the first page of a queue) are not. The sample here is a seeded random order of the
population's question ids — the order of sha256("<seed>:<question_id>") — and labelling walks it
from the top, so the answers labelled so far are always a prefix of a random permutation: a simple
random sample. Because the order depends only on the seed and the question id, every method of a
run and every run over the same questions get the same order, so the first n questions are
labelled on both sides of a comparison (the paired corrected delta needs exactly that).

Each label records the draw: sample_id "srs:<seed>" and the inclusion probability of the sample
it completes — an answer at position k (0-based) of the order is labelled as part of the sample
of size ceil((k+1)/BATCH)*BATCH, so its inclusion probability is that size / N (capped at 1).
Every answer of one population shares the probability of the sample it belongs to, which is why
the estimators are unweighted (docs/labels.md).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.store import RunStore

DEFAULT_SEED = 0
BATCH = 20  # the Annotate page's batch: one sample grows by this many answers at a time


def sample_id(seed: int) -> str:
    return f"srs:{int(seed)}"


def order(question_ids: Sequence[str], seed: int) -> list[str]:
    """The seeded random order of a population's questions (independent of input order): by the
    hex sha256 of "<seed>:<question_id>" in UTF-8 (stored labels' inclusion probabilities rest on
    it; tests/analysis/test_corrected.py holds it to that definition)."""
    key = lambda q: hashlib.sha256(f"{int(seed)}:{q}".encode("utf-8")).hexdigest()  # noqa: E731
    return sorted(dict.fromkeys(question_ids), key=key)


def inclusion_prob(position: int, population: int, batch: int = BATCH) -> float:
    """Inclusion probability of the sample an answer at `position` of the order completes."""
    size = math.ceil((position + 1) / batch) * batch
    return min(1.0, size / population)


@dataclass(frozen=True)
class Draw:
    """The next answer to label in a random sample, and where the sample stands."""

    question_id: str | None  # None: every answer of the population is labelled
    position: int
    population: int
    labelled: int  # answers of the population fully labelled so far, in the sample
    sample_id: str
    inclusion_prob: float | None


def next_answer(store: RunStore, run_id: str, method: str, metric: str, seed: int = DEFAULT_SEED,
                skip: Sequence[str] = ()) -> Draw:
    """The first answer in the seeded order that is not fully labelled yet (skipping `skip`)."""
    ans = U.answers(store, run_id, method, metric)
    # an answer labelled by hand earlier is offered again when the order reaches it: only a drawn
    # answer counts, and skipping it would make the sample depend on what people chose to label
    done = set(ans.loc[ans.human.notna() & ans.sampled, "question_id"])
    seq = order(ans["question_id"].tolist(), seed)
    n_done = int((ans.human.notna() & ans.sampled).sum())
    for pos, q in enumerate(seq):
        if q not in done and q not in set(skip):
            return Draw(q, pos, len(seq), n_done, sample_id(seed), inclusion_prob(pos, len(seq)))
    return Draw(None, len(seq), len(seq), n_done, sample_id(seed), None)


def answer_items(store: RunStore, run_id: str, method: str, metric: str, question_id: str) -> pd.DataFrame:
    """The items the whole-answer form offers, each with the judge's label."""
    return U.items_of_answer(store, run_id, method, metric, question_id)
