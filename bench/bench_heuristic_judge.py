"""Benchmark: how well the offline heuristic judge separates right from wrong, per labelled set.

    HF_HUB_OFFLINE=1 python bench/bench_heuristic_judge.py [--limit N] [--no-embeddings]

Prints ROC AUCs (P(score of a right case > score of a wrong case), ties half) for:
- answer_correctness: the heuristic judge's `answer_correctness` (and its CORRECT/WRONG
  `answer_class`, a yes/no verdict, so its AUC is its balanced accuracy) next to the product's own
  `token_f1` and `exact_match` and the MiniLM cosine (packaged all-MiniLM-L6-v2, max over gold
  answers), each computed through the product's metric specs;
- faithfulness: the heuristic judge's `faithfulness` (under both judge call designs, `combined`
  and `separate`; and the share of its yes/no claim verdicts) next to bare word overlap (share of the answer's words found in the contexts), the
  MiniLM cosine of answer and best context, and the two previous rule sets (`lexical-v1`,
  `lexical-v2`), re-implemented here.

The labelled sets come from ../shared/data (each folder's SOURCE.txt says where from). How
the labels are built, plainly, because some constructions favour one kind of score:

answer_correctness
- squad_spans (SQuAD 2.0 dev, Normans): SQuAD's own human-performance setup. The last
  annotator's answer is scored against the other annotators' answers (right); the last
  annotator's answer to another question about the same paragraph is scored against this
  question's answers (wrong; skipped when it equals one of them). Short spans, human labels.
- squad_sentences: a long answer. Right = the paragraph sentence that holds the first gold
  answer's span; wrong = the sentence holding another question's answer, when it is a
  different sentence and holds none of this question's answers. Right answers contain a gold
  answer by construction, so containment rules are favoured here.
- halueval_qa (HaluEval QA): gold = the right answer. Right = the knowledge sentence that
  contains the right answer (a quoted source sentence; same caveat); wrong = the hallucinated
  answer (ChatGPT-written, plausible but wrong by construction).
- ragchecker: each claim of the recorded responses (its subject-relation-object triple as
  text) against the reference answer; right = RAGChecker's checker marked it entailed by the
  reference. Model labels, not human ones, and only 16 claims: a rough signal.

faithfulness (protocol: the support rule's weights and threshold are fitted on ONE set,
halueval_tune, and every other set is a hold-out that played no part in choosing anything)
- halueval_tune: rows 1-250 of HaluEval QA, the right and the hallucinated answer each, the
  knowledge passage as the only context. The tuning set: `fit_support` refits the rule here
  and the bench exits with an error if it differs from the frozen values in evalcore/judges/offline/lexical_verdicts.py.
- halueval_held_out: rows 251-500, built the same way (same source, so the nearest hold-out).
- ragchecker: every response claim and reference claim against the retrieved passages;
  supported = RAGChecker's checker found a passage entailing it (46 claims, model labels).
- graphrag_novel: GraphRAG-Bench Novel, every question's gold answer against its own gold
  evidence sentences (supported) and the gold answer of the next question about the same novel
  against the same evidence (unsupported; skipped when the two answers are equal). Labels by
  construction, not judgements: the benchmark's evidence is taken to support its answer (long
  "summarize" and "creative" answers go beyond it), and a wrong pairing is usually off-topic,
  which is easy for any overlap score. Its value is the other kind of text: long, abstractive
  answers written by the benchmark's authors, 2,010 questions over 20 novels.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@dataclass
class Case:
    """One labelled answer: right (1) or wrong (0) against its gold answers / contexts."""

    question: str
    golds: list[str]
    answer: str
    label: int
    contexts: list[str] = field(default_factory=list)


# ---- labelled sets ------------------------------------------------------------------------
def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text` (a plain punctuation split)."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def _sentence_at(text: str, offset: int) -> str:
    for a, b in _sentence_spans(text):
        if a <= offset < b:
            return text[a:b].strip()
    return ""


def _squad_paragraphs(data: Path):
    doc = json.loads((data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text(encoding="utf-8"))
    for article in doc["data"]:
        for p in article["paragraphs"]:
            qas = [qa for qa in p["qas"] if not qa.get("is_impossible") and qa["answers"]]
            if len(qas) >= 2:
                yield p["context"], qas


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def squad_spans(data: Path = DATA) -> list[Case]:
    """Leave-one-annotator-out spans (right) and another question's span (wrong)."""
    cases = []
    for _, qas in _squad_paragraphs(data):
        for i, qa in enumerate(qas):
            texts = [a["text"] for a in qa["answers"]]
            if len(texts) < 2:
                continue
            others = list(dict.fromkeys(texts[:-1]))
            cases.append(Case(qa["question"], others, texts[-1], 1))
            other = qas[(i + 1) % len(qas)]["answers"][-1]["text"]
            if not any(_same(other, g) for g in texts):
                cases.append(Case(qa["question"], others, other, 0))
    return cases


