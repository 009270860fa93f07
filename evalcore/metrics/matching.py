"""Which retrieved chunks (or citations) count as gold: the matching rules of docs/metrics/retrieval.md.

A gold passage matches a retrieved chunk when
  1. both have a chunk_id and the ids are equal, or
  2. the gold passage is an *anchor* (rel_path [+ heading_path]): same rel_path, and the chunk's
     heading_path starts with the gold heading_path, compared section by section after
     normalisation (whitespace collapsed, " > " as the delimiter, casefolded; paths casefolded
     too, as the citation metrics do), so "Setup > Install" matches
     a chunk under "Setup>  Install > Linux" but "Set" does not match "Setup". A gold snippet,
     when given, must also occur in the chunk text (NFKC, whitespace-collapsed, case-folded);
     anchors survive re-chunking, snippets pin the exact passage. Callers may switch the
     snippet rule off (use_snippets=False);
  3. a gold passage with only text/snippet matches a chunk whose text contains it.
required_support_groups entries go through the same function: `support_entry_gold` says which
gold passages (or which anchor of its own) an entry stands for.

Ranked lists are used in the target's rank order; scores are never used to re-sort, so tied
scores keep the order the target gave. `judge_ranking` turns one question + one ranking into the
per-rank relevance vector that the ranking formulas in `evalcore.metrics.trec_eval` consume.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol, Sequence

from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion, EvalResponse, GoldPassage

_SPACES = re.compile(r"\s+")


class ChunkLike(Protocol):
    chunk_id: str | None
    rel_path: str | None
    heading_path: str | None


def heading_parts(heading_path: str | None) -> tuple[str, ...]:
    """'A >B  >  C ' -> ('a', 'b', 'c'): the normalised sections of a heading path (casefolded,
    like the citation metrics, so one gold anchor means the same thing everywhere)."""
    if not heading_path:
        return ()
    parts = (_SPACES.sub(" ", p).strip().casefold() for p in heading_path.split(">"))
    return tuple(p for p in parts if p)


def normalise_heading(heading_path: str | None) -> str:
    """The canonical spelling of a heading path: sections joined by ' > '."""
    return " > ".join(heading_parts(heading_path))


def normalise_path(rel_path: str | None) -> str:
    """Document paths compare casefolded, with '/' separators and without a leading './'."""
    if not rel_path:
        return ""
    path = rel_path.strip().replace("\\", "/").casefold()
    while path.startswith("./"):
        path = path[2:]
    return path


def normalise_text(text: str | None) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text or "")).strip().casefold()


def gold_matches(gold: GoldPassage, chunk: ChunkLike, use_snippets: bool = True) -> bool:
    """True when `chunk` (a RetrievedChunk or a Citation) satisfies the gold passage."""
    if gold.chunk_id and chunk.chunk_id and gold.chunk_id == chunk.chunk_id:
        return True
    text = normalise_text(getattr(chunk, "text", None))
    if gold.rel_path:
        if not chunk.rel_path or normalise_path(gold.rel_path) != normalise_path(chunk.rel_path):
            return False
        want = heading_parts(gold.heading_path or gold.section)
        have = heading_parts(chunk.heading_path or getattr(chunk, "section", None))
        if have[: len(want)] != want:
            return False
        if use_snippets and gold.snippet and getattr(chunk, "text", None) is not None:
            return normalise_text(gold.snippet) in text
        return True
    if gold.chunk_id:  # an id-only gold passage matches by id alone (handled above)
        return False
    needle = normalise_text(gold.snippet or gold.text)
    return bool(needle) and needle in text


def resolve_citation(citation, response: EvalResponse):
    """A citation giving only a chunk id borrows rel_path/heading_path from the retrieved chunk
    with that id, so it can match anchor gold (the citation metrics do the same)."""
    if citation.chunk_id and not citation.rel_path:
        for chunk in response.retrieved:
            if chunk.chunk_id == citation.chunk_id:
                return chunk
    return citation


def entry_anchor(entry: str) -> GoldPassage:
    """A support-group entry read on its own: `rel_path [> heading > path]`, keeping the whole
    entry as a chunk id too, so `c9` matches chunk c9, `guide.md` the whole document and
    `guide.md > Setup` that section (and deeper ones) of it."""
    path, _, heading = entry.partition(">")
    return GoldPassage(chunk_id=entry, rel_path=path.strip() or None, heading_path=heading.strip() or None)


def support_entry_gold(entry: str, gold: Sequence[GoldPassage]) -> list[GoldPassage]:
    """What a required_support_groups entry asks for, as gold passages for `gold_matches`.

    An entry equal to a gold passage's chunk id, or naming the document or section a gold
    passage lies in, stands for those gold passages: their own heading and snippet then decide,
    so "a.md" in a group cannot be satisfied by a section of a.md that the gold does not name
    (recall_all would otherwise be 1 while recall is 0). Any other entry is an anchor of its own
    (`entry_anchor`)."""
    named = [g for g in gold if g.chunk_id and g.chunk_id == entry]
    if named:
        return named
    anchor = entry_anchor(entry)
    path, want = normalise_path(anchor.rel_path), heading_parts(anchor.heading_path)
    inside = [g for g in gold if g.rel_path and normalise_path(g.rel_path) == path
              and heading_parts(g.heading_path or g.section)[: len(want)] == want]
    return inside or [anchor]


def ranked_chunks(response: EvalResponse) -> list:
    """The retrieved chunks in the target's rank order (stable for equal ranks). Duplicate
    chunk ids would inflate every metric, so they are an error naming the record."""
    chunks = sorted(response.retrieved, key=lambda c: c.rank)
    seen: dict[str, int] = {}
    for i, chunk in enumerate(chunks):
        if chunk.chunk_id is None:
            continue
        if chunk.chunk_id in seen:
            raise InputError(f"responses of method {response.method!r}",
                             f"chunk_id {chunk.chunk_id!r} appears twice in the ranking "
                             f"(ranks {chunks[seen[chunk.chunk_id]].rank} and {chunk.rank})",
                             record=f"question {response.question_id}", field="retrieved.chunk_id")
        seen[chunk.chunk_id] = i
    return chunks


def relevance_level(question: EvalQuestion, level: float | None = None) -> float:
    """Minimum relevance for binary metrics: the caller's, else the question's metadata
    (`relevance_level`, set by the TREC loader), else anything above 0."""
    if level is None:
        level = question.metadata.get("relevance_level")
    return float(level) if level is not None else 0.0


def relevant_gold(question: EvalQuestion, level: float | None = None) -> list[GoldPassage]:
    """Gold passages that count as relevant (relevance > 0 and >= the level), deduplicated."""
    lvl = relevance_level(question, level)
    out, seen = [], set()
    for g in question.gold_passages:
        key = (g.chunk_id, normalise_path(g.rel_path), normalise_heading(g.heading_path or g.section),
               g.snippet, g.text)
        if g.relevance > 0 and g.relevance >= lvl and key not in seen:
            seen.add(key)
            out.append(g)
    return out


@dataclass(frozen=True)
class Judgement:
    """One ranking judged against one question's gold.

    gains[i]  relevance credited at rank i+1: the best not-yet-credited gold passage the chunk
              matches (each gold passage is credited once, at its first match, and each chunk
              satisfies at most one gold passage, so every ratio stays within [0, 1]);
    hits[i]   1 if the chunk matches any relevant gold passage (for precision: a second chunk
              of the same gold section is not junk);
    judged    relevance of every positive gold passage (the ideal ranking for nDCG).
    """

    gains: list[float]
    hits: list[float]
    judged: list[float]
    level: float
    n_relevant: int
    n_positive: int


def judge_ranking(question: EvalQuestion, chunks: Sequence[ChunkLike], level: float | None = None,
                  use_snippets: bool = True) -> Judgement:
    lvl = relevance_level(question, level)
    positive = relevant_gold(question, 0.0)
    n_relevant = sum(1 for g in positive if g.relevance >= lvl)
    credited = [False] * len(positive)
    gains, hits = [], []
    for chunk in chunks:
        matching = [j for j, g in enumerate(positive) if gold_matches(g, chunk, use_snippets)]
        hits.append(1.0 if any(positive[j].relevance >= lvl for j in matching) else 0.0)
        fresh = [j for j in matching if not credited[j]]
        if fresh:
            best = max(fresh, key=lambda j: positive[j].relevance)  # first of equals wins
            credited[best] = True
            gains.append(positive[best].relevance)
        else:
            gains.append(0.0)
    return Judgement(gains, hits, [g.relevance for g in positive], lvl, n_relevant, len(positive))
