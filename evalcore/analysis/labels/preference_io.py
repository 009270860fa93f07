"""Pairwise preference records in `labels import` and out of `labels export`.

Why apart from labels_io: a preference names two systems and no metric, so its record has fields
of its own; the rest (one line naming file, record and field; the whole file checked before
anything is stored; a claimed random sample checked against its order) is labels_io's and
sample_audit's, shared. A record is a preference when its `kind` is `preference` (or the file is
imported with `--kind preference` and the record names no kind):

  run, method, question_id   system A's run and method, and the question
  other_run, other_method    system B (other_run empty: the same run)
  label                      A, B or tie (any case): which of the two answers is better
  shown_left                 optional: A or B, the system whose answer was shown on the left
  who, when, note, sample_id, inclusion_prob   as for every label; metric and target stay empty

Stored, a pair has one spelling (schemas.labels: A sorts first); a record naming the two the
other way round is turned round, its label and shown_left with it, so the export writes it in the
stored order and re-imports to the same labels.
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import ValidationError

from evalcore.analysis.labels import preferences as PF
from evalcore.analysis.labels.sample_audit import FileLabel
from evalcore.errors import InputError, StoreError, from_validation
from evalcore.schemas import Annotation
from evalcore.schemas.ids import canonical_id, match_name
from evalcore.schemas.labels import PREFERENCE, RETRACTED, SAMPLE_GRAMMAR, flip, preference_other, preference_word
from evalcore.store import RunStore

KIND_FIELD = "kind"
FIELDS = [KIND_FIELD, "other_run", "other_method", "shown_left"]  # after labels_io's own fields
LABEL_KIND = "label"  # a label of a metric's item: every record before preferences existed
KINDS = (LABEL_KIND, PREFERENCE)
REQUIRED = ("run", "method", "other_method", "question_id", "label", "who")

Text = Callable[[dict[str, Any], str], "str | None"]


def _bad(file: str, recno: int, field: str, message: str):
    raise InputError(file, message, record=recno, field=field)


def record_kind(kind: str | None, default: str, file: str, recno: int) -> str:
    """What a record is: its own `kind`, else the import's default (`--kind`)."""
    if kind is None:
        return default
    if kind.casefold() not in KINDS:
        _bad(file, recno, KIND_FIELD, f"unknown kind {kind!r}: leave it empty (or {LABEL_KIND}) for a label of a "
                                      f"metric's item, or write {PREFERENCE} for a pairwise preference")
    return kind.casefold()


class Systems:
    """Runs and methods of an import's records, resolved once each; errors name the field."""

    def __init__(self, store: RunStore, file: str):
        self.store, self.file = store, file
        self.runs: dict[str, str] = {}

    def run(self, typed: str, recno: int, field: str) -> str:
        if typed not in self.runs:
            try:
                self.runs[typed] = self.store.resolve(typed)
            except StoreError as exc:
                _bad(self.file, recno, field, str(exc))
        return self.runs[typed]

    def method(self, run_id: str, typed: str, recno: int, field: str) -> str:
        methods = self.store.manifest(run_id).methods
        stored = match_name(typed, methods)
        if stored is None:
            _bad(self.file, recno, field, f"run {run_id} has no method {typed!r} (methods: {', '.join(methods)})")
        return stored


def _side_word(raw: str | None, flipped: bool, file: str, recno: int) -> str | None:
    """shown_left as stored: A or B of the stored pair (None when the record has none)."""
    if raw is None:
        return None
    word = preference_word(raw)
    if word is None or word.value not in ("A", "B"):
        _bad(file, recno, "shown_left", f"{raw!r} is not a side: write A or B (the system shown on the left)")
    return flip(word.value) if flipped else word.value


def _label(raw: str, flipped: bool, file: str, recno: int) -> str:
    if raw == RETRACTED:
        return raw
    word = preference_word(raw)
    if word is None:
        _bad(file, recno, "label", f"{raw!r} is not a preference: write A, B or tie")
    return flip(word.value) if flipped else word.value