def squad_sentences(data: Path = DATA) -> list[Case]:
    """The sentence holding a gold span (right) or another question's span (wrong)."""
    cases = []
    for context, qas in _squad_paragraphs(data):
        for i, qa in enumerate(qas):
            golds = list(dict.fromkeys(a["text"] for a in qa["answers"]))
            right = _sentence_at(context, qa["answers"][0]["answer_start"])
            other_qa = qas[(i + 1) % len(qas)]
            wrong = _sentence_at(context, other_qa["answers"][0]["answer_start"])
            if not right or not wrong or right == wrong:
                continue
            if any(g.casefold() in wrong.casefold() for g in golds):
                continue
            cases += [Case(qa["question"], golds, right, 1), Case(qa["question"], golds, wrong, 0)]
    return cases


def _halueval_rows(data: Path) -> list[dict]:
    path = data / "halueval" / "qa_one-turn_data.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def halueval_correctness(data: Path = DATA) -> list[Case]:
    """Knowledge sentence holding the right answer (right) vs the hallucinated answer (wrong)."""
    cases = []
    for row in _halueval_rows(data):
        gold = row["right_answer"].strip()
        knowledge = row["knowledge"].replace(".", ". ")
        sentence = next((knowledge[a:b].strip() for a, b in _sentence_spans(knowledge)
                         if gold.casefold() in knowledge[a:b].casefold()), "")
        if not gold or not sentence:
            continue
        cases += [Case(row["question"], [gold], sentence, 1),
                  Case(row["question"], [gold], row["hallucinated_answer"], 0)]
    return cases


def _ragchecker(data: Path) -> list[dict]:
    return json.loads((data / "ragchecker" / "checking_outputs.json").read_text(encoding="utf-8"))["results"]


def _claim_text(triple: list[str]) -> str:
    return " ".join(t.strip() for t in triple if t.strip()) + "."


def ragchecker_correctness(data: Path = DATA) -> list[Case]:
    """Response claims against the reference answer, labelled by RAGChecker's checker."""
    cases = []
    for r in _ragchecker(data):
        for triple, label in zip(r["response_claims"], r["answer2response"]):
            cases.append(Case(r["query"], [r["gt_answer"]], _claim_text(triple), int(label == "Entailment")))
    return cases


def halueval_faithfulness(data: Path = DATA, half: str | None = None) -> list[Case]:
    """Right and hallucinated answers with the knowledge passage as the only context.

    half="tune" is the first 250 rows (where the support threshold was chosen), "held_out"
    the rest, None all 500."""
    rows = _halueval_rows(data)
    rows = rows[:250] if half == "tune" else rows[250:] if half == "held_out" else rows
    cases = []
    for row in rows:
        for key, label in (("right_answer", 1), ("hallucinated_answer", 0)):
            cases.append(Case(row["question"], [row["right_answer"]], row[key], label, [row["knowledge"]]))
    return cases


def ragchecker_faithfulness(data: Path = DATA) -> list[Case]:
    """Every response and reference claim against the retrieved passages (checker labels)."""
    cases = []
    for r in _ragchecker(data):
        ctxs = [c["text"] for c in r["retrieved_context"]]
        for claims, labels in ((r["response_claims"], r["retrieved2response"]),
                               (r["gt_answer_claims"], r["retrieved2answer"])):
            for triple, per_ctx in zip(claims, labels):
                cases.append(Case(r["query"], [r["gt_answer"]], _claim_text(triple),
                                  int("Entailment" in per_ctx), ctxs))
    return cases


