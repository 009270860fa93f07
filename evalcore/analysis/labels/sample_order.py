"""The seeded order a random sample walks, and the check that stored labels really walked it.

Why: prediction-powered inference is valid only when the labelled answers are a uniform random
sample of the population (one run x method x metric). A label merely *saying* it was drawn at
random proves nothing: sixty answers picked by hand because the judge called them CORRECT,
imported with `srs:3` and a made-up probability, gave a confident interval far from the truth.
What makes a sample random here is the order: the population's question ids sorted by the hex
sha256 of "<seed>:<question_id>" (UTF-8, the id as the run stores it), walked from the top. So a
stored sample can be re-checked from the labels alone:

* its labelled answers are the first answers of its seed's order: reading the order from the top,
  fully labelled answers, then (the one being labelled) answers labelled only in part, then
  answers not labelled; nothing labelled after a gap;
* each label's inclusion probability is the one its position gives: an answer at position k
  (0-based) completes the sample of size ceil((k+1)/BATCH)*BATCH, so the probability is that
  size / N, capped at 1 (the Annotate page records exactly this);
* every labelled answer belongs to the population.

Labels of a sample that fails any of these never feed an estimate (they count as hand-picked);
`labels import` refuses them, `store check` reports them. A sample that passes is the first n
answers of a random permutation, i.e. a simple random sample of size n, whatever the recorded
batch probabilities: that is why the estimators are unweighted. One population may hold labels of
several seeds (the Annotate page takes `?seed=`); their union is no random sample, so one of them
feeds the estimates: the verified sample with the most fully labelled answers (ties: the lower
seed). Nothing here reads the store (evalcore.analysis.labels.label_units and sample_audit do).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Hashable, Iterable, Sequence

from evalcore.schemas.labels import SAMPLE_GRAMMAR, sample_id, sample_seed

DEFAULT_SEED = 0
BATCH = 20  # the Annotate page's batch: one sample grows by this many answers at a time
PROB_TOLERANCE = 1e-9  # relative: a probability written by another program may differ in the last digit

__all__ = ["BATCH", "DEFAULT_SEED", "SampleCheck", "Problem", "chosen", "check_population", "findings", "inclusion_prob",
           "order", "sample_id", "sample_seed", "verify"]


def order(question_ids: Sequence[str], seed: int) -> list[str]:
    """The seeded random order of a population's questions (independent of input order): by the
    hex sha256 of "<seed>:<question_id>" in UTF-8 (stored labels' inclusion probabilities rest on
    it; tests/analysis/test_corrected.py holds it to that definition)."""
    return list(_order(tuple(dict.fromkeys(question_ids)), int(seed)))


@lru_cache(maxsize=8)
def _order(question_ids: tuple[str, ...], seed: int) -> tuple[str, ...]:
    # kept for the last few populations: a page's estimate, its next draw and its check all walk
    # the same order (about 0.1 s to build at 100,000 answers)
    return tuple(sorted(question_ids, key=lambda q: hashlib.sha256(f"{seed}:{q}".encode("utf-8")).hexdigest()))


def inclusion_prob(position: int, population: int, batch: int = BATCH) -> float:
    """Inclusion probability of the sample an answer at `position` of the order completes."""
    size = math.ceil((position + 1) / batch) * batch
    return min(1.0, size / population)


@dataclass(frozen=True)
class Problem:
    """Why one label does not belong to its sample: `tag` is the caller's name for the label (a
    file's record number, or None for a stored label), `field` the record field at fault."""

    tag: Hashable
    question_id: str
    field: str
    message: str
    gap: str | None = None  # the earlier answer of the order left unlabelled, when that is the fault


@dataclass(frozen=True)
class SampleCheck:
    """One sample id's labels in one population, checked against the order its seed gives
    (frozen: kept between page renders and handed to every caller as it is)."""

    sample_id: str
    seed: int | None  # None: the id does not follow the grammar
    drawn: frozenset[str] = frozenset()  # answers with a label of this sample
    full: int = 0  # of those, fully labelled (the first `full` answers of the order when ok)
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return self.seed is not None and not self.problems


# One label of a sample: (tag, question_id, inclusion_prob).
Row = tuple[Hashable, str, float]


