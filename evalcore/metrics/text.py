"""Unicode-aware text helpers shared by the lexical, abstention and citation metrics.

Why not `\\b` and `str.lower()`: `\\b` treats a Hangul syllable followed by a particle
("1987년에") as one word and a Latin word glued to CJK text as no word at all, and `lower()`
misses compatibility forms (full-width "ＡＢＣ", ligatures). So everything here compares
NFKC + casefold text, and decides word edges itself:

- a needle whose edge is a Latin letter or a digit must not continue a Latin word/number
  on that side in the haystack ("art" is not found in "start", "4" not in "1987");
- a Latin needle may be followed by letters (plural / inflection: "telescope" in "telescopes"),
  but a numeric needle may not be followed by digits ("19" is not in "1987");
- a Hangul/CJK edge has no boundary rule, because Korean attaches particles to words
  ("천문대는") and Chinese/Japanese have no spaces at all;
- Hangul is compared as decomposed jamo (NFD), because polite endings merge into the last
  syllable: "아니" + "ㅂ니다" is written "아닙니다", which must still contain "아니".
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache

# Han ideographs, Hiragana/Katakana: no spaces between words, so one character = one token.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"[{_CJK_CHARS}]|[^\W{_CJK_CHARS}]+")
_SPACE_RE = re.compile(r"\s+")
# Typographic apostrophes/quotes NFKC leaves alone: "don’t" must equal "don't".
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
_HANGUL_RE = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
# Characters that make a boundary matter: ASCII/Latin letters and digits.
_LATIN_WORD = re.compile(r"[0-9a-z\u00c0-\u024f]")


def normalize(text: str | None) -> str:
    """NFKC + casefold + collapse whitespace; None -> ''."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_QUOTES)
    return _SPACE_RE.sub(" ", text).strip()


def strip_punct(text: str) -> str:
    """Remove every Unicode punctuation/symbol character (categories P* and S*)."""
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith(("P", "S")))


def trim_punct(text: str) -> str:
    """`text` without punctuation/symbol characters at either end (inner ones stay)."""
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or not strip_punct(text[start])):
        start += 1
    while end > start and (text[end - 1].isspace() or not strip_punct(text[end - 1])):
        end -= 1
    return text[start:end]


def tokenize(text: str | None) -> list[str]:
    """Normalised word tokens: runs of letters/digits; each CJK ideograph/kana is its own token.

    Hangul words stay whole (Korean separates words with spaces). Punctuation is dropped.
    """
    return _TOKEN_RE.findall(normalize(text))


def has_hangul(text: str | None) -> bool:
    return bool(text) and bool(_HANGUL_RE.search(text))


def _is_latin(ch: str) -> bool:
    return bool(_LATIN_WORD.match(ch))


@lru_cache(maxsize=8192)
def _needle(needle: str) -> tuple[str, bool]:
    """A needle as `find` compares it, and whether it is Hangul: needles are phrase lists and
    keywords, looked for in every answer, so each is normalised once. Hangul is compared as
    decomposed jamo, so a needle's last syllable also matches the same syllable with a final
    consonant: "아니" is in "아닙니다", "모르" in "모릅니다"."""
    n = normalize(needle)
    if n and has_hangul(n):
        return unicodedata.normalize("NFD", n), True
    return n, False


def find(haystack_norm: str, needle: str, whole_word: bool = False) -> bool:
    """True if `needle` occurs in an already-normalised haystack, respecting word edges
    (see the module docstring). The needle is normalised here. `whole_word=True` also forbids
    a Latin needle from continuing into letters ("no" is then not found in "north"): used for
    phrase lists, where an inflected match would change the meaning."""
    n, hangul = _needle(needle)
    if not n:
        return False
    if hangul:
        haystack_norm = unicodedata.normalize("NFD", haystack_norm)
    start = 0
    while True:
        i = haystack_norm.find(n, start)
        if i < 0:
            return False
        j = i + len(n)
        before = haystack_norm[i - 1] if i > 0 else ""
        after = haystack_norm[j] if j < len(haystack_norm) else ""
        ok_start = not (_is_latin(n[0]) and before and _is_latin(before))
        if n[-1].isdigit():
            # "4" must not match "45" or "4.5"; a trailing ".", "," ending a sentence is fine.
            nxt = haystack_norm[j + 1] if j + 1 < len(haystack_norm) else ""
            ok_end = not (after.isdigit() or (after in ".," and nxt.isdigit()))
        elif whole_word and _is_latin(n[-1]):
            ok_end = not (after and _is_latin(after))
        else:
            ok_end = True
        if ok_start and ok_end:
            return True
        start = i + 1


def contains(text: str | None, needle: str) -> bool:
    """`find` on raw text (normalises both sides)."""
    return find(normalize(text), needle)


# ---- numbers -----------------------------------------------------------------------------
# Optional sign (only when not glued to a preceding letter/digit: "C-1" is 1, " -3" is -3),
# optional currency, digits with thousands separators or plain, optional decimals, optional %.
# The look-behind excludes only Latin letters/digits/".", so "약1000명" still yields 1000.
_NUMBER_RE = re.compile(
    r"(?<![0-9A-Za-z.])"
    r"(?P<sign>[-+\u2212])?"
    r"(?P<cur>[$€£¥₩])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<pct>\s?%)?"
)