def graphrag_faithfulness(data: Path = DATA) -> list[Case]:
    """Gold answer vs its own evidence (supported) and the next same-novel question's answer
    against that evidence (unsupported)."""
    rows = json.loads((data / "graphrag_bench" / "novel_questions.json").read_text(encoding="utf-8"))
    by_novel: dict[str, list[dict]] = {}
    for row in rows:
        by_novel.setdefault(row["source"], []).append(row)
    cases = []
    for group in by_novel.values():
        for i, row in enumerate(group):
            answer, evidence = row["answer"].strip(), row["evidence"].strip()
            if not answer or not evidence:
                continue
            cases.append(Case(row["question"], [answer], answer, 1, [evidence]))
            other = group[(i + 1) % len(group)]["answer"].strip()
            if other and not _same(other, answer):
                cases.append(Case(row["question"], [answer], other, 0, [evidence]))
    return cases


CORRECTNESS_SETS = {"squad_spans": squad_spans, "squad_sentences": squad_sentences,
                    "halueval_qa": halueval_correctness, "ragchecker": ragchecker_correctness}
# The faithfulness protocol: the support rule is fitted on TUNING_SET alone; the others are
# hold-outs (tests/judges/test_heuristic_gold.py holds the heuristic to >= word overlap on each).
TUNING_SET = "halueval_tune"
FAITHFULNESS_SETS = {TUNING_SET: lambda d=DATA: halueval_faithfulness(d, "tune"),
                     "halueval_held_out": lambda d=DATA: halueval_faithfulness(d, "held_out"),
                     "ragchecker": ragchecker_faithfulness,
                     "graphrag_novel": graphrag_faithfulness}
HOLD_OUT_SETS = [name for name in FAITHFULNESS_SETS if name != TUNING_SET]


# ---- scores -------------------------------------------------------------------------------
def _items(cases: list[Case]):
    from evalcore.schemas import EvalQuestion, EvalResponse, RetrievedChunk

    items = []
    for i, c in enumerate(cases):
        q = EvalQuestion(id=f"c{i}", question=c.question, ground_truth=c.golds[0], answers=c.golds)
        r = EvalResponse(question_id=q.id, method="m", answer=c.answer,
                         retrieved=[RetrievedChunk(rank=k, text=t) for k, t in enumerate(c.contexts, 1)])
        items.append((q, r))
    return items


def metric(name: str, cases: list[Case], **options: Any) -> np.ndarray:
    """The product's metric `name` on the cases (judged metrics with the heuristic judge;
    `options`: scoring options, e.g. judge_calls="separate")."""
    from evalcore.metrics.base import ScoringContext
    from evalcore.metrics.registry import METRICS

    ctx = ScoringContext(run_id="bench-heuristic", options={"judge": "heuristic", **options})
    return np.array([s.value for s in METRICS[name].compute(_items(cases), ctx)], dtype=float)


def word_overlap(cases: list[Case]) -> np.ndarray:
    """Share of the answer's word tokens that occur in its contexts (no stop list, no stems)."""
    from evalcore.judges.offline.words import tokens

    out = []
    for c in cases:
        words, seen = tokens(c.answer), set(tokens("\n".join(c.contexts)))
        out.append(sum(w in seen for w in words) / len(words) if words else 0.0)
    return np.array(out)


def _embed(texts: list[str]) -> dict[str, np.ndarray]:
    from evalcore.embeddings import get_embedder

    unique = sorted(set(texts))
    vecs = np.asarray(get_embedder().encode(unique), dtype=np.float32)
    return dict(zip(unique, vecs))


def minilm_gold(cases: list[Case]) -> np.ndarray:
    """Cosine of answer and gold answer (best gold), packaged MiniLM."""
    vec = _embed([c.answer for c in cases] + [g for c in cases for g in c.golds])
    return np.array([max(float(vec[c.answer] @ vec[g]) for g in c.golds) for c in cases])


def minilm_context(cases: list[Case]) -> np.ndarray:
    """Cosine of answer and its closest context, packaged MiniLM."""
    vec = _embed([c.answer for c in cases] + [t for c in cases for t in c.contexts])
    return np.array([max(float(vec[c.answer] @ vec[t]) for t in c.contexts) for c in cases])


def auc(labels, scores) -> float:
    """ROC AUC: the chance a right case outscores a wrong one, ties counting half."""
    from sklearn.metrics import roc_auc_score

    labels, scores = np.asarray(labels), np.nan_to_num(np.asarray(scores, dtype=float), nan=0.0)
    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else float("nan")


CORRECTNESS_SCORES = {"heuristic answer_correctness": lambda cs: metric("answer_correctness", cs),
                      "heuristic answer_class": lambda cs: metric("answer_class", cs),
                      "token_f1": lambda cs: metric("token_f1", cs),
                      "exact_match": lambda cs: metric("exact_match", cs),
                      "MiniLM cosine": minilm_gold}
