"""Lexical approximations of judge verdicts, shared by the offline judge's task definitions.

Why a module of its own: each task's heuristic lives with its definition (task_library), and
several of them need the same few rules (is a statement covered by the contexts, token F1,
banding a share onto a 0-5 scale). See heuristic.py for what the offline judge is and is not.
"""

from __future__ import annotations

from evalcore.judges.lexical import Vocabulary, content, coverage, sentences

SUPPORT_THRESHOLD = 0.85


def best_context(statement: str, vocabs: list[Vocabulary]) -> tuple[float, int | None, list[str]]:
    best, best_i, best_missing = -1.0, None, []
    for i, v in enumerate(vocabs, 1):
        cov, missing = coverage(statement, v)
        if cov > best:
            best, best_i, best_missing = cov, i, missing
    return max(best, 0.0), best_i, best_missing


def verdicts(statements: list[str], contexts: list[str]) -> list[dict]:
    """A statement is supported when >= 85% of its content words occur in the contexts
    (numbers exactly); the best-covering context is named."""
    whole = Vocabulary("\n".join(contexts))
    vocabs = [Vocabulary(c) for c in contexts]
    out = []
    for s in statements:
        cov, missing = coverage(s, whole)
        _, ctx, _ = best_context(s, vocabs)
        ok = cov >= SUPPORT_THRESHOLD and bool(contexts)
        reason = f"{cov:.0%} of content words found in the contexts"
        if missing:
            reason += f"; missing: {', '.join(missing[:6])}"
        out.append({"i": None, "verdict": int(ok), "context": ctx if ok else None, "reason": reason})
    for k, v in enumerate(out, 1):
        v["i"] = k
    return out


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
