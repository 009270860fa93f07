"""One question, one story: what the Questions page says about each method's answer, computed
here so that the diagnosis, the answer class, the metric labels and the context verdicts agree,
or say why they do not.

Why: the page showed a "retrieval miss" badge (decided from the dataset's gold passages) next to
contexts the judge called relevant, faithfulness 1.000 above "faithfulness was not judged", and
"correct" beside answer_correct 0 / DONT_KNOW. Each statement here names its basis — the gold
passages of the dataset, or the judge — and where two bases differ a note says so.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from evalcore.analysis.questions.failure_modes import explained, source
from evalcore.analysis.questions.question_drilldown import question_detail
from evalcore.store import RunStore

FAITH = "faithfulness"
CONTEXT_COLUMNS = ["rank", "gold passage", "judge verdict", "reason", "text", "judge_score", "score", "chunk_id",
                   "rel_path", "heading_path"]


def gold_hits(question_record: str | None, response_record: str | None) -> dict[int, bool] | None:
    """rank -> whether the retrieved chunk matches a relevant gold passage of the question (the
    matching the retrieval metrics use); None when the question has no gold passages."""
    from evalcore.metrics.matching import judge_ranking, ranked_chunks
    from evalcore.schemas import EvalQuestion, EvalResponse
    from evalcore.schemas.ids import STORED

    if not isinstance(question_record, str) or not isinstance(response_record, str):
        return None
    question = EvalQuestion.model_validate_json(question_record, context=STORED)
    if not question.gold_passages:
        return None
    response = EvalResponse.model_validate_json(response_record, context=STORED)
    try:
        chunks = ranked_chunks(response)
    except Exception:  # a ranking the metrics refuse (duplicate ids) has no gold reading either
        return None
    judged = judge_ranking(question, chunks)
    return {c.rank: bool(h) for c, h in zip(chunks, judged.hits)}


def context_rows(question_record: str | None, response_record: str | None, verdicts: pd.DataFrame) -> pd.DataFrame:
    """The retrieved contexts by rank, each with both readings side by side, named by basis:
    `gold passage` (yes / no from the dataset's gold passages; empty when it has none) and
    `judge verdict` (relevant / not_relevant from the judge's context review)."""
    retrieved = json.loads(response_record).get("retrieved", []) if isinstance(response_record, str) else []
    ctx = pd.DataFrame(retrieved, columns=["rank", "chunk_id", "rel_path", "heading_path", "score", "text"])
    if ctx.empty:
        return pd.DataFrame(columns=CONTEXT_COLUMNS)
    gold = gold_hits(question_record, response_record)
    ctx["gold passage"] = ctx["rank"].map(lambda r: "" if gold is None else ("yes" if gold.get(r) else "no"))
    v = verdicts[["rank", "verdict", "score", "reason"]].rename(columns={"score": "judge_score",
                                                                        "verdict": "judge verdict"})
    merged = ctx.merge(v, on="rank", how="left")
    return merged[CONTEXT_COLUMNS]


def claims_note(metrics: pd.DataFrame, n_claims: int) -> str | None:
    """What to say where the answer's claims would be listed, when none are stored: faithfulness
    1.0 with no claims is a definition (nothing stated, nothing unsupported), not a judgement."""
    if n_claims:
        return None
    row = metrics[metrics.metric == FAITH]
    if row.empty:
        return "no claims stored: faithfulness was not judged"
    value, reason = row["value"].iloc[0], row["reason"].iloc[0]
    if value != value:
        return f"no claims stored: faithfulness was not scored ({reason or 'no reason recorded'})"
    if abs(value - 1.0) < 1e-12:
        return "no claims extracted: faithfulness 1.0 by definition (an answer that states nothing has nothing unsupported)"
    return f"no claims stored: faithfulness {value:.3f} was scored without per-claim verdicts"


def metric_basis(group: Any, judge_id: Any) -> str:
    """What a stored value rests on: the judge (named in the page's "Judged by" line), the
    dataset's gold passages (retrieval metrics), or a computation on the answer and reference."""
    if isinstance(judge_id, str) and judge_id:
        return "judge"
    return "gold passages" if group == "retrieval" else "computed"


def _badge_source(source_text: str, metrics: pd.DataFrame) -> str:
    """`by X` -> `judge: X` or `computed: X` (what the deciding metric rests on); others as they are."""
    if not source_text.startswith("by "):
        return source_text
    name = source_text[3:]
    row = metrics[metrics.metric == name]
    judged = len(row) and isinstance(row["judge_id"].iloc[0], str)
    return f"{'judge' if judged else 'computed'}: {name}"


def key_scores(metrics: pd.DataFrame) -> pd.DataFrame:
    """The few scores that summarise one answer (question_drilldown.key_metrics), each with its label and
    its basis (judge / gold passages / computed)."""
    from evalcore.analysis.questions.question_drilldown import key_metrics

    names = key_metrics(metrics["metric"].tolist())
    rows = metrics.set_index("metric").loc[names]
    return pd.DataFrame({"metric": names, "value": rows["value"].to_numpy(),
                         "label": rows["label"].fillna("–").to_numpy(),
                         "basis": [metric_basis(g, j) for g, j in zip(rows["group"], rows["judge_id"])]})


def _notes(bucket: str | None, basis: str, metrics: pd.DataFrame, contexts: pd.DataFrame,
           answerable: bool, cls: tuple[str, str | None]) -> list[str]:
    """Where two readings of the same answer differ, one sentence saying why."""
    notes = []
    values = dict(zip(metrics.metric, metrics.value))
    labels = dict(zip(metrics.metric, metrics.label))
    judged_class = labels.get("answer_class")
    if isinstance(judged_class, str) and cls[0] not in ("ERROR", judged_class):
        why = {"dont_know": "an abstention (dont_know = 1) counts before any correctness verdict"}.get(
            cls[1] or "", f"{cls[1]} decides first" if cls[1] else "no metric decides")
        notes.append(f"The judge's class is {judged_class}; the answer class is {cls[0]}: {why}.")
    if bucket == "correct abstention":
        shown = [f"{m} = {values[m]:.0f}" for m in ("answer_correct", "answer_class") if m in values
                 and values[m] == values[m]]
        if shown or labels.get("answer_class") == "DONT_KNOW":
            notes.append(f"{', '.join(shown) or 'the class DONT_KNOW'}: these score the class CORRECT, so an "
                         "abstention scores 0; on an unanswerable question abstaining is right.")
    judged = contexts["judge verdict"].notna() & (contexts["judge verdict"] != "")
    relevant = int((contexts.loc[judged, "judge verdict"] == "relevant").sum())
    gold = contexts["gold passage"]
    if bucket == "retrieval miss" and "gold passages" in basis and relevant:
        notes.append(f"The gold passages and the judge differ: no retrieved context is a gold passage, yet the "
                     f"judge found {relevant} of {int(judged.sum())} relevant. The diagnosis follows the gold passages.")
    elif (gold == "yes").any() and judged.any() and relevant == 0:
        notes.append("The gold passages and the judge differ: a retrieved context is a gold passage, but the judge "
                     "found none relevant.")
    if not answerable and bucket == "correct" and "token_f1" in basis:
        notes.append("An unanswerable question judged by token F1 against its ground truth: check that abstaining "
                     "was not the right answer.")
    return notes


def stories(store: RunStore, run_id: str, question_id: str) -> dict[str, dict[str, Any]]:
    """Per method: the diagnosis (bucket) and its basis, notes where readings differ, the note
    that replaces an empty claims list, and the contexts with their gold / judge readings."""
    detail = question_detail(store, run_id, question_id)
    if detail["question"].empty:
        return {}
    q = detail["question"].iloc[0]
    answerable = bool(q["answerable"]) if q["answerable"] == q["answerable"] else True
    out: dict[str, dict[str, Any]] = {}
    responses = list(detail["responses"].itertuples(index=False))
    per_method = [detail["metrics"][detail["metrics"].method == resp.method] for resp in responses]
    rows = []
    for resp, metrics in zip(responses, per_method):
        row: dict[str, Any] = {"error": resp.error if isinstance(resp.error, str) else None, "answerable": answerable}
        for m in metrics.itertuples(index=False):
            row[m.metric] = m.value
            if m.metric == "answer_class":
                row["answer_class_label"] = m.label
        rows.append(row)
    # every method's class and diagnosis in one run of the rules (failure_modes.explained)
    said = explained(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=["cls", "decided_by", "bucket", "basis"])
    for resp, metrics, bucket, basis, cls in zip(responses, per_method, said["bucket"], said["basis"],
                                                 zip(said["cls"], said["decided_by"])):
        verdicts = detail["contexts"][detail["contexts"].method == resp.method]
        if len(verdicts):  # one metric's verdicts: context_precision when there, else the first judged
            chosen = "context_precision" if (verdicts.metric == "context_precision").any() else verdicts.metric.iloc[0]
            verdicts = verdicts[verdicts.metric == chosen]
        contexts = context_rows(q.get("record"), resp.record, verdicts)
        claims = detail["claims"][(detail["claims"].method == resp.method) & (detail["claims"].source == "answer")]
        out[resp.method] = {"bucket": bucket, "basis": basis, "source": _badge_source(source(bucket, basis), metrics),
                            "notes": _notes(bucket, basis, metrics, contexts, answerable, cls),
                            "claims_note": claims_note(metrics, len(claims)), "contexts": contexts,
                            "scores": key_scores(metrics)}
    return out