def _claims(answer: str) -> list[str]:
    from evalcore.judges.offline.words import sentences

    return sentences(answer) or ([answer] if answer.strip() else [])


def verdict_share(cases: list[Case]) -> np.ndarray:
    """The heuristic's yes/no verdicts alone: share of the answer's sentences supported."""
    from evalcore.judges.offline import lexical_verdicts

    return np.array([lexical_verdicts.support_frac(c.answer, c.contexts) for c in cases])


def _previous_rule(supported: Callable[[str, Any], bool]) -> Callable[[list[Case]], np.ndarray]:
    """Share of the answer's claims that a previous rule set (a function of claim and context
    vocabulary) called supported; 1 when no claim (the metric's rule), 0 without contexts."""
    from evalcore.judges.offline.words import Vocabulary, sentences

    def score(cases: list[Case]) -> np.ndarray:
        out = []
        for c in cases:
            claims, vocab = sentences(c.answer), Vocabulary("\n".join(c.contexts))
            out.append(1.0 if not claims else 0.0 if not c.contexts else
                       sum(supported(s, vocab) for s in claims) / len(claims))
        return np.array(out)
    return score


def _v1_supported(statement, vocab) -> bool:
    """lexical-v1: >= 85% of the content words found."""
    from evalcore.judges.offline.words import coverage

    return coverage(statement, vocab)[0] >= 0.85


def _v2_supported(statement, vocab) -> bool:
    """lexical-v2: every name and number found and >= 70% of the other content words."""
    from evalcore.judges.offline.words import content, key_words

    keys, words = key_words(statement), content(statement)
    if any(not vocab.has(w) for w in words if w in keys):
        return False
    others = [w for w in words if w not in keys]
    return not others or sum(map(vocab.has, others)) / len(others) >= 0.7


# The judge's faithfulness under both call designs (scoring option judge_calls, issue 38): the
# combined design (the default) asks for the claims together with answer_relevance's questions,
# the separate one apart; the same claims and verdicts must give the same AUC.
FAITHFULNESS_SCORES = {"heuristic faithfulness": lambda cs: metric("faithfulness", cs),
                       "heuristic faithfulness, separate calls": lambda cs: metric("faithfulness", cs,
                                                                                 judge_calls="separate"),
                       "heuristic verdicts": verdict_share,
                       "lexical-v1": _previous_rule(_v1_supported),
                       "lexical-v2": _previous_rule(_v2_supported),
                       "word overlap": word_overlap,
                       "MiniLM cosine": minilm_context}


# ---- the support rule's fit (tuning set only) ------------------------------------------------
FIT_L2 = 1.0  # fixed before fitting, never searched


def support_features(cases: list[Case]) -> np.ndarray:
    """Per answer, the mean over its claims of lexical_verdicts.support_features (so the answer's
    fitted score is, up to scale, the mean claim support the metric reports)."""
    from evalcore.judges.offline import lexical_verdicts
    from evalcore.judges.offline.words import Vocabulary

    rows = []
    for c in cases:
        vocab = Vocabulary("\n".join(c.contexts))
        feats = [lexical_verdicts.support_features(s, vocab) for s in _claims(c.answer) or [""]]
        rows.append([np.mean([f[k] for f in feats]) for k in lexical_verdicts.SUPPORT_FEATURES])
    return np.array(rows)


def fit_support(cases: list[Case]) -> tuple[tuple[float, ...], float]:
    """The support rule from labelled cases: a logistic regression of the label on the six
    support features (L2 penalty FIT_L2 on the weights, weights >= 0 so that finding more can
    never lower support, intercept free, L-BFGS-B from zeros). Returned as the weights scaled
    to sum 1 and the threshold where the fitted probability is 1/2 (the tuning set is
    balanced), so that support = sum(weight x feature) >= threshold is the regression's own
    decision, and support ranks answers exactly as its probability does."""
    from scipy.optimize import minimize

    x, y = support_features(cases), np.array([c.label for c in cases], dtype=float)

    def loss(p):
        w, b = p[:-1], p[-1]
        z = x @ w + b
        grad = 1 / (1 + np.exp(-z)) - y
        return (np.sum(np.logaddexp(0, z) - y * z) + FIT_L2 / 2 * w @ w,
                np.r_[x.T @ grad + FIT_L2 * w, grad.sum()])

    n = x.shape[1]
    fit = minimize(loss, np.zeros(n + 1), jac=True, method="L-BFGS-B", bounds=[(0, None)] * n + [(None, None)],
                   options={"gtol": 1e-10, "ftol": 1e-14, "maxiter": 10_000})
    w, b = fit.x[:-1], fit.x[-1]
    return tuple(float(v) for v in w / w.sum()), float(-b / w.sum())


