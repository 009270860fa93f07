"""Random-sample labelling: which answers a person labels next so the labels can feed estimates.

Why: prediction-powered inference is valid only when the labelled answers are a uniform random
sample of the population (run x method x metric); answers an annotator picks by hand (odd-looking
verdicts, the first page of a queue) are not. The sample walks a seeded random order of the
population's question ids (evalcore.analysis.labels.sample_order: the order of sha256("<seed>:<question_id>"))
from the top, so the answers labelled so far are always a prefix of a random permutation: a simple
random sample. Because the order depends only on the seed and the question id, every method of a
run and every run over the same questions get the same order, so the first n questions are
labelled on both sides of a comparison (the paired corrected delta needs exactly that).

Each label records the draw: sample_id "srs:<seed>" and the inclusion probability of the sample
it completes (sample_order.inclusion_prob). The Annotate page and `evalcore labels targets` both
take their answers from `next_answers` here, so the page's numbering and the CLI's template agree.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels.sample_order import BATCH, DEFAULT_SEED, inclusion_prob, order, sample_id
from evalcore.store import RunStore

__all__ = ["BATCH", "DEFAULT_SEED", "Draw", "answer_items", "inclusion_prob", "next_answer", "next_answers", "order",
           "sample_id"]


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
    return next_answers(store, run_id, method, metric, seed, 1, skip)[0]


def next_answers(store: RunStore, run_id: str, method: str, metric: str, seed: int = DEFAULT_SEED,
                 n: int = 1, skip: Sequence[str] = ()) -> list[Draw]:
    """The next `n` answers of the seed's order that its sample has not fully labelled yet, in
    order (fewer at the end of the order; one Draw with question_id None when none is left).
    Done means fully labelled *by this seed's sample*: an answer labelled by hand earlier is
    offered again when the order reaches it, since only a drawn answer counts, and skipping it
    would make the sample depend on what people chose to label."""
    ans = U.answers(store, run_id, method, metric)
    mine = next((c for c in U.samples(store, run_id, method, metric) if c.sample_id == sample_id(seed)), None)
    done = set(ans.loc[ans.human.notna() & ans.question_id.isin(mine.drawn if mine else ()), "question_id"])
    seq = order(ans["question_id"].tolist(), seed)
    n_done = int((ans.human.notna() & ans.sampled).sum())
    skip = set(skip)
    left = ((pos, q) for pos, q in enumerate(seq) if q not in done and q not in skip)
    out = [Draw(q, pos, len(seq), n_done, sample_id(seed), inclusion_prob(pos, len(seq)))
           for pos, q in itertools.islice(left, max(1, n))]
    return out or [Draw(None, len(seq), len(seq), n_done, sample_id(seed), None)]


def answer_items(store: RunStore, run_id: str, method: str, metric: str, question_id: str) -> pd.DataFrame:
    """The items the whole-answer form offers, each with the judge's label."""
    return U.items_of_answer(store, run_id, method, metric, question_id)
