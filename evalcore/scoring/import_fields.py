"""Which record fields the importer understands, and the checks that stop a meaningless import.

A recorded-answers file whose answer column is missing or misspelt used to import "fine" with
every answer empty: a run that looks healthy and measures nothing. So the importer knows every
name it accepts (ours plus ragas'/deepeval's aliases), refuses a record that lacks what makes
it meaningful (a question, and an answer — or, asked for, what the method retrieved), refuses unknown
names unless the user asks to keep them (`allow_extra`), and reports the mapping it used so a
user can see `answer <- response` rather than guess it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from evalcore.datasets.native import QUESTION_FIELDS
from evalcore.errors import InputError

# alias -> our field. Applied only when our own field is absent from the record.
ALIASES: dict[str, str] = {
    "id": "question_id", "qid": "question_id", "query_id": "question_id",
    "user_input": "question", "input": "question", "query": "question",
    "response": "answer", "actual_output": "answer", "output": "answer", "generated_answer": "answer",
    "reference": "ground_truth", "expected_output": "ground_truth", "gt_answer": "ground_truth",
    "ground_truths": "ground_truth", "expected_answer": "ground_truth",
    "retrieved_contexts": "contexts", "retrieval_context": "contexts",
    "reference_contexts": "gold_contexts", "context": "gold_contexts",
    "system": "method", "method_name": "method",
}
RESPONSE_FIELDS = {"answer", "contexts", "retrieved", "citations", "abstained", "latency_ms",
                   "token_usage", "timings", "error", "error_kind", "scope", "trial"}
QUESTION_ONLY = {"question_id", "method", "gold_contexts"}
OWN_FIELDS = RESPONSE_FIELDS | QUESTION_ONLY | (QUESTION_FIELDS - {"id"})
KNOWN = OWN_FIELDS | set(ALIASES)
# A record means something only with its answer, or the error that stopped the method from
# answering; a retrieval-only import (`retrieval_only`) may give what was retrieved instead.
ANSWER_LIKE = ("answer", "error")
RETRIEVAL_LIKE = ("retrieved", "contexts")
# Fields that hold one piece of text: a list or object there is a malformed file, not a value
# to stringify (a JSON list in a CSV `method` cell used to become the method "['a']").
TEXT_FIELDS = ("question_id", "method", "question")
# Unknown names looked at for a near miss of a known one, and named in a message or note: a
# file with 500 000 extra columns took 76 s (a fuzzy match per name) to print a multi-MB line.
MAX_HINTED = 20
MAX_NAMED = 10
MAX_KEPT = 1000  # unknown names remembered for the manifest (the rest are counted)
MAX_KEY_SETS = 1000  # distinct key sets remembered so that each is examined once


def named(names: list[str], limit: int = MAX_NAMED, more: int = 0) -> str:
    """`a, b, c` for a few names; `a, b, ... and N more` past `limit` (plus `more` not listed)."""
    extra = max(len(names) - limit, 0) + more
    return ", ".join(names[:limit]) + (f" and {extra:,} more" if extra else "")


def names_for(own: str) -> list[str]:
    """Our field and every alias that maps to it, ours first."""
    return [own] + [a for a, f in ALIASES.items() if f == own]


def did_you_mean(name: str, candidates: set[str] | list[str] | tuple[str, ...]) -> str:
    """' (did you mean 'x'?)' for a near miss of a known name, else ''."""
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


@dataclass
class FieldReport:
    """What the import did with the file's field names, gathered while streaming.

    `mapping` is our field -> the file's name for it (equal when the file uses ours);
    `extra` the unknown names kept in question metadata because `allow_extra` was set.
    """

    allow_extra: bool = False
    retrieval_only: bool = False
    mapping: dict[str, str] = field(default_factory=dict)
    extra: set[str] = field(default_factory=set)
    n_extra_not_kept: int = 0  # unknown names past MAX_KEPT, counted only
    _seen_keys: set[frozenset] = field(default_factory=set)

    def check(self, rec: dict[str, Any], file: str, recno: int) -> None:
        """Refuse a record that is missing what makes it meaningful or has unknown names.

        Key sets repeat record after record, so each distinct set is examined once.
        """
        keys = frozenset(rec)
        if keys in self._seen_keys:
            self._check_text(rec, file, recno)
            return
        for key in keys:
            if not isinstance(key, str):
                raise InputError(file, f"field names must be text, got {type(key).__name__}",
                                 record=recno, field=str(key))
        unknown = sorted(k for k in keys if k not in KNOWN)
        for name in unknown[:MAX_HINTED] if not self.allow_extra else ():  # a near miss is most likely a typo
            hint = did_you_mean(name, KNOWN)
            if hint:
                raise InputError(file, f"unknown field{hint}; rename it, or pass --allow-extra to keep it "
                                 "in each question's metadata", record=recno, field=name)
        present = {ALIASES.get(k, k) for k in keys}
        if "question_id" not in present and "question" not in present:
            raise InputError(file, "neither a question id nor question text (accepted names: "
                             + ", ".join(names_for("question_id") + names_for("question")) + ")"
                             + self._hint(unknown, names_for("question_id") + names_for("question")),
                             record=recno, field="question")
        wanted = ANSWER_LIKE + (RETRIEVAL_LIKE if self.retrieval_only else ())
        if not present & set(wanted):
            accepted = [n for own in wanted for n in names_for(own)]
            also = "what was retrieved, " if self.retrieval_only else ""
            raise InputError(file, "no answer field: a record needs the answer (accepted names: "
                             + ", ".join(names_for("answer")) + f"), {also}or the error that stopped it"
                             + ("" if self.retrieval_only else
                                "; for a retriever without answers pass --retrieval-only")
                             + self._hint(unknown, accepted), record=recno, field="answer")
        if unknown and not self.allow_extra:
            name = unknown[0]
            more = f" (and {len(unknown) - 1:,} more: {named(unknown[1:])})" if len(unknown) > 1 else ""
            raise InputError(file, f"unknown field{more}; pass --allow-extra "
                             "(allow_extra=True from Python) to keep unknown fields in each question's "
                             "metadata", record=recno, field=name)
        self._keep_extra(unknown)
        for key in keys:
            own = ALIASES.get(key, key)
            if key in KNOWN and (key == own or own not in keys):
                self.mapping.setdefault(own, key)
        if len(self._seen_keys) >= MAX_KEY_SETS:  # records of ever new keys: remember only the latest
            self._seen_keys.clear()
        self._seen_keys.add(keys)
        self._check_text(rec, file, recno)

    def _keep_extra(self, unknown: list[str]) -> None:
        for name in unknown:
            if name in self.extra:
                continue
            if len(self.extra) < MAX_KEPT:
                self.extra.add(name)
            else:
                self.n_extra_not_kept += 1

    @staticmethod
    def _hint(unknown: list[str], wanted: list[str]) -> str:
        for name in unknown[:MAX_HINTED]:
            hint = did_you_mean(name, wanted)
            if hint:
                return f"; the file has '{name}'{hint}"
        return ""

    @staticmethod
    def _check_text(rec: dict[str, Any], file: str, recno: int) -> None:
        for own in TEXT_FIELDS:
            for name in names_for(own):
                value = rec.get(name)
                if isinstance(value, (list, dict)):
                    raise InputError(file, f"expected text, got a {'list' if isinstance(value, list) else 'mapping'}"
                                     f" ({str(value)[:60]})", record=recno, field=name)

    def lines(self) -> list[str]:
        """Human-readable summary for the CLI: what was mapped, what was kept aside."""
        parts = [own if col == own else f"{own} \u2190 {col}" for own, col in sorted(self.mapping.items())]
        out = ["fields: " + ", ".join(parts)]
        if self.extra:
            out.append("kept in each question's metadata (not evalcore fields): "
                       + named(sorted(self.extra), more=self.n_extra_not_kept))
        return out
