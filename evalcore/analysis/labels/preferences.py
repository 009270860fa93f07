"""Pairwise preferences: "which answer is better?" over two systems' answers to one question.

Why its own unit: a product manager asks which system is better, and preference data from other
tools (RAGChecker's human meta-evaluation, for one) says it per question and pair. Entered as two
ratings it loses what it is. A preference label (schemas.labels: target_kind "preference") names
one question and a pair of systems (run x method), A and B in the pair's one spelling (A sorts
first), and says A, B or tie. Two runs' systems pair like two methods of one run.

The population of a pair is the questions both systems answered (a response on both sides; ids
paired under the id rule, spelled as system A's run stores them). A random sample walks the
seeded order of sample_order over that population, with the same sample ids, inclusion
probabilities and checks as every sample, so it can be re-checked from the labels alone: the
labelled questions are the first of the order without a gap. The Annotate page shows the two
answers blind, one left and one right; which system is left is drawn per question from the seed
(`left_side`), so it is random yet reproducible, and it is stored with the label (shown_left).
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import pandas as pd

from evalcore.analysis.labels import sample_order as O
from evalcore.analysis.labels.annotations import NEWEST_FIRST, append_labels, of_runs
from evalcore.analysis.read.recent_frames import RecentFrames
from evalcore.schemas import Annotation
from evalcore.schemas.ids import id_sql
from evalcore.schemas.labels import PREFERENCE, RETRACTED, preference_other, preference_ref, sample_id
from evalcore.store import RunStore, query_df

System = tuple[str, str]  # (run_id, method)


@dataclass(frozen=True)
class Pair:
    """Two systems in the pair's one spelling: `a` sorts before `b`."""

    a: System
    b: System

    @property
    def ref(self) -> str:
        """The target_ref of this pair's labels (system B named)."""
        return preference_ref(*self.b)


def pair_of(x: Sequence[str], y: Sequence[str]) -> tuple[Pair, bool]:
    """The pair of two systems, and whether they were given the other way round (`y` is its A)."""
    x, y = (str(x[0]), str(x[1])), (str(y[0]), str(y[1]))
    if x == y:
        raise ValueError(f"a preference compares two different systems, got {x[0]}:{x[1]} twice")
    return (Pair(x, y), False) if x < y else (Pair(y, x), True)


def left_side(seed: int, question_id: str) -> str:
    """Which system ("A" or "B") the page shows on the left for this question: A when the first
    byte of sha256("<seed>:left:<question_id>") is even. Random per question, the same for
    everyone walking the seed, so the mapping from left/right back to systems is reproducible."""
    first = hashlib.sha256(f"{int(seed)}:left:{question_id}".encode("utf-8")).digest()[0]
    return "A" if first % 2 == 0 else "B"


# ---- the population and its labels ----------------------------------------------------------
_POPULATION = RecentFrames(4)
_ANSWERS = RecentFrames(4)


def population(store: RunStore, pair: Pair) -> pd.DataFrame:
    """The questions both systems answered: question_id (as system A's run stores it), key (the id
    under the id rule, what pairs the sides and the metric values) and b_question_id. An id two
    stored questions of one side share under the rule is left out (which one is meant is unknown)."""
    return _POPULATION.get(store, pair, lambda: _population(store, pair))


def _population(store: RunStore, pair: Pair) -> pd.DataFrame:
    sql = f"SELECT question_id, {id_sql('question_id')} AS key FROM responses WHERE run_id = $run AND method = $method"
    sides = []
    for run_id, method in (pair.a, pair.b):
        side = query_df(store, sql, {"run": run_id, "method": method}, runs=[run_id]).drop_duplicates()
        sides.append(side[~side.key.duplicated(keep=False)])
    both = sides[0].merge(sides[1].rename(columns={"question_id": "b_question_id"}), on="key", how="inner")
    return both[["question_id", "key", "b_question_id"]].sort_values("key", ignore_index=True)


def _labels(store: RunStore, pair: Pair) -> pd.DataFrame:
    """The newest label per question of the pair (anyone's): question_id, label, shown_left."""
    return query_df(store, f"""
        SELECT question_id, label, shown_left FROM annotations
        WHERE run_id = $run AND method = $method AND target_kind = '{PREFERENCE}' AND target_ref = $ref
        QUALIFY row_number() OVER (PARTITION BY question_id ORDER BY {NEWEST_FIRST}) = 1""",
                    {"run": pair.a[0], "method": pair.a[1], "ref": pair.ref})


def sample_rows(store: RunStore, pair: Pair) -> pd.DataFrame:
    """Every stored label of the pair naming a sample: question_id, sample_id, inclusion_prob, in
    the order they arrived."""
    return query_df(store, f"""
        SELECT question_id, sample_id, inclusion_prob FROM annotations
        WHERE run_id = $run AND method = $method AND target_kind = '{PREFERENCE}' AND target_ref = $ref
          AND sample_id IS NOT NULL ORDER BY arrival""", {"run": pair.a[0], "method": pair.a[1], "ref": pair.ref})


def checks(store: RunStore, pair: Pair, labelled: set[str] | None = None) -> tuple[O.SampleCheck, ...]:
    """Each sample id's labels of the pair, checked against its seed's order over the population
    (`labelled`: the questions with a label that counts; read from the store when None)."""
    rows = sample_rows(store, pair)
    if rows.empty:
        return ()
    if labelled is None:
        newest = _labels(store, pair)
        labelled = set(newest.loc[newest.label != RETRACTED, "question_id"])
    return tuple(O.check_population(population(store, pair)["question_id"].tolist(), labelled,
                                    zip(rows.sample_id, [None] * len(rows), rows.question_id, rows.inclusion_prob)))


