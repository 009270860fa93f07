"""Human labels from elsewhere (Label Studio, Argilla, a spreadsheet) in, and the store's labels out.

Why: teams label where they already work; their labels should correct the same numbers the
Annotate page's do. One flat record per label, the same fields both ways (an export re-imports):

  run, method, question_id   the answer (run id, unique prefix or name)
  metric                     what the label is about (docs/labels.md: which metric maps how)
  target                     claim index (faithfulness, context_recall) or context rank
                             (context_precision); empty for per-answer labels
  label                      the verdict word (supported / not_supported, relevant / not_relevant,
                             CORRECT / WRONG / DONT_KNOW, a grade A-E) or a 0-1 rating
  who                        the person
  sample_id, inclusion_prob  optional, together: the item was drawn at random (else hand-picked);
                             `srs:<seed>` (schemas.labels' one grammar) and the probability its
                             place in the seed's order gives
  note                       optional free text, kept exactly (outer spaces too: only ids and
                             `who` follow the id rule)
  when                       optional ISO 8601 time (a number is refused: seconds, milliseconds
                             and YYYYMMDD cannot be told apart); never in the future

The same rules as every import: the whole file is checked before anything is stored, and the
first bad record is refused with one line naming file, record and field (nothing stored).
A label claiming a random sample is checked against the sample as a whole
(evalcore.analysis.labels.sample_audit): its sample's labelled answers, stored and new, must be the
first answers of the seed's order, each with its place's probability. A file that fails can be
imported with `as_hand_picked`: every label stored hand-picked, never feeding an estimate. A
`labels targets` template re-imports as it is: its extra columns (TEMPLATE_FIELDS) are read and
dropped, and its rows still without a label are "not yet labelled".
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from evalcore.analysis.labels import label_units as U
from evalcore.analysis.labels import preference_io as PIO
from evalcore.analysis.labels import sample_audit
from evalcore.analysis.labels.label_targets import TEMPLATE_FIELDS
from evalcore.analysis.labels.annotations import COUNTED_WHEN
from evalcore.datasets.records import read_records
from evalcore.errors import InputError, StoreError, from_validation
from evalcore.schemas import Annotation
from evalcore.schemas.ids import canonical_id, match_name
from evalcore.common.csv_safety import rows_to_csv
from evalcore.schemas.labels import (RETRACTED, SAMPLE_GRAMMAR, AnswerClass, Grade, claim_verdict, context_verdict,
                                     sample_seed)
from evalcore.store import RunStore, query_df

FIELDS = ["run", "method", "question_id", "metric", "target", "label", "who", "when", "note",
          "sample_id", "inclusion_prob", "judge_label", *PIO.FIELDS]  # the last: pairwise preferences
REQUIRED = ("run", "method", "question_id", "metric", "label", "who")


def _text(rec: dict[str, Any], name: str) -> str | None:
    """A field that names something (ids, who, metric, label, ...): without outer whitespace,
    None when empty (the id rule itself is applied where the name is used)."""
    v = _raw(rec, name)
    v = v.strip() if v is not None else None
    return v or None


def _raw(rec: dict[str, Any], name: str) -> str | None:
    """A field as text, exactly as the file holds it; None when missing, NaN or empty."""
    v = rec.get(name)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v) or None


class _Items:
    """The labellable items of each (run, method, metric), loaded once per import, keyed by the
    question id under the id rule (evalcore.schemas.ids) -> (the id as stored, judge label): a
    file's "café" finds the answer a run stored as "cafe\u0301"."""

    def __init__(self, store: RunStore):
        self.store = store
        self.cache: dict[tuple[str, str, str], dict[tuple[str, str], tuple[str, str | None]]] = {}
        self.methods: dict[str, list[str]] = {}

    def get(self, run_id: str, method: str, metric: str) -> dict[tuple[str, str], tuple[str, str | None]]:
        key = (run_id, method, metric)
        if key not in self.cache:
            items = U.label_items(self.store, run_id, method, metric)
            self.cache[key] = {(canonical_id(q), ref): (q, j)
                               for q, ref, j in zip(items.question_id, items.target_ref, items.judge_label)}
        return self.cache[key]

    def method(self, run_id: str, typed: str) -> str:
        """The method `typed` names, as the run stores it (a run written before the id rule may
        hold "alpha " or an NFD name); the canonical form when the run has no such method."""
        if run_id not in self.methods:
            self.methods[run_id] = self.store.manifest(run_id).methods
        return match_name(typed, self.methods[run_id]) or canonical_id(typed)