def parse_numbers(text: str | None) -> list[float]:
    """Every number in the text as a float: "$1,234.50" -> 1234.5, "-0.133%" -> -0.133,
    "1987년" -> 1987.0 (no word boundary needed), "C-1" -> 1.0, "10-20" -> 10, 20.

    Units are dropped on purpose: "$604" in the reference and "604 dollars" in the answer match.
    """
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text)
    out: list[float] = []
    for m in _NUMBER_RE.finditer(text):
        value = float(m.group("num").replace(",", ""))
        if m.group("sign") in ("-", "\u2212"):
            value = -value
        out.append(value)
    return out


def numbers_equal(a: float, b: float, tolerance: float = 0.0) -> bool:
    """Equal within an absolute tolerance, plus float round-off relative slack."""
    return abs(a - b) <= tolerance + 1e-9 * max(1.0, abs(a), abs(b))


# ---- keyword extraction ------------------------------------------------------------------
STOP_WORDS = frozenset("""
a i in is it its on at to as be he she we you or so if me my no yes the an of by do go up us
a about above after again against all also among an and any are around because been before being
below between both but by can cannot could did does doing down during each either else ever every
few for from further had has have having here hers herself himself how however into itself just
least less more most much must near neither never none nor not now of off once only other ought
ours ourselves over own rather same shall should since some such than that their theirs them
themselves then there these they this those though through thus till under until upon very was
were what whatever when whenever where whereas wherever whether which while whom whose will with
within without would your yours yourself yourselves answer answers question based according
""".split())

# Trailing Korean particles/endings stripped from Hangul words before they become keywords.
KOREAN_PARTICLES = ("입니다", "습니다", "에서는", "에서", "으로", "에게", "까지", "부터", "처럼",
                    "은", "는", "이", "가", "을", "를", "에", "의", "로", "과", "와", "도", "만")

_CAP_PHRASE_RE = re.compile(
    r"(?<![\w])[A-Z][\w'’-]*(?:\s+(?:[A-Z][\w'’-]*|\d[\w.,%-]*))*")
_WORD_RE = re.compile(r"[^\W\d_]+")


def _strip_particle(word: str) -> str:
    for p in KOREAN_PARTICLES:
        if word.endswith(p) and len(word) > len(p):
            return word[: -len(p)]
    return word


def extract_keywords(text: str | None, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """Keywords of a reference answer, in order of appearance, deduplicated (normalised).

    - capitalised phrases, with numbers that follow them ("Territory 118", "Rule C-1"), except
      a lone sentence-initial stop word ("The");
    - numbers, percentages and currency amounts ("0.305%", "$604");
    - words of 4+ letters not in the stop list; Hangul words of 2+ syllables after removing
      a trailing particle (Korean words are short, and particles attach to them).
    """
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text)
    found: list[str] = []
    taken: list[tuple[int, int]] = []  # spans of capitalised phrases: their parts are not repeated

    def inside(m: re.Match) -> bool:
        return any(a <= m.start() and m.end() <= b for a, b in taken)

    for m in _CAP_PHRASE_RE.finditer(text):
        words = m.group(0).strip(" .,;:").split()
        while words and words[0].casefold() in stop_words:
            words = words[1:]
        if words and has_hangul(words[-1][-1]):  # "ETF는": a Korean particle glued to a Latin word
            words[-1] = _strip_particle(words[-1])
        if words:
            found.append(" ".join(words))
            taken.append((m.start(), m.end()))
    for m in _NUMBER_RE.finditer(text):
        if not inside(m):
            found.append(m.group(0).strip())
    for m in _WORD_RE.finditer(text):
        if inside(m):
            continue
        word = m.group(0)
        if has_hangul(word):
            word = _strip_particle(word)
            if len(word) >= 2:
                found.append(word)
        elif len(word) >= 4 and word.casefold() not in stop_words:
            found.append(word)
    seen: set[str] = set()
    out = []
    for kw in found:
        key = normalize(kw)
        if key and key not in seen:
            seen.add(key)
            out.append(kw)
    return out


# ---- SQuAD normalisation -----------------------------------------------------------------
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_ASCII_PUNCT = frozenset(string.punctuation)


def squad_normalize(text: str | None) -> str:
    """The official SQuAD v1.1/v2.0 answer normalisation, in its order: lowercase, drop ASCII
    punctuation, replace the articles a/an/the with a space, collapse whitespace."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCT)
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


def squad_tokens(text: str | None) -> list[str]:
    """SQuAD tokens (whitespace split of squad_normalize), with each CJK ideograph/kana split
    into its own token: the official script would keep a whole Chinese sentence as one token.
    For text without CJK characters this equals the official tokenisation exactly."""
    tokens: list[str] = []
    for tok in squad_normalize(text).split():
        if re.search(f"[{_CJK_CHARS}]", tok):
            tokens.extend(_TOKEN_RE.findall(tok))
        else:
            tokens.append(tok)
    return tokens
