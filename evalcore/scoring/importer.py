"""Import recorded answers: one record per (question, method, trial) -> a new run in the store.

Accepts our field names and, unchanged, ragas' (user_input, response, retrieved_contexts,
reference) and deepeval's (input, actual_output, expected_output, retrieval_context).
A record must have a question (id or text) and an answer or an error (or, with
`retrieval_only`, what was retrieved); unknown field names are refused unless `allow_extra`, which keeps them in the
question's metadata (see `evalcore.scoring.import_fields`). Text that cannot be stored or exported (NUL,
lone UTF-16 surrogates) is replaced with U+FFFD and counted (evalcore.schemas.storable). The run
is built in staging and published whole, so a bad record leaves the store exactly as it was.

Memory: records are streamed, each bounded by the readers (its text, and the values it makes:
evalcore/common/value_budget.py), and written in part files of at most BATCH_SIZE answers, fewer when
the next record would take the batch past BATCH_CHARS characters or the value budget (so a batch
of large records costs about one record's bound, not a thousand, and a record larger than that
is written alone, once the readers let go of it). Writing lets go of each copy as soon as the
next exists (answers once they are rows, rows once Arrow holds them: `_flush`), so one record at
the bound costs a stated multiple of its size (docs/reliability.md, "Inputs"). The file's
fingerprint is taken after its records were read, so a file refused at its first record
(binary data, say) is not read whole first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from evalcore import __version__
from evalcore.datasets import load_questions
from evalcore.datasets.native import OnDuplicate, noting_dropped, question_from_record
from evalcore.datasets.records import check_finite, read_sized_records
from evalcore.errors import InputError, from_validation
from evalcore.common.fingerprint import file_fingerprint
from evalcore.scoring.import_fields import ALIASES, QUESTION_ONLY, RESPONSE_FIELDS, FieldReport
from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.schemas.ids import canonical_id, text_question_id
from evalcore.schemas.storable import WHAT, storable_path
from evalcore.store import FORMAT_VERSION, RunStore, new_run_id
from evalcore.store.tables import question_row, response_row
from evalcore.common.value_budget import RecordSize, value_limit

BATCH_SIZE = 1000  # responses per part file
BATCH_CHARS = 16 * 2 ** 20  # a batch is written once its records took this much text (or decoded bytes)


@dataclass
class ImportResult:
    run_id: str
    n_records: int
    n_questions: int
    methods: list[str]
    fields: FieldReport | None = None
    replaced_surrogates: int = 0
    records_with_replacements: list[int] = field(default_factory=list)

    def notes(self) -> list[str]:
        """What the user should know about how the file was read (mapping, extras, repairs)."""
        out = self.fields.lines() if self.fields else []
        if self.replaced_surrogates:
            recs = ", ".join(map(str, self.records_with_replacements[:10]))
            more = ", ..." if len(self.records_with_replacements) > 10 else ""
            out.append(f"replaced {WHAT} (characters that cannot be stored or exported) with U+FFFD in "
                       f"{self.replaced_surrogates} field(s) of record(s) {recs}{more}")
        return out


def _canonical(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in rec.items() if k not in ALIASES or ALIASES[k] in rec}
    for alias, field in ALIASES.items():
        if alias in rec and field not in rec and field not in out:
            out[field] = rec[alias]
    return out


def _question_id(rec: dict[str, Any]) -> str:
    """The record's question id under the one id rule (evalcore.schemas.ids), so it finds its
    question in the dataset whatever its Unicode form or outer spaces; derived from the
    question text when absent."""
    qid = rec.get("question_id")
    if qid is None or (isinstance(qid, str) and not canonical_id(qid)):
        return text_question_id(str(rec.get("question") or ""))
    return canonical_id(str(qid))


def _retrieved(rec: dict[str, Any], file: str, recno: int) -> list[dict[str, Any]]:
    if rec.get("retrieved") is not None:
        items = rec["retrieved"]
        if not isinstance(items, list):
            raise InputError(file, "expected a list", record=recno, field="retrieved")
        out, seen = [], set()
        for i, item in enumerate(items, start=1):
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict):
                raise InputError(file, "expected an object or a string", record=recno, field=f"retrieved.{i - 1}")
            cid = item.get("chunk_id")
            if isinstance(cid, str) and cid in seen:
                raise InputError(file, f"chunk_id {cid!r} is listed twice", record=recno,
                                 field=f"retrieved.{i - 1}.chunk_id")
            if isinstance(cid, str):
                seen.add(cid)
            out.append({"rank": i, **item})
        return out
    contexts = rec.get("contexts")
    if contexts is None:
        return []
    if isinstance(contexts, str):
        contexts = [_one_text(contexts, file, recno, "contexts")]
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise InputError(file, "expected a list of strings", record=recno, field="contexts")
    return [{"rank": i, "text": c} for i, c in enumerate(contexts, start=1)]


def _one_text(text: str, file: str, recno: int, field: str) -> str:
    """A list field given as one text is one item, unless the text is a printed list the
    reader could not read back (`['a', 'b` cut short, a repr of objects): storing it as one
    context, brackets and quotes included, would silently score the wrong thing."""
    stripped = text.strip()
    if stripped[:2] in ("['", '["') and stripped.endswith("]"):
        raise InputError(file, "looks like a list written as text, but is neither a JSON list nor a "
                         "Python list of plain strings (as pandas to_csv writes one); write the list as "
                         f"JSON: {stripped[:60]!r}", record=recno, field=field)
    return text


def _citations(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [{"chunk_id": str(c)} if isinstance(c, (str, int)) else c for c in items]


def _no_question_text(rec: dict[str, Any], qid: str, known: dict[str, EvalQuestion]) -> str:
    """Why a record without question text cannot be imported, in the user's terms."""
    if rec.get("question_id") is None or not str(rec["question_id"]).strip():
        return "no question id and the question text is empty (ids are derived from the question text)"
    if not known:
        return (f"no question text, and no dataset was given to look up question id {qid!r} "
                "(pass --dataset QFILE or add a 'question' field)")
    return (f"no question text, and question id {qid!r} is not in the dataset "
            "(check the id, or add a 'question' field)")