def answers(store: RunStore, pair: Pair) -> pd.DataFrame:
    """One row per question of the population: question_id, key, label (the newest, None when
    there is none or it was taken back) and sampled (drawn by the pair's verified random sample,
    the one that feeds estimates)."""
    return _ANSWERS.get(store, pair, lambda: _answers(store, pair))


def _answers(store: RunStore, pair: Pair) -> pd.DataFrame:
    pop = population(store, pair)
    newest = _labels(store, pair)
    newest = newest[newest.label != RETRACTED]
    out = pop[["question_id", "key"]].merge(newest[["question_id", "label"]], on="question_id", how="left")
    out["label"] = out["label"].astype(object).where(out["label"].notna(), None)
    feeds = O.chosen(checks(store, pair, set(newest.question_id)))
    out["sampled"] = out["question_id"].isin(feeds.drawn if feeds else ())
    return out


# ---- drawing the next question, and saving a label -------------------------------------------
@dataclass(frozen=True)
class PairDraw:
    """The next question of a pair's random sample, and where the sample stands."""

    question_id: str | None  # None: every question of the population is labelled (as system A stores it)
    b_question_id: str | None  # the same question as system B's run stores it
    position: int
    population: int
    labelled: int  # questions labelled in the sample that feeds estimates
    sample_id: str
    inclusion_prob: float | None
    left: str | None  # the system shown on the left ("A" or "B")


def next_question(store: RunStore, pair: Pair, seed: int = O.DEFAULT_SEED) -> PairDraw:
    """The first question of the seed's order its sample has not labelled yet. A question
    labelled by hand (or in another sample) earlier is offered again: only a drawn one counts."""
    ans = answers(store, pair)
    pop = population(store, pair)
    b_ids = dict(zip(pop["question_id"], pop["b_question_id"]))
    sid = sample_id(seed)
    mine = next((c for c in checks(store, pair) if c.sample_id == sid), None)
    done = set(ans.loc[ans.label.notna() & ans.question_id.isin(mine.drawn if mine else ()), "question_id"])
    seq = O.order(ans["question_id"].tolist(), seed)
    n_done = int((ans.label.notna() & ans.sampled).sum())
    waiting = ((pos, q) for pos, q in enumerate(seq) if q not in done)
    for pos, q in itertools.islice(waiting, 1):
        return PairDraw(q, b_ids[q], pos, len(seq), n_done, sid, O.inclusion_prob(pos, len(seq)), left_side(seed, q))
    return PairDraw(None, None, len(seq), len(seq), n_done, sid, None, None)


def build(pair: Pair, question_id: str, who: str, label: str, *, left: str | None = None, note: str | None = None,
          sample: tuple[Any, Any] | None = None, when: Any = None) -> Annotation:
    """One preference label (`label` A, B or tie of this pair's A and B; `left`: the system shown
    on the left; `sample`: (sample id, inclusion probability); `when`: default now). The
    Annotation contract checks every field (a pydantic ValidationError names the one at fault)."""
    sid, prob = sample if sample else (None, None)
    return Annotation(annotation_id=uuid.uuid4().hex, who=who, run_id=pair.a[0], method=pair.a[1],
                      question_id=question_id, target_kind=PREFERENCE, target_ref=pair.ref, judge_label=None,
                      label=label, note=note, sample_id=sid, inclusion_prob=prob, shown_left=left,
                      **({"when": when} if when is not None else {}))


def save(store: RunStore, pair: Pair, draw: PairDraw, who: str, label: str, note: str | None = None) -> Annotation:
    """Append the label of a drawn question (with its sample and the side shown left)."""
    a = build(pair, draw.question_id, who, label, left=draw.left, note=note or None,
              sample=(draw.sample_id, draw.inclusion_prob))
    append_labels(store, [a])
    return a


# ---- the pairs that hold labels, and `store check` --------------------------------------------
def labelled_pairs(store: RunStore, sampled_only: bool = True, runs: Sequence[str] | None = None) -> set[Pair]:
    """Every pair with a preference label (`sampled_only`: one naming a random sample). `runs`:
    pairs labelled in those runs only, on their database (annotations.of_runs)."""
    rows = of_runs(store, f"""SELECT DISTINCT run_id, method, target_ref FROM annotations
                              WHERE target_kind = '{PREFERENCE}' AND (NOT $sampled OR sample_id IS NOT NULL)""",
                   {"sampled": sampled_only}, runs)
    out = set()
    for run_id, method, ref in rows.itertuples(index=False, name=None):
        other = preference_other(ref)
        if other is not None and (run_id, method) < other:
            out.add(Pair((run_id, method), other))
    return out


def _problem_text(problem: O.Problem) -> str:
    """A sample problem in a pair's words (a pair's population is the questions both answered)."""
    if problem.field == "question_id":
        return (f"question {problem.question_id!r} is not answered by both systems (deleted, or rescored "
                "since): no sample of the pair draws it")
    return problem.message


def findings(store: RunStore, run_id: str) -> list[str]:
    """One line per stored preference sample of a pair whose A is in this run that fails its
    order (its labels count as hand-picked), and per pair holding two verified samples."""
    out = []
    for pair in sorted(p for p in labelled_pairs(store) if p.a[0] == run_id):
        out.extend(O.findings(f"preference {pair.a[1]} vs {pair.b[0]}:{pair.b[1]}", checks(store, pair),
                              _problem_text))
    return out
