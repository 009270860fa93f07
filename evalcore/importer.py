"""Import recorded answers: one record per (question, method) -> a new run in the store.

Accepts our field names and, unchanged, ragas' (user_input, response, retrieved_contexts,
reference) and deepeval's (input, actual_output, expected_output, retrieval_context).
Unknown fields go to the question's metadata. The run is built in staging and published
whole, so a bad record leaves the store exactly as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from evalcore import __version__
from evalcore.datasets import load_questions
from evalcore.datasets.native import OnDuplicate, noting_dropped, question_from_record
from evalcore.datasets.records import check_finite, read_records
from evalcore.errors import InputError, from_validation
from evalcore.fingerprint import file_fingerprint
from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore, new_run_id

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
                   "token_usage", "timings", "error", "error_kind", "scope"}
QUESTION_ONLY = {"question_id", "method", "gold_contexts"}
BATCH_SIZE = 1000  # responses per part file


@dataclass
class ImportResult:
    run_id: str
    n_records: int
    n_questions: int
    methods: list[str]


def _canonical(rec: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in rec.items() if k not in ALIASES or ALIASES[k] in rec}
    for alias, field in ALIASES.items():
        if alias in rec and field not in rec and field not in out:
            out[field] = rec[alias]
    return out


def _question_id(rec: dict[str, Any]) -> str:
    qid = rec.get("question_id")
    if qid is None or (isinstance(qid, str) and not qid.strip()):
        text = str(rec.get("question") or "")
        return "q-" + hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]
    return str(qid)


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
        contexts = [contexts]
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise InputError(file, "expected a list of strings", record=recno, field="contexts")
    return [{"rank": i, "text": c} for i, c in enumerate(contexts, start=1)]


def _citations(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [{"chunk_id": str(c)} if isinstance(c, (str, int)) else c for c in items]


def _split(rec: dict[str, Any], file: str, recno: int, default_method: str,
           known: dict[str, EvalQuestion], by_text: dict[str, str]) -> tuple[EvalQuestion, EvalResponse]:
    check_finite(rec, file, recno)
    rec = _canonical(rec)
    qid = _question_id(rec)
    if rec.get("question_id") is None and rec.get("question") is not None:
        qid = by_text.get(str(rec["question"]).strip(), qid)
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
        texts = [gold_contexts] if isinstance(gold_contexts, str) else list(gold_contexts)
        q_rec["gold_passages"] = list(q_rec.get("gold_passages") or []) + [{"text": str(t)} for t in texts]
    if qid in known:
        question = known[qid]  # the dataset file is authoritative for question fields
    elif "question" not in q_rec:
        raise InputError(file, f"no question text, and question id {qid!r} is not in the dataset "
                         "(pass --dataset QFILE or add a 'question' field)", record=recno, field="question")
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
    only its (method, question id) key, so a 100 MB file needs no list of all its records.
    """

    def __init__(self, path: str | Path, default_method: str = "recorded",
                 dataset: list[EvalQuestion] | None = None):
        self.path = Path(path)
        self.file = str(path)
        self.default_method = default_method
        self.known = {q.id: q for q in dataset or []}
        self.by_text = {q.question.strip(): q.id for q in self.known.values()}
        self.seen: dict[str, tuple[bytes, bool]] = {}  # question id -> (text digest, has ground truth)
        self.keys: set[tuple[str, str]] = set()
        self.methods: set[str] = set()
        self.n_errors = 0

    def __iter__(self) -> Iterator[tuple[int, EvalQuestion | None, EvalResponse]]:
        for recno, rec in read_records(self.path):
            question, response = _split(rec, self.file, recno, self.default_method, self.known, self.by_text)
            key = (response.method, response.question_id)
            if key in self.keys:
                raise InputError(self.file, f"second answer for question {key[1]!r} and method {key[0]!r}",
                                 record=recno, field="question_id")
            digest = hashlib.sha1(question.question.strip().encode("utf-8")).digest()
            has_truth = question.ground_truth is not None
            old = self.seen.get(question.id)
            if old is not None and old[0] != digest:
                raise InputError(self.file, f"question id {question.id!r} was used earlier for a different "
                                 "question", record=recno, field="question")
            emit = question if old is None or (has_truth and not old[1]) else None
            if emit is not None:
                self.seen[question.id] = (digest, has_truth)
            self.keys.add(key)
            self.methods.add(response.method)
            self.n_errors += bool(response.error)
            yield recno, emit, response
        if not self.keys:
            raise InputError(self.file, "no records found")


