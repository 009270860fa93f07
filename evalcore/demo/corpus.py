"""The demo corpus: markdown documents about the (invented) Ostvel Lake district, chunked
by heading, with the links between documents kept as an entity graph.

Chunking is one chunk per `##` section; the text before the first `##` becomes an
"Overview" section so every chunk has a two-level heading path ("Title > Section") and a
gold anchor on a section never matches the whole document by prefix. Chunk ids are
`<file stem>-<section index>` (0 = Overview), stable as long as the files do not change.
"""

from __future__ import annotations

import math
import posixpath
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+\.md)\)")
_TOKEN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[^\W\d_]+", re.UNICODE)
_HANGUL = re.compile(r"^[\uac00-\ud7a3]+$")
STOPWORDS = frozenset("""a an and are as at be been by did do does for from had has have how in into is it its
of on or that the their them there these this to was were what when where which who whom whose why will
with would can could about after before during many much than then they he she her his our your you
one""".split())


def _stem(word: str) -> str:
    """Plural and past-tense folding (ferries -> ferry, opened -> open): enough for a toy retriever."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("ed") and len(word) >= 6:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Casefolded word tokens without stop words; Hangul words also yield character bigrams,
    because Korean particles attach to nouns (호수의, 호수는) and whole-word matching misses them."""
    out = []
    for raw in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if raw in STOPWORDS:
            continue
        out.append(_stem(raw.replace(",", "")))
        if _HANGUL.match(raw) and len(raw) > 2:
            out.extend(raw[i:i + 2] for i in range(len(raw) - 1))
    return out


def strip_links(text: str) -> str:
    return _LINK.sub(lambda m: m.group(1), text)


@dataclass
class Chunk:
    chunk_id: str
    rel_path: str
    title: str
    section: str
    text: str
    tokens: list[str] = field(default_factory=list)

    @property
    def heading_path(self) -> str:
        return f"{self.title} > {self.section}"

    @property
    def folder(self) -> str:
        return self.rel_path.split("/", 1)[0]


@dataclass
class Document:
    rel_path: str
    title: str
    chunks: list[Chunk]
    links: set[str]
    n_bytes: int


def _parse(rel_path: str, text: str) -> Document:
    title, section, stem = rel_path, "Overview", Path(rel_path).stem
    sections: list[tuple[str, list[str]]] = [("Overview", [])]
    links = set()
    for line in text.splitlines():
        for _, target in _LINK.findall(line):
            links.add(posixpath.normpath(posixpath.join(posixpath.dirname(rel_path), target)))
        if line.startswith("# "):
            title = line[2:].strip()
        elif line.startswith("## "):
            section = line[3:].strip()
            sections.append((section, []))
        elif line.strip():
            sections[-1][1].append(strip_links(line.strip()))
    chunks = []
    for index, (name, lines) in enumerate(sections):
        if not lines:
            continue
        body = " ".join(lines)
        heading = title if name == "Overview" else f"{title} {name}"
        chunks.append(Chunk(f"{stem}-{index}", rel_path, title, name, body, tokenize(f"{heading} {body}")))
    return Document(rel_path, title, chunks, links, len(text.encode("utf-8")))


@dataclass
class Corpus:
    docs: dict[str, Document]
    chunks: list[Chunk]
    df: Counter
    avg_len: float
    skipped: list[str] = field(default_factory=list)

    def idf(self, token: str) -> float:
        n = len(self.chunks)
        return math.log(1 + (n - self.df.get(token, 0) + 0.5) / (self.df.get(token, 0) + 0.5))

    def by_id(self, chunk_id: str) -> Chunk:
        return self._index[chunk_id]

    def __post_init__(self) -> None:
        self._index = {c.chunk_id: c for c in self.chunks}
        self.backlinks: dict[str, set[str]] = {}
        for doc in self.docs.values():
            for target in doc.links:
                self.backlinks.setdefault(target, set()).add(doc.rel_path)


def load_corpus(root: Path | None = None) -> Corpus:
    """Read every *.md under `root` (default: the packaged demo documents)."""
    base = Path(str(resources.files("evalcore.demo") / "data" / "docs")) if root is None else Path(root)
    docs: dict[str, Document] = {}
    skipped = []
    for path in sorted(base.rglob("*.md")):
        rel = path.relative_to(base).as_posix()
        doc = _parse(rel, path.read_text(encoding="utf-8"))
        if not doc.chunks:
            skipped.append(rel)
            continue
        docs[rel] = doc
    chunks = [c for d in docs.values() for c in d.chunks]
    df: Counter = Counter()
    for chunk in chunks:
        df.update(set(chunk.tokens))
    avg = sum(len(c.tokens) for c in chunks) / max(len(chunks), 1)
    return Corpus(docs, chunks, df, avg, skipped)


@lru_cache(maxsize=1)
def default_corpus() -> Corpus:
    return load_corpus()
