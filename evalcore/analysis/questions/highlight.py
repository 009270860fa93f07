"""Where to highlight untrusted text: character spans, computed here, drawn by the page.

Why: a researcher reading one answer should see at a glance which of its claims the judge
found supported, and an annotator checking a claim should not hunt through a passage for the
words that back it. Both are spans over the stored text (start, end, kind, title); the page
turns them into <mark> elements through its one escaping helper (ui.safe_widgets.inert_html), so
nothing here produces markup. Word matching uses the heuristic judge's own lexical rules
(content words, stems, numbers exact), so "matching words" means the same thing everywhere.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

from evalcore.judges.offline.words import STOP, Vocabulary, content, tokens

_WORD = re.compile(r"\w+")
# A sentence ends at . ! ? (and their CJK forms) followed by space, or at a line break.
_SENT_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
LOCATE_AT = 0.5  # a claim not found verbatim is placed on the answer sentence holding this share of its words


class Span(NamedTuple):
    start: int
    end: int
    kind: str  # supported | unsupported | unjudged | cited | match (ui.safe_widgets.MARK_CLASSES)
    title: str


def sentence_spans(text: str | None) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, surrounding blanks trimmed."""
    text = text or ""
    out, pos = [], 0
    for m in [*_SENT_END.finditer(text), None]:
        end = m.start() if m else len(text)
        piece = text[pos:end]
        lead = len(piece) - len(piece.lstrip())
        s, e = pos + lead, pos + len(piece.rstrip())
        if e > s:
            out.append((s, e))
        pos = m.end() if m else pos
    return out


def _claim_vocab(claim: str) -> Vocabulary:
    return Vocabulary(" ".join(content(claim)))


def _is_content(token: str) -> bool:
    return token not in STOP and not (len(token) == 1 and token.isascii() and not token.isdigit())


def word_spans(evidence: str | None, claim: str | None, title: str = "word of the claim") -> list[Span]:
    """The words of `evidence` that are content words of `claim` (same stem, numbers exact),
    neighbours separated only by blanks joined into one span."""
    evidence, vocab = evidence or "", _claim_vocab(claim or "")
    if not vocab.words:
        return []
    hits: list[list[int]] = []
    for m in _WORD.finditer(evidence):
        if any(_is_content(t) and vocab.has(t) for t in tokens(m.group())):
            if hits and not evidence[hits[-1][1]:m.start()].strip():
                hits[-1][1] = m.end()
            else:
                hits.append([m.start(), m.end()])
    return [Span(s, e, "match", title) for s, e in hits]


def overlap(claim: str, text: str) -> float:
    """Share of the claim's content words found in `text` (0 when it has none)."""
    words = content(claim)
    if not words:
        return 0.0
    vocab = Vocabulary(text)
    return sum(vocab.has(w) for w in words) / len(words)


def best_sentence(claim: str | None, passage: str | None) -> tuple[int, int] | None:
    """The sentence of `passage` holding the largest share of the claim's content words (the
    first on a tie); None when no sentence shares any."""
    best, best_share = None, 0.0
    for s, e in sentence_spans(passage):
        share = overlap(claim or "", passage[s:e])  # type: ignore[index]
        if share > best_share:
            best, best_share = (s, e), share
    return best


def _find(answer: str, claim: str, taken: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The claim verbatim in the answer (case-insensitive; an occurrence not already used)."""
    needle = claim.strip().strip(" -*•\t")
    low, lneedle = answer.casefold(), needle.casefold()
    if not needle or len(low) != len(answer) or len(lneedle) != len(needle):
        return None
    start = low.find(lneedle)
    while start >= 0:
        span = (start, start + len(needle))
        if span not in taken:
            return span
        start = low.find(lneedle, start + 1)
    return None


VERDICT_WORDS = {"supported": "supported", "not_supported": "not supported"}


def claim_spans(answer: str | None, claims: Iterable[tuple[int, str, str | None]]) -> tuple[list[Span], set[int]]:
    """Spans of the answer marking its claims, and the claim numbers (idx) placed.

    `claims` are (idx, text, verdict). A claim is placed where it occurs verbatim (the heuristic
    judge's claims are the answer's sentences), else on the answer sentence holding at least
    LOCATE_AT of its content words (a model's claims are rephrased). Claims placed on the same
    text share one span: unsupported if any of them is, supported if all are. A claim whose
    place overlaps another's only in part is left unplaced (the list below the answer shows it)."""
    answer = answer or ""
    sentences = sentence_spans(answer)
    placed: dict[tuple[int, int], list[tuple[int, str | None]]] = {}
    for idx, text, verdict in claims:
        span = _find(answer, text or "", list(placed))
        if span is None and sentences:
            share, span = max(((overlap(text or "", answer[s:e]), (s, e)) for s, e in sentences),
                              key=lambda x: x[0])
            span = span if share >= LOCATE_AT else None
        if span is not None:
            placed.setdefault(span, []).append((idx, verdict))
    spans: list[Span] = []
    done: set[int] = set()
    for (s, e), group in sorted(placed.items()):
        if spans and s < spans[-1].end:
            continue
        verdicts = {v for _, v in group}
        kind = ("unsupported" if "not_supported" in verdicts else
                "supported" if verdicts == {"supported"} else "unjudged")
        title = "; ".join(f"claim {i + 1}: {VERDICT_WORDS.get(v or '', 'not judged')}" for i, v in group)
        spans.append(Span(s, e, kind, title))
        done.update(i for i, _ in group)
    return spans, done
