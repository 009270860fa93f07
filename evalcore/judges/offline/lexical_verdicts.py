"""Lexical approximations of judge verdicts, shared by the offline judge's task definitions.

Why a module of its own: each task's heuristic lives with its definition (task_library), and
several of them need the same few rules (is a statement covered by the contexts, token F1,
banding a share onto a 0-5 scale). See the package docstring (evalcore.judges.offline) for
what the offline judge is and is not.
"""

from __future__ import annotations

from typing import Any

from evalcore.judges.offline.words import Vocabulary, content, coverage, key_words, sentences, tokens

# Support of a statement by the contexts: a weighted share of six lexical measures (SUPPORT_FEATURES,
# each 0-1, all measured against the contexts together), supported when it reaches
# SUPPORT_THRESHOLD. Weights and threshold were fitted on HaluEval QA rows 1-250 ALONE (a logistic
# regression with fixed settings; bench/bench_heuristic_judge.py refits them and checks these
# values) and frozen before any other labelled set was scored: docs/judges.md has the protocol and
# the hold-out figures.
SUPPORT_FEATURES = ("words", "content_exact", "content", "names_numbers", "other", "all_names_numbers")
SUPPORT_WEIGHTS = (0.067, 0.249, 0.177, 0.063, 0.269, 0.175)
SUPPORT_THRESHOLD = 0.882
# answer_correctness of an answer that holds every content word of a gold answer (an exact
# match scores 1, anything else is scaled below this).
CONTAINED = 0.9


def best_context(statement: str, vocabs: list[Vocabulary]) -> tuple[float, int | None, list[str]]:
    best, best_i, best_missing = -1.0, None, []
    for i, v in enumerate(vocabs, 1):
        cov, missing = coverage(statement, v)
        if cov > best:
            best, best_i, best_missing = cov, i, missing
    return max(best, 0.0), best_i, best_missing


def _share(words: list[str], found) -> float:
    return sum(map(found, words)) / len(words) if words else 1.0


def support_features(statement: str, vocab: Vocabulary) -> dict[str, float]:
    """The six measures the support score weighs, each 0-1 (1 when there is nothing to find):

    - words: share of all the statement's word tokens found as such (stop words included: the
      bench's "plain word overlap");
    - content_exact / content: share of its content words found as such / with the prefix
      rule for inflections;
    - names_numbers: share of its names and numbers found (numbers exactly);
    - other: share of its other content words found (prefix rule);
    - all_names_numbers: 1 when every name and number is found, else 0 (a hallucinated answer
      often swaps just one)."""
    words, cws, keys = tokens(statement), content(statement), key_words(statement)
    names = [w for w in cws if w in keys]
    found_names = _share(names, vocab.has)
    return {"words": _share(words, vocab.words.__contains__),
            "content_exact": _share(cws, vocab.words.__contains__),
            "content": _share(cws, vocab.has),
            "names_numbers": found_names,
            "other": _share([w for w in cws if w not in keys], vocab.has),
            "all_names_numbers": float(found_names == 1.0)}


def support_score(features: dict[str, float]) -> float:
    """The weighted share: sum of SUPPORT_WEIGHTS x features (the weights sum to 1)."""
    return sum(w * features[k] for k, w in zip(SUPPORT_FEATURES, SUPPORT_WEIGHTS))


def support(statement: str, vocab: Vocabulary) -> tuple[float, bool, str]:
    """How far `statement` is lexically backed by the text of `vocab` (0-1), whether that
    makes it supported (>= SUPPORT_THRESHOLD), and why: the reason names what was not found,
    names and numbers first, since those carry the facts a hallucination swaps."""
    f = support_features(statement, vocab)
    score = support_score(f)
    keys = key_words(statement)
    missing = [w for w in content(statement) if not vocab.has(w)]
    absent_keys = [w for w in missing if w in keys]
    others = [w for w in missing if w not in keys]
    ok = score >= SUPPORT_THRESHOLD
    reason = (f"support {score:.2f} ({'>=' if ok else '<'} {SUPPORT_THRESHOLD:.2f}): "
              f"{f['content']:.0%} of content words found in the contexts")
    if absent_keys:
        reason += f"; name/number not found: {', '.join(absent_keys[:6])}"
    if others:
        reason += f"; not found: {', '.join(others[:6])}"
    return score, ok, reason