def _split(rec: dict[str, Any], file: str, recno: int, default_method: str,
           known: dict[str, EvalQuestion], by_text: dict[str, str]) -> tuple[EvalQuestion, EvalResponse]:
    check_finite(rec, file, recno)
    rec = _canonical(rec)
    qid = _question_id(rec)
    if rec.get("question_id") is None and rec.get("question") is not None:
        qid = by_text.get(canonical_id(str(rec["question"])), qid)
    method = rec.get("method") or default_method
    q_rec: dict[str, Any] = {"id": qid}
    r_rec: dict[str, Any] = {"question_id": qid, "method": str(method)}
    for key, value in rec.items():
        if key in RESPONSE_FIELDS:
            r_rec[key] = value
        elif key not in QUESTION_ONLY:
            q_rec[key] = value
    gold_contexts = rec.get("gold_contexts")
    if gold_contexts:
        texts = ([_one_text(gold_contexts, file, recno, "gold_contexts")] if isinstance(gold_contexts, str)
                 else list(gold_contexts))
        q_rec["gold_passages"] = list(q_rec.get("gold_passages") or []) + [{"text": str(t)} for t in texts]
    if qid in known:
        question = known[qid]  # the dataset file is authoritative for question fields
    elif q_rec.get("question") is None or not str(q_rec["question"]).strip():
        raise InputError(file, _no_question_text(rec, qid, known), record=recno, field="question")
    else:
        question = question_from_record(q_rec, file, recno)
    r_rec["retrieved"] = _retrieved(r_rec, file, recno)
    r_rec.pop("contexts", None)
    r_rec["citations"] = _citations(r_rec.get("citations"))
    if r_rec.get("answer") is None:
        r_rec["answer"] = ""
    try:
        response = EvalResponse.model_validate(r_rec)
    except ValidationError as exc:
        raise from_validation(file, recno, exc) from exc
    return question, response