def _label(kind: str, raw: str, file: str, recno: int) -> str:
    """The store's word for a person's label of this kind (synonyms a labelling tool writes,
    like yes/no or lower-case classes, are mapped once here). A retraction re-imports as one."""
    if raw == RETRACTED:
        return raw
    if kind == "claim":
        v = claim_verdict(raw)
    elif kind == "context":
        v = context_verdict(raw)
    elif kind == "answer_class":
        v = AnswerClass(raw.upper()) if raw.upper() in set(AnswerClass) else None
    elif kind == "grade":
        v = Grade(raw.upper()) if raw.upper() in set(Grade) else None
    else:
        if math.isnan(U.rating_value(raw)):
            _bad(file, recno, "label", f"{raw!r} is not a rating between 0 and 1")
        return raw
    if v is None:
        words = {"claim": "supported / not_supported", "context": "relevant / not_relevant",
                 "answer_class": "CORRECT / WRONG / DONT_KNOW", "grade": "A, B, C, D or E"}[kind]
        _bad(file, recno, "label", f"{raw!r} is not a {kind} label ({words})")
    return str(v.value)


def _bad(file: str, recno: int, field: str, message: str):
    raise InputError(file, message, record=recno, field=field)


def _ref(unit: U.Unit, metric: str, target: str | None, file: str, recno: int) -> str:
    """The store's target_ref for a record's metric + target."""
    if unit.kind in ("claim", "context"):
        if target is None or not target.lstrip("-").isdigit():
            what = "claim index" if unit.kind == "claim" else "context rank"
            _bad(file, recno, "target", f"{metric} labels need the {what} as a whole number, got {target!r}")
        return f"{metric}:{unit.source}:{int(target)}" if unit.kind == "claim" else f"{metric}:{int(target)}"
    if target not in (None, metric):
        _bad(file, recno, "target", f"{metric} is labelled per answer: leave target empty (got {target!r})")
    return metric


def parse(store: RunStore, path: str | Path, as_hand_picked: bool = False, kind: str = PIO.LABEL_KIND
          ) -> list[Annotation]:
    """Every label of the file as Annotations, or an InputError for the first bad record: each
    record on its own first, then each population's sample as a whole (sample_audit: the
    labelled answers a gap-free start of the seed's order, each probability its place's).
    `as_hand_picked`: every label is stored hand-picked (sample fields dropped, never feeding an
    estimate). A template row (`labels targets`) whose label is still empty is "not yet
    labelled": skipped, allowed only after the sample's last labelled answer. `kind`: what a
    record without a `kind` is (preference_io: a pairwise preference, or a label of a metric)."""
    file = str(path)
    records = list(_records(store, path, as_hand_picked, kind))
    out = [r.annotation for r in records if r.annotation is not None]
    if not out:
        raise InputError(file, "no labels found (every record's label is empty: not yet labelled)"
                         if records else "no records found")
    if not as_hand_picked:
        refusal = sample_audit.check_file(store, records)
        if refusal is not None:
            _bad(file, refusal.record, refusal.field, refusal.message)
    return out


def _records(store: RunStore, path: str | Path, as_hand_picked: bool,
             default_kind: str = PIO.LABEL_KIND) -> Iterator[sample_audit.FileLabel]:
    """Each record checked on its own, as a FileLabel (its Annotation None for a template row not
    labelled yet); a pairwise preference by preference_io."""
    file = str(path)
    items = _Items(store)
    systems = PIO.Systems(store, file)
    runs: dict[str, str] = {}
    for recno, rec in read_records(path):
        if PIO.record_kind(_text(rec, PIO.KIND_FIELD), default_kind, file, recno) == PIO.PREFERENCE:
            if as_hand_picked:
                rec = {k: v for k, v in rec.items() if k not in ("sample_id", "inclusion_prob")}
            _known_fields(rec, file, recno)
            yield PIO.file_label(store, systems, rec, recno, _text, _raw)
            continue
        # a template row left empty: no label yet (and no person); its place in the sample is
        # checked with the others
        pending = _text(rec, "label") is None and _text(rec, "sample_id") is not None
        if as_hand_picked:
            rec = {k: v for k, v in rec.items() if k not in ("sample_id", "inclusion_prob")}
        PIO.refuse_foreign_fields(rec, _text, file, recno)
        for name in REQUIRED:
            if _text(rec, name) is None and not (pending and name in ("label", "who")):
                _bad(file, recno, name, "required field is missing or empty")
        _known_fields(rec, file, recno)
        ref_in = _text(rec, "run")
        if ref_in not in runs:
            try:
                runs[ref_in] = store.resolve(ref_in)
            except StoreError as exc:
                _bad(file, recno, "run", str(exc))
        run_id, metric = runs[ref_in], _text(rec, "metric")
        qid, method = canonical_id(_text(rec, "question_id")), items.method(run_id, _text(rec, "method"))
        unit = U.unit(metric)
        ref = _ref(unit, metric, _text(rec, "target"), file, recno)
        known = items.get(run_id, method, metric)
        if not known:
            _bad(file, recno, "method" if not _has_method(store, run_id, method) else "metric",
                 f"run {run_id} has no {metric} verdicts for method {method!r}")
        if (qid, ref) not in known:
            field = "target" if any(q == qid for q, _ in known) else "question_id"
            _bad(file, recno, field, f"no {metric} item {ref!r} for question {qid!r} of {run_id}/{method}")
        stored_qid, judge_label = known[(qid, ref)]
        sid = _text(rec, "sample_id")
        if sid is not None and sample_seed(sid) is None:
            _bad(file, recno, "sample_id", f"{sid!r} is not a sample id: write {SAMPLE_GRAMMAR}, or leave "
                 "sample_id and inclusion_prob empty for a hand-picked label")
        a = None if pending else _annotation(rec, file, recno, run_id, method, stored_qid, unit, ref, judge_label)
        yield sample_audit.FileLabel(recno, run_id, method, metric, stored_qid, sid, a)