def verdicts(statements: list[str], contexts: list[str]) -> list[dict]:
    """One verdict per statement (see `support`), naming the best-covering context, with its
    support score (read by faithfulness and context_recall in place of the 0/1 verdict)."""
    whole = Vocabulary("\n".join(contexts))
    vocabs = [Vocabulary(c) for c in contexts]
    out = []
    for k, s in enumerate(statements, 1):
        score, ok, reason = support(s, whole) if contexts else (0.0, False, "no contexts")
        _, ctx, _ = best_context(s, vocabs)
        out.append({"i": k, "verdict": int(ok), "context": ctx if ok else None, "reason": reason,
                    "support": round(score, 4)})
    return out


def gold_answers(inp: dict[str, Any]) -> list[str]:
    """Every acceptable gold answer of a request, ground truth first, blanks and repeats
    dropped: the `answers` builders send (the question's whole list, e.g. SQuAD's several
    human answers), else the `ground_truth` alone."""
    given = [inp.get("ground_truth"), *(inp.get("answers") or [])]
    return list(dict.fromkeys(a.strip() for a in given if isinstance(a, str) and a.strip()))


def match(answer: str, gold: str, question: str = "") -> tuple[float, str]:
    """How far `answer` says what `gold` says, 0-1, and why.

    1 for the same words; CONTAINED when the answer holds every content word of the gold
    (a short gold answer inside a long answer); otherwise CONTAINED times the mean of the two
    word shares (answer words in the gold, gold words in the answer). The mean rather than
    F1: when one side is much longer, F1 collapses to the smaller share and stops telling a
    right short claim from a wrong one. Words of the question are left out on both sides
    (restating the question is not answering it), unless the gold is made of them alone
    ("A or B?" answered "A")."""
    a_tokens = tokens(answer)
    if a_tokens and a_tokens == tokens(gold):
        return 1.0, "same words as a gold answer"
    drop = set(tokens(question))
    if not content(gold, drop):
        drop = set()
    a_words, g_words = content(answer, drop), content(gold, drop)
    if not a_words or not g_words:
        return 0.0, "no content words to compare"
    va, vg = Vocabulary(answer), Vocabulary(gold)
    precision = sum(vg.has(w) for w in a_words) / len(a_words)
    recall = sum(va.has(w) for w in g_words) / len(g_words)
    if recall == 1.0:
        return CONTAINED, "holds every word of a gold answer"
    return CONTAINED * (precision + recall) / 2, \
        f"{recall:.0%} of a gold answer's words in the answer, {precision:.0%} of the answer's in it"


def best_match(answer: str, golds: list[str], question: str = "") -> tuple[float, str]:
    """`match` against every gold answer; the best counts (SQuAD's max over gold answers)."""
    best, why = 0.0, "no gold answer"
    for i, gold in enumerate(golds, 1):
        score, reason = match(answer, gold, question)
        if score > best or i == 1:
            best, why = score, (f"gold answer {i} of {len(golds)}: " if len(golds) > 1 else "") + reason
    return best, why


def f1(answer: str, reference: str) -> float:
    a, r = content(answer), content(reference)
    if not a or not r:
        return 0.0
    va, vr = Vocabulary(answer), Vocabulary(reference)
    p = sum(vr.has(w) for w in a) / len(a)
    rc = sum(va.has(w) for w in r) / len(r)
    return 0.0 if p + rc == 0 else 2 * p * rc / (p + rc)


def band(frac: float, top: int = 5) -> int:
    return int(round(max(0.0, min(1.0, frac)) * top))


def support_frac(answer: str, contexts: list[str]) -> float:
    claims = sentences(answer) or ([answer] if answer.strip() else [])
    if not claims:
        return 0.0
    return sum(v["verdict"] for v in verdicts(claims, contexts)) / len(claims)


def cited(answer: str, n_citations: int) -> bool:
    low = answer.casefold()
    return n_citations > 0 or "[source" in low or "출처" in answer or "according to" in low