def file_label(store: RunStore, systems: Systems, rec: dict[str, Any], recno: int, text: Text,
               raw: Text) -> FileLabel:
    """One preference record checked on its own, as the FileLabel the sample check reads (its
    `metric` the pair's target_ref)."""
    file = systems.file
    for name in REQUIRED:
        if text(rec, name) is None:
            _bad(file, recno, name, "required field is missing or empty (a preference names run, method, "
                                    "other_method, question_id, label and who)")
    for name in ("metric", "target"):
        if text(rec, name) is not None:
            _bad(file, recno, name, f"a preference is about the whole answers: leave {name} empty")
    run_a = systems.run(text(rec, "run"), recno, "run")
    run_b = systems.run(text(rec, "other_run"), recno, "other_run") if text(rec, "other_run") else run_a
    method_a = systems.method(run_a, text(rec, "method"), recno, "method")
    method_b = systems.method(run_b, text(rec, "other_method"), recno, "other_method")
    if (run_a, method_a) == (run_b, method_b):
        _bad(file, recno, "other_method", f"a preference compares two systems: {run_b}:{method_b} is system A too")
    pair, flipped = PF.pair_of((run_a, method_a), (run_b, method_b))
    pop = PF.population(store, pair)
    typed = canonical_id(text(rec, "question_id"))
    found = pop.loc[pop.key == typed, "question_id"]
    if found.empty:
        _bad(file, recno, "question_id", f"question {typed!r} is not answered by both {run_a}:{method_a} and "
                                         f"{run_b}:{method_b}")
    sid = text(rec, "sample_id")
    if sid is not None and PF.O.sample_seed(sid) is None:
        _bad(file, recno, "sample_id", f"{sid!r} is not a sample id: write {SAMPLE_GRAMMAR}, or leave sample_id "
                                       "and inclusion_prob empty for a hand-picked label")
    annotation = _annotation(rec, recno, file, pair, str(found.iloc[0]), flipped, text, raw)
    return FileLabel(recno, pair.a[0], pair.a[1], pair.ref, str(found.iloc[0]), sid, annotation)


def _annotation(rec: dict[str, Any], recno: int, file: str, pair: PF.Pair, qid: str, flipped: bool, text: Text,
                raw: Text) -> Annotation:
    label = _label(text(rec, "label"), flipped, file, recno)
    left = _side_word(text(rec, "shown_left"), flipped, file, recno)
    prob = text(rec, "inclusion_prob")
    try:
        prob_value: Any = float(prob) if prob is not None else None
    except ValueError:
        prob_value = prob  # the contract names the field
    try:
        return PF.build(pair, qid, text(rec, "who"), label, left=left, note=raw(rec, "note"),
                        sample=(text(rec, "sample_id"), prob_value), when=text(rec, "when"))
    except ValidationError as exc:
        err = from_validation(file, recno, exc)
        if err.field is None and "go together" in err.detail:
            err = InputError(file, err.detail, record=recno, field="inclusion_prob")
        raise err from exc


def refuse_foreign_fields(rec: dict[str, Any], text: Text, file: str, recno: int) -> None:
    """A label of a metric's item naming a second system or a side: refused, not ignored (the
    record was meant as a preference, or its columns are off by one)."""
    for name in FIELDS[1:]:
        if text(rec, name) is not None:
            _bad(file, recno, name, f"{name} belongs to a preference: write kind {PREFERENCE} (or import with "
                                    f"--kind {PREFERENCE}), or leave {name} empty")


def export_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The export record's preference fields of one stored label (empty for other labels)."""
    other = preference_other(row["target_ref"]) if row["target_kind"] == PREFERENCE else None
    if other is None:
        return {KIND_FIELD: None, "other_run": None, "other_method": None, "shown_left": None}
    left = row.get("shown_left")
    return {KIND_FIELD: PREFERENCE, "other_run": other[0], "other_method": other[1], "metric": None, "target": None,
            "shown_left": left if isinstance(left, str) else None}
