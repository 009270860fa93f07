"""Benchmark: semantic metrics on the 2,010 GraphRAG-Bench Novel ground truths.

    python bench/bench_semantic.py [--limit N] [--baseline-limit M]

Candidates are deterministic paraphrases of each ground truth (synonym swaps, clause/word-order
changes, a filler prefix), so there is no randomness between runs. Three timings, same process:

1. evalcore, cold: semantic_similarity + bert_score_p/r/f1 through the metric specs with an empty
   cache (model loading included);
2. the plain baseline: a per-pair loop with sentence-transformers (encode answer, encode ground
   truth) and bert-score's BERTScorer (one `score([c], [r])` per pair), models preloaded;
   run on the first M pairs (a rate is a rate; the whole set would take minutes);
3. evalcore, warm: the same scoring again with fresh embedders reading the on-disk cache.

It prints pairs/s for each, the speed-up ratios, and the largest difference between our numbers
and the baseline's on the shared pairs (they must agree: speed may not change results).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "graphrag_bench" / "novel_questions.json"
METRICS = ["semantic_similarity", "bert_score_p", "bert_score_r", "bert_score_f1"]

SYNONYMS = {
    "big": "large", "large": "big", "small": "little", "begin": "start", "began": "started",
    "help": "assist", "helped": "assisted", "show": "demonstrate", "shows": "demonstrates",
    "important": "significant", "because": "since", "about": "regarding", "many": "numerous",
    "also": "additionally", "very": "really", "often": "frequently", "quickly": "rapidly",
    "buy": "purchase", "get": "obtain", "gets": "obtains", "use": "employ", "uses": "employs",
    "said": "stated", "says": "states", "house": "home", "old": "aged", "famous": "renowned",
    "enough": "sufficient", "main": "principal", "whole": "entire", "near": "close to",
    "however": "nevertheless", "therefore": "thus", "but": "yet", "shown": "displayed",
    "describes": "portrays", "described": "portrayed", "known": "recognised", "made": "created",
}
PREFIXES = ["", "In short, ", "The answer is that ", "Essentially, ", "According to the text, "]


def paraphrase(text: str, seed: str) -> str:
    """A deterministic light paraphrase: synonyms, one order change, maybe a prefix."""
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))
    words = text.split()
    words = [_swap(w) if rng.random() < 0.8 else w for w in words]
    out = " ".join(words)
    clauses = [c for c in re.split(r",\s+", out, maxsplit=1) if c]
    if len(clauses) == 2 and rng.random() < 0.6:
        out = f"{clauses[1].rstrip('.')}, {clauses[0][:1].lower()}{clauses[0][1:]}."
    elif len(words) > 3:
        i = rng.randrange(1, len(words) - 1)
        words[i - 1], words[i] = words[i], words[i - 1]
        out = " ".join(words)
    prefix = rng.choice(PREFIXES)
    return prefix + (out[:1].lower() + out[1:] if prefix else out)


def _swap(word: str) -> str:
    core = word.strip(".,;:!?\"'()")
    repl = SYNONYMS.get(core.lower())
    if not repl:
        return word
    if core[:1].isupper():
        repl = repl[:1].upper() + repl[1:]
    return word.replace(core, repl, 1)


def load_pairs(limit: int | None):
    from evalcore.schemas import EvalQuestion, EvalResponse

    rows = json.loads(DATA.read_text(encoding="utf-8"))[:limit]
    items = []
    for row in rows:
        q = EvalQuestion(id=row["id"], question=row["question"], ground_truth=row["answer"])
        r = EvalResponse(question_id=row["id"], method="paraphrase", answer=paraphrase(row["answer"], row["id"]))
        items.append((q, r))
    return items


def score_ours(items, store) -> tuple[float, dict[str, np.ndarray]]:
    from evalcore.embeddings import reset_embedders
    from evalcore.metrics.base import ScoringContext
    from evalcore.metrics.registry import METRICS as REGISTRY

    reset_embedders()  # a fresh process as far as memory goes: only the store's cache may help
    ctx = ScoringContext(run_id="bench", store=store, options={"progress": False})
    start = time.perf_counter()
    values = {name: np.array([s.value for s in REGISTRY[name].compute(items, ctx)]) for name in METRICS}
    return time.perf_counter() - start, values


def score_baseline(items) -> tuple[float, dict[str, np.ndarray]]:
    from bert_score import BERTScorer
    from sentence_transformers import SentenceTransformer

    from evalcore.embeddings.models import packaged_model_path, set_offline

    set_offline()
    path = str(packaged_model_path())
    st = SentenceTransformer(path, device="cpu", local_files_only=True)
    bs = BERTScorer(model_type=path, num_layers=6)
    sims, prf = [], []
    start = time.perf_counter()
    for q, r in items:
        a = st.encode(r.answer, normalize_embeddings=True)
        g = st.encode(q.ground_truth, normalize_embeddings=True)
        sims.append(max(0.0, float(np.dot(a, g))))
        p, rec, f = bs.score([r.answer], [q.ground_truth])
        prf.append((float(p[0]), float(rec[0]), float(f[0])))
    elapsed = time.perf_counter() - start
    prf_arr = np.array(prf)
    return elapsed, {"semantic_similarity": np.array(sims), "bert_score_p": prf_arr[:, 0],
                     "bert_score_r": prf_arr[:, 1], "bert_score_f1": prf_arr[:, 2]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="score only the first N questions")
    parser.add_argument("--baseline-limit", type=int, default=200, help="pairs for the per-pair baseline loop")
    args = parser.parse_args(argv)
    if not DATA.is_file():
        print(f"data not found: {DATA}", file=sys.stderr)
        return 2
    import torch

    from evalcore.store import RunStore

    items = load_pairs(args.limit)
    n = len(items)
    print(f"pairs: {n} (GraphRAG-Bench Novel ground truths vs deterministic paraphrases); "
          f"torch threads: {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory(prefix="bench-semantic-") as tmp:
        store = RunStore(Path(tmp) / "runs")
        cold, ours = score_ours(items, store)
        m = min(n, args.baseline_limit)
        base_time, base = score_baseline(items[:m])
        warm, again = score_ours(items, store)
    ours_rate, base_rate, warm_rate = n / cold, m / base_time, n / warm
    print(f"evalcore cold  : {cold:8.2f} s  {ours_rate:9.1f} pairs/s  (4 metrics, model load included)")
    print(f"baseline loop  : {base_time:8.2f} s  {base_rate:9.1f} pairs/s  (first {m} pairs, models preloaded)")
    print(f"evalcore warm  : {warm:8.2f} s  {warm_rate:9.1f} pairs/s  (cache in the store)")
    print(f"speed-up vs per-pair baseline: {ours_rate / base_rate:.1f}x   (goal >= 3x)")
    print(f"warm vs cold: {cold / warm:.1f}x faster   (goal >= 20x)")
    worst = max(float(np.nanmax(np.abs(ours[k][:m] - base[k]))) for k in METRICS)
    same = all(np.array_equal(ours[k], again[k], equal_nan=True) for k in METRICS)
    print(f"max |ours - baseline| over {m} pairs and 4 metrics: {worst:.2e};  warm == cold: {same}")
    for k in METRICS:
        print(f"  mean {k:20s} {np.nanmean(ours[k]):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