def check_frozen(data: Path, tolerance: float = 0.002) -> tuple[bool, list[str]]:
    """Refit on the tuning set only and compare with the frozen rule in offline/lexical_verdicts.py."""
    from evalcore.judges.offline import lexical_verdicts

    weights, threshold = fit_support(FAITHFULNESS_SETS[TUNING_SET](data))
    frozen = (*lexical_verdicts.SUPPORT_WEIGHTS, lexical_verdicts.SUPPORT_THRESHOLD)
    ok = all(abs(a - b) <= tolerance for a, b in zip((*weights, threshold), frozen))
    lines = ["| | " + " | ".join(lexical_verdicts.SUPPORT_FEATURES) + " | threshold |",
             "|---" * (len(lexical_verdicts.SUPPORT_FEATURES) + 2) + "|",
             f"| refitted on {TUNING_SET} | " + " | ".join(f"{v:.3f}" for v in (*weights, threshold)) + " |",
             "| frozen in offline/lexical_verdicts.py | " + " | ".join(f"{v:.3f}" for v in frozen) + " |"]
    return ok, lines


def tuning_features(data: Path) -> list[str]:
    """Each support feature's AUC alone, and the fitted combination's, on the tuning set only:
    what the fit saw."""
    from evalcore.judges.offline import lexical_verdicts

    cases = FAITHFULNESS_SETS[TUNING_SET](data)
    labels, x = [c.label for c in cases], support_features(cases)
    names = [*lexical_verdicts.SUPPORT_FEATURES, "fitted support"]
    fitted = auc(labels, x @ np.array(lexical_verdicts.SUPPORT_WEIGHTS))
    cells = [auc(labels, x[:, k]) for k in range(x.shape[1])] + [fitted]
    return ["| set | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|",
            f"| {TUNING_SET} | " + " | ".join(f"{v:.3f}" for v in cells) + " |"]


def table(sets: dict, scorers: dict, data: Path, limit: int | None, embeddings: bool) -> list[str]:
    """Markdown rows: set, n right / n wrong, one AUC per scorer."""
    names = [n for n in scorers if embeddings or "MiniLM" not in n]
    lines = ["| set | right / wrong | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
    for set_name, build in sets.items():
        cases = build(data)
        if limit:
            cases = cases[:limit]
        labels = [c.label for c in cases]
        cells = [f"{auc(labels, scorers[n](cases)):.3f}" for n in names]
        role = " (tuning set)" if sets is FAITHFULNESS_SETS and set_name == TUNING_SET else ""
        lines.append(f"| {set_name}{role} | {sum(labels)} / {len(labels) - sum(labels)} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default ../shared/data)")
    ap.add_argument("--limit", type=int, default=None, help="use the first N cases of each set")
    ap.add_argument("--no-embeddings", action="store_true", help="skip the MiniLM columns")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the packaged model only; never a download
    if not args.data.is_dir():
        print(f"no labelled data at {args.data}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    print("answer_correctness: ROC AUC, right vs wrong answers\n")
    print("\n".join(table(CORRECTNESS_SETS, CORRECTNESS_SCORES, args.data, args.limit, not args.no_embeddings)))
    print(f"\nfaithfulness support rule: refitted on {TUNING_SET} only (weights scaled to sum 1)\n")
    frozen_ok, lines = check_frozen(args.data)
    print("\n".join(lines))
    print(f"\nfaithfulness, {TUNING_SET} only: each support feature alone and the fitted support\n")
    print("\n".join(tuning_features(args.data)))
    print(f"\nfaithfulness: ROC AUC, supported vs unsupported answers; {TUNING_SET} is the tuning set, "
          f"the others ({', '.join(HOLD_OUT_SETS)}) are hold-outs\n")
    print("\n".join(table(FAITHFULNESS_SETS, FAITHFULNESS_SCORES, args.data, args.limit, not args.no_embeddings)))
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if not frozen_ok:
        print("\nthe frozen support rule in evalcore/judges/offline/lexical_verdicts.py is not the fit on "
              f"{TUNING_SET}: the hold-out figures above are not hold-out figures", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