class RecordStream:
    """Validated records of a recorded-answers file, one at a time, in bounded memory.

    Iterating yields (record number, question or None, response). The question is given the
    first time its id appears, and again when a later record adds the ground truth the first
    one lacked (the newer question row then replaces the older one in the store's views);
    otherwise None. Per question only a digest of its text is remembered, and per response
    only its (method, question id, trial) key, so a 100 MB file needs no list of all its records.
    """

    def __init__(self, path: str | Path, default_method: str = "recorded",
                 dataset: list[EvalQuestion] | None = None, allow_extra: bool = False,
                 retrieval_only: bool = False):
        self.path = Path(path)
        self.file = str(path)
        self.default_method = default_method
        self.known = {q.id: q for q in dataset or []}
        self.by_text = {canonical_id(q.question): q.id for q in self.known.values()}
        self.seen: dict[str, tuple[bytes, bool]] = {}  # question id -> (text digest, has ground truth)
        self.keys: set[tuple[str, str, int]] = set()
        self.without_first: dict[tuple[str, str], int] = {}  # ... with a later trial only: its first record
        self.methods: set[str] = set()
        self.n_errors = 0
        self.fields = FieldReport(allow_extra=allow_extra, retrieval_only=retrieval_only)
        self.replaced = 0  # fields whose NUL or lone surrogates were replaced with U+FFFD
        self.replaced_records: list[int] = []
        self.last_size = RecordSize(0, 0)  # what the record last yielded cost to read

    def _repaired(self, recno: int, changed: list[str]) -> None:
        self.replaced += len(changed)
        self.replaced_records.append(recno)

    def __iter__(self) -> Iterator[tuple[int, EvalQuestion | None, EvalResponse]]:
        for recno, rec, self.last_size in read_sized_records(self.path, on_repair=self._repaired):
            self.fields.check(rec, self.file, recno)
            question, response = _split(rec, self.file, recno, self.default_method, self.known, self.by_text)
            key = (response.method, response.question_id, response.trial)
            if key in self.keys:
                which = f" trial {key[2]}" if "trial" in rec else ""
                raise InputError(self.file, f"second answer for question {key[1]!r} and method {key[0]!r}{which} "
                                 "(several answers to one question are trials: give each its own `trial`, "
                                 "0, 1, 2...)", record=recno, field="question_id")
            digest = hashlib.sha1(canonical_id(question.question).encode("utf-8")).digest()
            has_truth = question.ground_truth is not None
            old = self.seen.get(question.id)
            if old is not None and old[0] != digest:
                raise InputError(self.file, f"question id {question.id!r} was used earlier for a different "
                                 "question", record=recno, field="question")
            emit = question if old is None or (has_truth and not old[1]) else None
            if emit is not None:
                self.seen[question.id] = (digest, has_truth)
            self.keys.add(key)
            self._note_trial(key, recno)
            self.methods.add(response.method)
            self.n_errors += bool(response.error)
            yield recno, emit, response
        if not self.keys:
            raise InputError(self.file, "no records found")
        if self.without_first:
            (method, qid), recno = min(self.without_first.items(), key=lambda item: item[1])
            raise InputError(self.file, f"question {qid!r} of method {method!r} has trials but no trial 0; number "
                             "a question's trials from 0 (trial 0 is the answer every reader of a run without "
                             "trials reads)", record=recno, field="trial")

    def _note_trial(self, key: tuple[str, str, int], recno: int) -> None:
        """Remember the answers whose question has a later trial but (so far) no trial 0."""
        pair = key[:2]
        if key[2] == 0:
            self.without_first.pop(pair, None)
        elif (*pair, 0) not in self.keys:
            self.without_first.setdefault(pair, recno)


def parse_recorded(path: str | Path, default_method: str = "recorded",
                   dataset: list[EvalQuestion] | None = None,
                   allow_extra: bool = False,
                   retrieval_only: bool = False) -> tuple[list[EvalQuestion], list[EvalResponse]]:
    """Questions (deduplicated by id) and responses from a recorded-answers file, as lists.

    With a dataset, its questions are authoritative and records may omit the question text.
    `import_recorded` streams the same records instead of building these lists.
    """
    questions: dict[str, EvalQuestion] = {}
    responses: list[EvalResponse] = []
    for _, question, response in RecordStream(path, default_method, dataset, allow_extra, retrieval_only):
        if question is not None:
            questions[question.id] = question
        responses.append(response)
    return list(questions.values()), responses


