"""The demo server's three RAG methods, each honestly different so every metric has signal.

* basic_search     BM25 over chunks, top-k; answers with the single best-matching sentence
                   from the top 3 chunks; abstains readily when evidence is weak.
* local_search     picks a folder scope first (like a folder-routing RAG), then BM25 inside
                   it with entity-neighbourhood expansion: documents linked from the best
                   hits get a boost, and at most two chunks per document are kept, so
                   multi-hop evidence from neighbouring entities reaches the top-k. Reports
                   its `scope`; answers with up to two sentences from different chunks.
* llm_with_context takes the two best *documents* whole as context, ignoring top_k (more tokens, lower
                   retrieval precision), answers with up to three sentences, and abstains
                   only on very weak evidence, so it hallucinates more on unanswerable ones.
                   Like an LLM leaning on what it learnt in training, when its context covers
                   the question poorly it adds one sentence "from memory": the best sentence
                   from the rest of the corpus, uncited and absent from its context. That is
                   sometimes right and never grounded, so faithfulness and groundedness
                   separate it from the others.

The other answers are extractive (sentences copied from the context), so their faithfulness is
high by construction while correctness depends on retrieval: the gap between methods is real.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from evalcore.demo.corpus import Chunk, Corpus, tokenize

K1, B = 1.2, 0.75
ABSTAIN_TEXT = "I could not find this in the documents."
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class MethodSettings:
    answer_chunks: int
    max_sentences: int
    abstain_below: float
    memory_below: float = 0.0  # context coverage under which a sentence "from memory" is added


SETTINGS = {
    "basic_search": MethodSettings(answer_chunks=3, max_sentences=1, abstain_below=0.5),
    "local_search": MethodSettings(answer_chunks=4, max_sentences=2, abstain_below=0.45),
    "llm_with_context": MethodSettings(answer_chunks=99, max_sentences=3, abstain_below=0.25, memory_below=0.6),
}


def bm25(corpus: Corpus, query: list[str], chunk: Chunk) -> float:
    tf = Counter(chunk.tokens)
    norm = K1 * (1 - B + B * len(chunk.tokens) / corpus.avg_len)
    return sum(corpus.idf(t) * tf[t] * (K1 + 1) / (tf[t] + norm) for t in set(query) if t in tf)


def basic_search(corpus: Corpus, query: list[str], top_k: int) -> tuple[list[tuple[Chunk, float]], None]:
    scored = [(c, bm25(corpus, query, c)) for c in corpus.chunks]
    ranked = sorted((x for x in scored if x[1] > 0), key=lambda x: (-x[1], x[0].chunk_id))
    return ranked[:top_k], None


def local_search(corpus: Corpus, query: list[str], top_k: int) -> tuple[list[tuple[Chunk, float]], list[str]]:
    scored = {c.chunk_id: bm25(corpus, query, c) for c in corpus.chunks}
    best = sorted(corpus.chunks, key=lambda c: -scored[c.chunk_id])
    mass: dict[str, float] = defaultdict(float)
    seen: Counter = Counter()
    for chunk in best:  # folder routing: sum of the top-3 chunk scores per folder
        if seen[chunk.folder] < 3:
            mass[chunk.folder] += scored[chunk.chunk_id]
            seen[chunk.folder] += 1
    top_mass = max(mass.values(), default=0.0)
    scope = sorted(f for f, m in mass.items() if top_mass > 0 and m >= 0.4 * top_mass)
    scope = sorted(sorted(scope, key=lambda f: -mass[f])[:3])
    in_scope = [c for c in best if c.folder in scope and scored[c.chunk_id] > 0]
    seeds = {c.rel_path for c in in_scope[:3]}
    neighbours = set()
    for rel in seeds:
        neighbours |= corpus.docs[rel].links | corpus.backlinks.get(rel, set())
    boost = 0.3 * (scored[in_scope[0].chunk_id] if in_scope else 0.0)
    ranked = sorted(((c, scored[c.chunk_id] + (boost if c.rel_path in neighbours - seeds else 0.0))
                     for c in corpus.chunks if c.folder in scope and scored[c.chunk_id] > 0),
                    key=lambda x: (-x[1], x[0].chunk_id))
    per_doc: Counter = Counter()
    out = []
    for chunk, score in ranked:
        if per_doc[chunk.rel_path] < 2:
            out.append((chunk, score))
            per_doc[chunk.rel_path] += 1
    return out[:top_k], [f"{f}/" for f in scope]


def llm_with_context(corpus: Corpus, query: list[str], top_k: int) -> tuple[list[tuple[Chunk, float]], None]:
    doc_scores = []
    for doc in corpus.docs.values():
        scores = [bm25(corpus, query, c) for c in doc.chunks]
        doc_scores.append((doc, max(scores) + 0.25 * sum(scores), scores))
    doc_scores.sort(key=lambda x: (-x[1], x[0].rel_path))
    out = []
    for doc, _, scores in doc_scores[:2]:
        out.extend(sorted(zip(doc.chunks, scores), key=lambda x: -x[1]))
    return out, None  # whole documents: top_k does not cut the context


RETRIEVERS = {"basic_search": basic_search, "local_search": local_search, "llm_with_context": llm_with_context}


def _coverage(corpus: Corpus, query: set[str], tokens: set[str]) -> float:
    total = sum(corpus.idf(t) for t in query)
    return sum(corpus.idf(t) for t in query & tokens) / total if total else 0.0


def extract_answer(corpus: Corpus, question: str, context: list[Chunk],
                   settings: MethodSettings) -> tuple[str, list[Chunk], float]:
    """Pick the sentences covering most of the question's (IDF-weighted) terms; greedy, so a
    second sentence is added only for terms the first one missed. Returns ('', [], cov) to abstain."""
    query = set(tokenize(question))
    candidates = []
    for chunk in context[:settings.answer_chunks]:
        for sentence in _SENTENCE.split(chunk.text):
            tokens = set(tokenize(f"{chunk.title} {sentence}"))
            candidates.append((sentence.strip(), chunk, tokens))
    chosen: list[tuple[str, Chunk]] = []
    covered: set[str] = set()
    best_cov = 0.0
    for _ in range(settings.max_sentences):
        scored = [(_coverage(corpus, query, covered | toks), sent, chunk, toks)
                  for sent, chunk, toks in candidates if (sent, chunk.chunk_id) not in {(s, c.chunk_id) for s, c in chosen}]
        if not scored:
            break
        cov, sent, chunk, toks = max(scored, key=lambda x: x[0])
        if chosen and cov - best_cov < 0.15:
            break
        if not chosen and cov < settings.abstain_below:
            return "", [], cov
        chosen.append((sent, chunk))
        covered |= toks
        best_cov = cov
    answer = " ".join(s for s, _ in chosen)
    cited = list({c.chunk_id: c for _, c in chosen}.values())
    return answer, cited, best_cov


def recall_from_memory(corpus: Corpus, question: str, context: list[Chunk], answer: str) -> str:
    """The sentence outside the context that best adds to what the answer covers of the question
    ('' when nothing adds at least 0.15 coverage): the demo's stand-in for parametric knowledge."""
    query = set(tokenize(question))
    covered = set(tokenize(answer))
    base = _coverage(corpus, query, covered)
    inside = {c.chunk_id for c in context}
    best, best_gain = "", 0.15
    for chunk in corpus.chunks:
        if chunk.chunk_id in inside:
            continue
        for sentence in _SENTENCE.split(chunk.text):
            gain = _coverage(corpus, query, covered | set(tokenize(sentence))) - base
            if gain > best_gain:
                best, best_gain = sentence.strip(), gain
    return best