def parse_recorded(path: str | Path, default_method: str = "recorded",
                   dataset: list[EvalQuestion] | None = None) -> tuple[list[EvalQuestion], list[EvalResponse]]:
    """Questions (deduplicated by id) and responses from a recorded-answers file, as lists.

    With a dataset, its questions are authoritative and records may omit the question text.
    `import_recorded` streams the same records instead of building these lists.
    """
    questions: dict[str, EvalQuestion] = {}
    responses: list[EvalResponse] = []
    for _, question, response in RecordStream(path, default_method, dataset):
        if question is not None:
            questions[question.id] = question
        responses.append(response)
    return list(questions.values()), responses


def import_recorded(store: RunStore, path: str | Path, name: str | None = None,
                    dataset: str | Path | None = None, method: str = "recorded",
                    kind: str = "import", batch_size: int = BATCH_SIZE,
                    on_duplicate: OnDuplicate = "error") -> ImportResult:
    """Validate a recorded-answers file and publish it as one new run, or change nothing.

    Records are streamed: every `batch_size` responses (and the questions first seen with
    them) become one part file inside the staging folder, so memory does not grow with the
    file. The run is renamed into the store only after the last record validated.
    `on_duplicate` applies to `dataset` (see `evalcore.datasets.native.check_unique`); what
    keep_first dropped is listed in the manifest's dataset entry, as for a live run.
    """
    path = Path(path)
    dataset_info: dict[str, Any] = {"name": path.stem, "source": "recorded file"}
    ds_questions = None
    if dataset is not None:
        with noting_dropped() as dropped:
            ds_questions = load_questions(dataset, on_duplicate=on_duplicate)
        dataset_info = {"name": Path(dataset).stem, "path": str(dataset),
                        "fingerprint": file_fingerprint(dataset), "n_questions": len(ds_questions)}
        if on_duplicate == "keep_first":
            dataset_info["duplicates_dropped"] = [d.as_dict() for d in dropped]
    if not path.is_file():
        raise InputError(str(path), "no such file")
    run_name = name or path.stem
    manifest = RunManifest(
        format_version=FORMAT_VERSION, run_id=new_run_id(run_name), name=run_name, kind=kind,
        status="complete", evalcore_version=__version__, methods=[], dataset=dataset_info,
        source={"kind": "recorded", "file": path.name, "fingerprint": file_fingerprint(path)},
    )
    manifest.finished_at = manifest.created_at
    stream = RecordStream(path, default_method=method, dataset=ds_questions)
    with store.staged_run(manifest) as writer:
        questions: dict[str, EvalQuestion] = {}
        responses: list[EvalResponse] = []
        n_responses = 0
        for _, question, response in stream:
            if question is not None:
                questions[question.id] = question
            responses.append(response)
            if len(responses) >= batch_size:
                n_responses += _flush(writer, questions, responses)
        n_responses += _flush(writer, questions, responses)
        methods = sorted(stream.methods)
        manifest = manifest.model_copy(update={
            "methods": methods,
            "counts": {"questions": len(stream.seen), "responses": n_responses, "errors": stream.n_errors}})
        writer.write_manifest(manifest)
    return ImportResult(manifest.run_id, n_responses, len(stream.seen), methods)


def _flush(writer: Any, questions: dict[str, EvalQuestion], responses: list[EvalResponse]) -> int:
    """Write the pending batch as part files and empty it; returns the responses written."""
    writer.write_questions(list(questions.values()))
    writer.write_responses(responses)
    n = len(responses)
    questions.clear()
    responses.clear()
    return n
