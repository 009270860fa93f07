"""Checking random samples where labels enter the store and where the store is checked.

Why: a label's sample id and inclusion probability are claims; the rules of
evalcore.analysis.labels.sample_order decide whether they hold. Two places apply them beyond the
estimates themselves:

* `labels import` (evalcore.analysis.labels.labels_io) checks a file's sample labels *together with the labels
  already stored*, before anything is appended: the answers a sample has labelled after the
  import must still be the first answers of its seed's order, each with the probability its place
  gives. Whether an answer is fully labelled after the import follows the store's one rule for
  the label that counts (annotations.NEWEST_FIRST), run in memory over the stored labels and the
  file's, so the check sees exactly what the store will read.
* `store check` re-verifies every stored sample (a run rescored since, with answers gained or
  lost, no longer matches the order its labels walked) and names each that fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence

import pandas as pd

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels import sample_order as O
from evalcore.analysis.labels.annotations import NEWEST_FIRST
from evalcore.schemas import Annotation
from evalcore.schemas.labels import PREFERENCE, RETRACTED, preference_other
from evalcore.store import RunStore, query_df, query_frame


def metric_of(kind: str, target_ref: str) -> str:
    """The metric a label's item belongs to (claims `metric:source:idx`, contexts `metric:rank`,
    answer-level labels the metric itself)."""
    return target_ref.split(":", 1)[0] if kind in ("claim", "context") else target_ref


@dataclass(frozen=True)
class FileLabel:
    """One record of an import: where it sits in the file, its metric, and the label it makes
    (None: a template row left empty, "not yet labelled")."""

    record: int
    run_id: str
    method: str
    metric: str
    question_id: str
    sample_id: str | None
    annotation: Annotation | None


@dataclass(frozen=True)
class Refusal:
    record: int
    field: str
    message: str


def check_file(store: RunStore, records: Sequence[FileLabel]) -> Refusal | None:
    """The first record (in file order) that would leave a population's sample not random, or
    None. Each population (run x method x metric) with sample labels in the file is checked
    whole: one seed per population and file, no second sample beside a verified one, and the
    stored and new labels together a gap-free start of the seed's order with matching
    probabilities."""
    found: list[Refusal] = []
    # populations the file adds sample labels to (a file's hand-picked labels never claim a sample)
    for key in dict.fromkeys((r.run_id, r.method, r.metric) for r in records
                             if r.sample_id is not None and r.annotation is not None):
        mine = [r for r in records if (r.run_id, r.method, r.metric) == key]
        refusal = _check_population(store, key, mine)
        if refusal is not None:
            found.append(refusal)
    return min(found, key=lambda r: r.record) if found else None


def _population(store: RunStore, key: tuple[str, str, str]
                ) -> tuple[tuple[O.SampleCheck, ...], list[str], pd.DataFrame, str]:
    """What a population's sample is checked against: its stored samples, its question ids, its
    stored sample rows, and its name. A pairwise preference's population is its pair's questions
    (the FileLabel's `metric` is the pair's target_ref; analysis.labels.preferences)."""
    run_id, method, metric = key
    other = preference_other(metric)
    if other is not None:
        pair = PF.Pair((run_id, method), other)
        return (PF.checks(store, pair), PF.population(store, pair)["question_id"].tolist(), PF.sample_rows(store, pair),
                f"the preferences of {run_id}:{method} vs {other[0]}:{other[1]}")
    return (U.samples(store, run_id, method, metric), U.answers(store, run_id, method, metric)["question_id"].tolist(),
            U.sample_rows(store, run_id, method, metric), f"{run_id}/{method}/{metric}")


def _check_population(store: RunStore, key: tuple[str, str, str], records: list[FileLabel]) -> Refusal | None:
    stored, population, rows, where = _population(store, key)
    drawn = [r for r in records if r.sample_id is not None]
    sid, first = drawn[0].sample_id, drawn[0].record
    other = next((r for r in drawn if r.sample_id != sid), None)
    if other is not None:
        return Refusal(other.record, "sample_id", f"a second sample id for {where}: record {first} names {sid}, this "
                       f"one {other.sample_id}; one population takes one seed's sample (their union is not random)")
    rival = O.chosen([c for c in stored if c.sample_id != sid])
    if rival is not None and not any(c.sample_id == sid for c in stored):
        return Refusal(first, "sample_id", f"{where} already holds the random sample {rival.sample_id} ({rival.full} "
                       f"answers labelled); a second seed would start a second sample beside it: label on "
                       f"{rival.sample_id}, or import with --as-hand-picked")
    rows = rows[rows.sample_id == sid]
    labels = [r for r in drawn if r.annotation is not None]
    qids = set(rows.question_id) | {r.question_id for r in labels}
    full = _full_after(store, key, [r.annotation for r in records if r.annotation is not None], qids)
    problems = O.verify(sid, O.order(population, O.sample_seed(sid)), full,
                        [(None, q, p) for q, p in zip(rows.question_id, rows.inclusion_prob)]
                        + [(r.record, r.question_id, r.annotation.inclusion_prob) for r in labels])
    return _first(problems, records, sid, where, first)


def _first(problems: list[O.Problem], records: list[FileLabel], sid: str, where: str, first: int) -> Refusal | None:
    """The refusal naming the earliest record at fault: a template row left empty where the
    sample has a gap, else the record whose label breaks the order (a stored label breaking it:
    the file's first record of the sample, since the stored labels alone may have passed)."""
    if not problems:
        return None
    out = []
    empty: dict[str, int] = {}
    for r in records:
        if r.annotation is None and r.sample_id == sid:
            empty.setdefault(r.question_id, r.record)
    for p in problems:
        if p.gap in empty:
            later = f"record {p.tag}" if p.tag is not None else "already stored"
            out.append(Refusal(empty[p.gap], "label", f"question {p.gap!r} is left unlabelled, but an answer after it "
                               f"in the {sid} order is labelled ({p.question_id!r}, {later}): a random sample may "
                               "leave only its last answers unlabelled"))
        elif p.tag is not None:
            out.append(Refusal(p.tag, p.field, p.message))
    if out:
        return min(out, key=lambda r: r.record)
    return Refusal(first, "sample_id", f"the labels {where} already holds for {sid} would no longer be a random "
                   f"sample with this file's: {problems[0].message} (`evalcore store check` lists stored samples "
                   "that fail; --as-hand-picked imports the file as hand-picked)")


def _full_after(store: RunStore, key: tuple[str, str, str], new: list[Annotation], qids: set[str]) -> set[str]:
    """Which of `qids` every item of which would have a label (the newest one not a retraction)
    once `new` is appended: the store's newest-label rule, run over stored + new labels."""
    run_id, method, metric = key
    if not qids:
        return set()
    if preference_other(metric) is not None:  # a preference: one item per question, the pair
        kind, items = PREFERENCE, pd.DataFrame({"question_id": sorted(qids), "target_ref": metric})
    else:
        kind = U.unit(metric).kind
        items = U.items_for(store, run_id, method, metric, sorted(qids))
    old = query_df(store, """SELECT question_id, target_ref, label, "when", arrived_at, arrival FROM annotations
                             WHERE run_id = $run AND method = $method AND target_kind = $kind
                               AND list_contains($qids, question_id)""",
                   {"run": run_id, "method": method, "kind": kind, "qids": sorted(qids)})
    now = datetime.now(timezone.utc)
    # the file arrives now and after every stored label; its rows in file order
    fresh = pd.DataFrame([{"question_id": a.question_id, "target_ref": a.target_ref, "label": a.label,
                           "when": a.when, "arrived_at": now, "arrival": f"\U0010ffff#{i:012d}"}
                          for i, a in enumerate(new) if a.question_id in qids and a.target_kind == kind])
    both = pd.concat([old, fresh], ignore_index=True) if len(fresh) else old
    if both.empty:
        return set()
    both["when"] = pd.to_datetime(both["when"], utc=True)
    both["arrived_at"] = pd.to_datetime(both["arrived_at"], utc=True)
    newest = query_frame(f"""SELECT question_id, target_ref, label FROM labels
                             QUALIFY row_number() OVER (PARTITION BY question_id, target_ref
                                                        ORDER BY {NEWEST_FIRST}) = 1""", labels=both)
    done = newest[newest.label != RETRACTED]
    merged = items.merge(done, on=["question_id", "target_ref"], how="left")
    per = merged.groupby("question_id")["label"].agg(lambda s: s.notna().all())
    return set(per[per].index)


def findings(store: RunStore, run_id: str) -> list[str]:
    """One line per stored sample of the run that fails its order (its labels count as
    hand-picked), and per population holding two verified samples (only one feeds estimates);
    pairwise preference samples included (analysis.labels.preferences.findings)."""
    pops = query_df(store, "SELECT DISTINCT method, target_kind, target_ref FROM annotations "
                           "WHERE run_id = $run AND sample_id IS NOT NULL AND target_kind <> 'preference'",
                    {"run": run_id})
    keys = sorted({(m, metric_of(k, r)) for m, k, r in zip(pops.method, pops.target_kind, pops.target_ref)})
    out = []
    for method, metric in keys:
        out.extend(O.findings(f"{method}/{metric}", U.samples(store, run_id, method, metric), lambda p: p.message))
    return out + PF.findings(store, run_id)  # a pair's samples (preferences) are checked the same way


__all__ = ["FileLabel", "Refusal", "check_file", "findings", "metric_of"]