def estimate_tokens(text: str) -> int:
    """~1.3 tokens per word, the usual rule of thumb for English BPE tokenisers."""
    return max(1, round(len(text.split()) * 1.3)) if text.strip() else 0


def answer_question(corpus: Corpus, question: str, method: str, top_k: int,
                    ms_per_100_tokens: float = 0.0) -> dict:
    """One /query response in evalcore's default contract."""
    if method not in RETRIEVERS:
        raise KeyError(method)
    t0 = time.perf_counter()
    hits, scope = RETRIEVERS[method](corpus, tokenize(question), top_k)
    t1 = time.perf_counter()
    settings = SETTINGS[method]
    context = [c for c, _ in hits]
    answer, cited, coverage = extract_answer(corpus, question, context, settings)
    if answer and coverage < settings.memory_below:
        remembered = recall_from_memory(corpus, question, context, answer)
        answer = f"{answer} {remembered}".strip()
    prompt_text = question + " " + " ".join(c.text for c in context[:settings.answer_chunks])
    input_tokens = 120 + estimate_tokens(prompt_text)  # 120 = the fixed instruction prompt
    if ms_per_100_tokens > 0:  # simulated model time, proportional to the prompt (see /models/info)
        time.sleep(ms_per_100_tokens * input_tokens / 100_000.0)
    t2 = time.perf_counter()
    abstained = not answer
    answer = answer or ABSTAIN_TEXT
    body = {
        "answer": answer, "abstained": abstained,
        "retrieved": [{"chunk_id": c.chunk_id, "text": c.text, "score": round(s, 4), "rank": i,
                       "rel_path": c.rel_path, "heading_path": c.heading_path}
                      for i, (c, s) in enumerate(hits, start=1)],
        "citations": [{"chunk_id": c.chunk_id, "rel_path": c.rel_path, "heading_path": c.heading_path}
                      for c in cited],
        "token_usage": {"input_tokens": input_tokens, "output_tokens": estimate_tokens(answer),
                        "model": "demo-extractive-1"},
        "timings": {"retrieval_ms": round((t1 - t0) * 1000, 3), "generation_ms": round((t2 - t1) * 1000, 3)},
        "evidence_coverage": round(coverage, 3),
    }
    if scope is not None:
        body["scope"] = scope
    return body