def _known_fields(rec: dict[str, Any], file: str, recno: int) -> None:
    unknown = sorted(set(rec) - set(FIELDS) - set(TEMPLATE_FIELDS))
    if unknown:
        _bad(file, recno, unknown[0], f"unknown field (fields: {', '.join(FIELDS)})")


def _annotation(rec: dict[str, Any], file: str, recno: int, run_id: str, method: str, qid: str, unit: U.Unit,
                ref: str, judge_label: str | None) -> Annotation:
    label = _label(unit.kind, _text(rec, "label"), file, recno)
    prob, sid = _text(rec, "inclusion_prob"), _text(rec, "sample_id")
    try:
        when = _text(rec, "when")
        return Annotation(annotation_id=uuid.uuid4().hex, who=_text(rec, "who"),
                          when=when or datetime.now(timezone.utc), run_id=run_id, method=method, question_id=qid,
                          target_kind=unit.kind, target_ref=ref, judge_label=judge_label, label=label,
                          note=_raw(rec, "note"), sample_id=sid,
                          inclusion_prob=float(prob) if prob is not None and _is_number(prob) else prob)
    except ValidationError as exc:
        err = from_validation(file, recno, exc)
        if err.field is None and "go together" in err.detail:
            err = InputError(file, err.detail, record=recno, field="inclusion_prob")
        raise err from exc


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _has_method(store: RunStore, run_id: str, method: str) -> bool:
    return method in store.manifest(run_id).methods


def import_labels(store: RunStore, path: str | Path, as_hand_picked: bool = False, kind: str = PIO.LABEL_KIND) -> int:
    """Validate the whole file, then append its labels in one part file (all or nothing)."""
    rows = parse(store, path, as_hand_picked, kind)
    store.append_annotations(rows)
    return len(rows)


def _target(kind: str, ref: str) -> str:
    if kind in ("claim", "context"):
        return ref.rsplit(":", 1)[1]
    return ""


def _metric(kind: str, ref: str) -> str:
    return ref.split(":", 1)[0]


def export_rows(store: RunStore, run_id: str | None = None) -> Iterator[dict[str, Any]]:
    """Every stored label as import records, in the order they arrived (the append-only log, oldest
    first: re-imported, ties of `when` resolve as they did here). `when` is the time the label
    counts from (annotations.COUNTED_WHEN: never after it arrived), so a label stored with a
    future date before such dates were refused re-imports with the time it arrived."""
    ann = query_df(store, f"""SELECT * REPLACE ({COUNTED_WHEN} AS "when") FROM annotations
                       WHERE $run IS NULL OR run_id = $run ORDER BY arrival""", {"run": run_id})
    for r in ann.to_dict("records"):
        prob = r.get("inclusion_prob")
        yield {"run": r["run_id"], "method": r["method"], "question_id": r["question_id"],
               "metric": _metric(r["target_kind"], r["target_ref"]), "target": _target(r["target_kind"], r["target_ref"]),
               "label": r["label"], "who": r["who"], "when": r["when"].isoformat() if r["when"] is not None else None,
               "note": r["note"] if isinstance(r["note"], str) else None,
               "sample_id": r["sample_id"] if isinstance(r.get("sample_id"), str) else None,
               "inclusion_prob": None if prob is None or (isinstance(prob, float) and math.isnan(prob)) else float(prob),
               "judge_label": r["judge_label"] if isinstance(r["judge_label"], str) else None,
               **PIO.export_fields(r)}


def export_text(store: RunStore, fmt: str, run_id: str | None = None) -> str:
    """The labels as CSV (every text cell through the one spreadsheet-formula guard, undone when
    `labels import` reads it back) or JSONL text."""
    rows = list(export_rows(store, run_id))
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return rows_to_csv(rows, FIELDS)