def verify(sample: str, seq: Sequence[str], full: set[str], rows: Iterable[Row]) -> list[Problem]:
    """Every label among `rows` (all of sample `sample`) that breaks the rules of the module
    docstring, one Problem per offending label, in the order given. `seq`: the population in its
    seed's order; `full`: the population's fully labelled answers."""
    rows = list(rows)
    named = {q for _, q, _ in rows}
    position = {q: p for p, q in enumerate(seq) if q in named}  # the drawn answers' places only
    last = max(position.values(), default=-1)
    # 2: fully labelled, 1: labelled in part, 0: no label of this sample; along a sample's
    # order the state never rises (read up to its last labelled answer)
    state = [(2 if q in full else 1) if q in position else 0 for q in seq[:last + 1]]
    first_below = {2: next((p for p, s in enumerate(state) if s < 2), last + 1),
                   1: next((p for p, s in enumerate(state) if s < 1), last + 1)}
    out = []
    for tag, q, prob in rows:
        if q not in position:
            out.append(Problem(tag, q, "question_id", f"question {q!r} is not in the population (an answer "
                               "with the metric's judge value and an item to label): no sample draws it"))
            continue
        p, s = position[q], state[position[q]]
        gap = first_below[s]
        if gap < p:
            how = "is not labelled" if state[gap] == 0 else "is not fully labelled (a label missing or taken back)"
            out.append(Problem(tag, q, "sample_id", f"question {q!r} is answer {p + 1} of {len(seq)} in the {sample} "
                               f"order, but answer {gap + 1} ({seq[gap]!r}) {how}: a random sample is the first "
                               "answers of its order, with no gap", gap=seq[gap]))
            continue
        want = inclusion_prob(p, len(seq))
        if not (isinstance(prob, (int, float)) and math.isclose(prob, want, rel_tol=PROB_TOLERANCE)):
            out.append(Problem(tag, q, "inclusion_prob", f"inclusion_prob {prob!r} does not match the place of "
                               f"question {q!r} in the {sample} order: answer {p + 1} of {len(seq)} has {want!r} "
                               f"(ceil({p + 1}/{BATCH})*{BATCH}/{len(seq)}, at most 1)"))
    return out


def check_population(population: Sequence[str], full: set[str], rows: Iterable[tuple[str, Hashable, str, float]]
                     ) -> list[SampleCheck]:
    """Each sample id's labels in one population, checked. `rows`: (sample_id, tag, question_id,
    inclusion_prob) of every label carrying a sample id; `population`: its question ids."""
    by_sample: dict[str, list[Row]] = defaultdict(list)
    for sid, tag, q, prob in rows:
        by_sample[sid].append((tag, q, prob))
    checks = []
    for sid, labels in sorted(by_sample.items()):
        seed = sample_seed(sid)
        drawn = frozenset(q for _, q, _ in labels)
        if seed is None:
            problems = [Problem(tag, q, "sample_id", f"sample_id {sid!r} is not a sample id ({SAMPLE_GRAMMAR})")
                        for tag, q, _ in labels]
        else:
            problems = verify(sid, order(population, seed), full, labels)
        checks.append(SampleCheck(sid, seed, drawn, len(drawn & full), tuple(problems)))
    return checks


def chosen(checks: Sequence[SampleCheck]) -> SampleCheck | None:
    """The sample that feeds a population's estimates: the verified one with the most fully
    labelled answers (ties: the lower seed); None when no sample verifies."""
    good = [c for c in checks if c.ok and c.full]
    return min(good, key=lambda c: (-c.full, c.seed)) if good else None


def findings(name: str, checks: Sequence[SampleCheck], problem_text: Callable[[Problem], str]) -> list[str]:
    """`store check`'s lines about one population's samples (`name`: how the line names it): each
    sample that fails its order (its labels count as hand-picked), and more than one verified
    sample (only `chosen` feeds estimates: their union is not random)."""
    out = [f"sample {c.sample_id!r} of {name}: {len(c.problems)} label(s) do not make a random sample, so none "
           f"of its labels feed an estimate (they count as hand-picked). First: {problem_text(c.problems[0])}"
           for c in checks if not c.ok]
    good = [c for c in checks if c.ok and c.full]
    if len(good) > 1:
        out.append(f"{name} holds {len(good)} random samples ({', '.join(c.sample_id for c in good)}); their "
                   f"union is not random, so only {chosen(good).sample_id} (most answers labelled) feeds estimates")
    return out
