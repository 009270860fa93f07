"""Lexical building blocks for the offline `heuristic` judge.

Why lexical: the heuristic judge must run anywhere (CI, air-gapped) and be explainable. Its
core question, "is this statement backed by that text?", is approximated by how many of the
statement's content words (not stop words) occur in the
text, with numbers required to match exactly and a prefix rule for inflections ("started" /
"starts", Korean particles: "천문대는" / "천문대"). It is an approximation and says so: every
value it produces is labelled `heuristic`.
"""

from __future__ import annotations

import re
import unicodedata

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|\d+(?:[.,]\d+)*|[^\W\d_{_CJK}]+")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_SENT = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_NUM = re.compile(r"^\d+(?:[.,]\d+)*$")

STOP = frozenset("""
a an the and or but if then else of to in on at by for with from as is are was were be been being
it its this that these those there here which who whom whose what when where why how do does did
done have has had having not no nor so than too very can could should would may might must will
shall i me my we our you your he him his she her they them their also just only any all some
such each other into over under about after before between both more most own same s t don
per via upon while during within without again further once out up down off than yes
""".split())

HEDGES = ("i don't know", "i do not know", "not sure", "cannot determine", "can't determine",
          "no information", "insufficient", "unable to answer", "cannot answer", "can't answer",
          "not enough information", "it depends", "unclear", "uncertain", "not specified",
          "not mentioned", "cannot find", "could not find", "모르", "알 수 없", "찾을 수 없", "확인 불가",
          "확인할 수 없", "불확실")
NEGATIONS = frozenset({"not", "no", "never", "none", "cannot", "isn't", "wasn't", "aren't", "weren't",
                       "doesn't", "didn't", "don't", "won't", "없", "않", "아니"})


def norm(text: str | None) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text or "").casefold()).strip()


_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")


def tokens(text: str | None) -> list[str]:
    """Word tokens; digits split from letters ("1987년에" -> 1987, 년에), "1,234" -> "1234"."""
    out = []
    for t in _TOKEN.findall(norm(text)):
        out.append(t.replace(",", "") if _THOUSANDS.match(t) else t)
    return out


def content(text: str | None, drop: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Content tokens in order: no stop words, no one-letter Latin tokens, none of `drop`."""
    out = []
    for t in tokens(text):
        if t in STOP or t in drop or (len(t) == 1 and t.isascii() and not t.isdigit()):
            continue
        out.append(t)
    return out


def sentences(text: str | None, drop_hedges: bool = True) -> list[str]:
    """Sentences with content; "I could not find that" sentences are not claims, so dropped."""
    parts = [p.strip(" -*•\t") for p in _SENT.split(text or "")]
    return [p for p in parts if content(p) and not (drop_hedges and is_hedge(p))]


def _stem(t: str) -> str:
    if _HANGUL.search(t):
        return t[:2] if len(t) > 2 else t
    return t[:5] if len(t) > 5 else t


class Vocabulary:
    """The words of a text, for fast 'does this word occur' checks with the prefix rule."""

    def __init__(self, text: str):
        self.words = set(tokens(text))
        self.stems = {_stem(w) for w in self.words if not _NUM.match(w)}

    def has(self, word: str) -> bool:
        if word in self.words:
            return True
        if _NUM.match(word):
            return False  # numbers must match exactly
        return _stem(word) in self.stems


def coverage(statement: str, vocab: Vocabulary, drop_text: str = "") -> tuple[float, list[str]]:
    """Share of the statement's content words found in `vocab`, and the missing ones.

    Words of `drop_text` are not counted (used to ignore words a reference shares with the
    question). Support checks count every word, question words included, because a model
    judge also checks the whole completed statement ("First for Women was started first"
    asserts "started" too). A statement with no content words counts as covered.
    """
    words = content(statement, drop=set(tokens(drop_text)) if drop_text else frozenset())
    if not words:
        return 1.0, []
    missing = [w for w in words if not vocab.has(w)]
    return 1.0 - len(missing) / len(words), missing


def key_words(text: str | None) -> set[str]:
    """The statement's names and numbers: words written with a capital (except the first,
    capitalised by grammar alone) and numbers, as tokens, stop words excluded.

    Why: these carry the facts a claim asserts ("flows through Uganda", "6,650 km"), so a
    context without them does not support it, however many other words it shares. Scripts
    without letter case (Korean, CJK) contribute numbers only."""
    out: set[str] = set()
    for i, word in enumerate(_TOKEN.findall(unicodedata.normalize("NFKC", text or ""))):
        if _NUM.match(word) or (i > 0 and word[0].isupper()):
            out.update(t for t in tokens(word) if t not in STOP)
    return out


def recall(reference: str, candidate: str, question: str = "") -> float:
    """Share of the reference's content words (not in the question) present in the candidate."""
    return coverage(reference, Vocabulary(candidate), question)[0] if content(reference) else 1.0


def is_hedge(text: str | None) -> bool:
    t = norm(text)
    return any(h in t for h in HEDGES)


def contradiction_pairs(text: str | None) -> int:
    """Pairs of sentences that share most words but differ in negation: a crude inconsistency cue."""
    sents = [set(content(s)) | ({"__neg__"} if NEGATIONS & set(tokens(s)) else set()) for s in sentences(text)]
    n = 0
    for i in range(len(sents)):
        for j in range(i + 1, len(sents)):
            a, b = sents[i] - {"__neg__"}, sents[j] - {"__neg__"}
            if a and b and len(a & b) / len(a | b) >= 0.6 and (("__neg__" in sents[i]) != ("__neg__" in sents[j])):
                n += 1
    return n