def import_recorded(store: RunStore, path: str | Path, name: str | None = None,
                    dataset: str | Path | None = None, method: str = "recorded",
                    kind: str = "import", batch_size: int = BATCH_SIZE,
                    on_duplicate: OnDuplicate = "error", allow_extra: bool = False,
                    retrieval_only: bool = False) -> ImportResult:
    """Validate a recorded-answers file and publish it as one new run, or change nothing.

    Records are streamed: every `batch_size` responses (and the questions first seen with
    them) become one part file inside the staging folder, or fewer when their records were
    large (BATCH_CHARS, the value budget), so memory does not grow with the file or its
    records. The run is renamed into the store only after the last record validated, and
    the file fingerprinted then.
    `on_duplicate` applies to `dataset` (see `evalcore.datasets.native.check_unique`); what
    keep_first dropped is listed in the manifest's dataset entry, as for a live run.
    `allow_extra` keeps unknown field names in question metadata instead of refusing them;
    the result's `notes()` say what was mapped, kept aside and repaired. `retrieval_only`
    accepts records that give what was retrieved but no answer (a retriever's log).
    """
    path = Path(path)
    dataset_info: dict[str, Any] = {"name": storable_path(path.stem), "source": "recorded file"}
    ds_questions = None
    if dataset is not None:
        with noting_dropped() as dropped:
            ds_questions = load_questions(dataset, on_duplicate=on_duplicate)
        dataset_info = {"name": storable_path(Path(dataset).stem), "path": storable_path(dataset),
                        "fingerprint": file_fingerprint(dataset), "n_questions": len(ds_questions)}
        if on_duplicate == "keep_first":
            dataset_info["duplicates_dropped"] = [d.as_dict() for d in dropped]
    if not path.is_file():
        raise InputError(str(path), "no such file")
    run_name = name or storable_path(path.stem)
    manifest = RunManifest(
        format_version=FORMAT_VERSION, run_id=new_run_id(run_name), name=run_name, kind=kind,
        status="complete", evalcore_version=__version__, methods=[], dataset=dataset_info,
        source={"kind": "recorded", "file": storable_path(path.name)},
    )
    manifest.finished_at = manifest.created_at
    stream = RecordStream(path, default_method=method, dataset=ds_questions, allow_extra=allow_extra,
                          retrieval_only=retrieval_only)
    with store.staged_run(manifest) as writer:
        questions: dict[str, EvalQuestion] = {}
        responses: list[EvalResponse] = []
        n_responses = chars = values = 0
        most_values = value_limit()
        for _, question, response in stream:
            size = stream.last_size
            if responses and (chars + size.chars > BATCH_CHARS or values + size.values > most_values):
                n_responses += _flush(writer, questions, responses)  # written before this record joins it
                chars = values = 0
            if question is not None:
                questions[question.id] = question
            responses.append(response)
            question = response = None  # held by the batch alone, which _flush lets go of
            chars, values = chars + size.chars, values + size.values
            if len(responses) >= batch_size:
                n_responses += _flush(writer, questions, responses)
                chars = values = 0
        n_responses += _flush(writer, questions, responses)
        methods = sorted(stream.methods)
        source = {**manifest.source, "fingerprint": file_fingerprint(path)}
        source["fields"] = dict(sorted(stream.fields.mapping.items()))
        if stream.fields.extra:
            source["extra_fields_in_metadata"] = sorted(stream.fields.extra)
            if stream.fields.n_extra_not_kept:
                source["extra_fields_not_listed"] = stream.fields.n_extra_not_kept
        if stream.replaced:
            source["text_repairs"] = {"fields_replaced": stream.replaced, "characters": WHAT,
                                      "records": stream.replaced_records[:100]}
        manifest = manifest.model_copy(update={
            "methods": methods, "source": source,
            "counts": {"questions": len(stream.seen), "responses": n_responses, "errors": stream.n_errors}})
        writer.write_manifest(manifest)
    return ImportResult(manifest.run_id, n_responses, len(stream.seen), methods, stream.fields,
                        stream.replaced, stream.replaced_records)


def _flush(writer: Any, questions: dict[str, EvalQuestion], responses: list[EvalResponse]) -> int:
    """Write the pending batch as part files and empty it; returns the responses written.
    Each table's models are let go of once they are rows, and the rows once Arrow holds them
    (RunWriter.write_rows consumes them), so a long answer is not held three times over while
    its file is written."""
    n = len(responses)
    rows = [question_row(writer.run_id, q) for q in questions.values()]
    questions.clear()
    writer.write_rows("questions", rows)
    rows = [response_row(writer.run_id, r) for r in responses]
    responses.clear()
    writer.write_rows("responses", rows)
    return n
