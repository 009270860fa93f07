"""Benchmark: semantic metrics on the 2,010 GraphRAG-Bench Novel ground truths.

    python bench/bench_semantic.py [--limit N] [--baseline-limit M]

Candidates are deterministic paraphrases of each ground truth (synonym swaps, clause/word-order
changes, a filler prefix), so there is no randomness between runs. Three timings, same process:

1. evalcore, cold: semantic_similarity + bert_score_p/r/f1 through the metric specs with an empty
   cache;
2. the plain baseline: a per-pair loop with sentence-transformers (encode answer, encode ground
   truth) and bert-score's BERTScorer (one `score([c], [r])` per pair), on an even sample of M
   pairs (a rate is a rate; the whole set would take many minutes);
3. evalcore, warm: the same scoring again with fresh embedders reading the on-disk cache.

Models are loaded before timing, on both sides. 1 and 2 alternate over slices of the data so
that both see the same machine load (a shared 2-core machine is noisy).

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
CPU = {"ours": 0.0, "baseline": 0.0}  # process CPU seconds: steadier than wall time on a busy machine

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


def score_ours(items, store, keep_models: bool = True) -> tuple[float, dict[str, np.ndarray]]:
    from evalcore.embeddings import reset_embedders
    from evalcore.metrics.base import ScoringContext
    from evalcore.metrics.registry import METRICS as REGISTRY

    reset_embedders(keep_models=keep_models)  # no in-memory vectors: only the store's cache may help
    ctx = ScoringContext(run_id="bench", store=store, options={"progress": False})
    start, cpu = time.perf_counter(), time.process_time()
    values = {name: np.array([s.value for s in REGISTRY[name].compute(items, ctx)]) for name in METRICS}
    CPU["ours"] += time.process_time() - cpu
    return time.perf_counter() - start, values


class Baseline:
    """The plain way: one pair at a time, models loaded once."""

    def __init__(self):
        from bert_score import BERTScorer
        from sentence_transformers import SentenceTransformer

        from evalcore.embeddings.models import packaged_model_path, set_offline

        set_offline()
        path = str(packaged_model_path())
        self.st = SentenceTransformer(path, device="cpu", local_files_only=True)
        self.bs = BERTScorer(model_type=path, num_layers=6)

    def score(self, items) -> tuple[float, dict[str, np.ndarray]]:
        rows = []
        start, cpu = time.perf_counter(), time.process_time()
        for q, r in items:
            a = self.st.encode(r.answer, normalize_embeddings=True)
            g = self.st.encode(q.ground_truth, normalize_embeddings=True)
            p, rec, f = self.bs.score([r.answer], [q.ground_truth], batch_size=1)
            rows.append((max(0.0, float(np.dot(a, g))), float(p[0]), float(rec[0]), float(f[0])))
        elapsed = time.perf_counter() - start
        CPU["baseline"] += time.process_time() - cpu
        arr = np.array(rows).reshape(-1, 4)
        return elapsed, {name: arr[:, i] for i, name in enumerate(METRICS)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="score only the first N questions")
    parser.add_argument("--baseline-limit", type=int, default=200,
                        help="pairs for the per-pair baseline loop (an even sample across the set)")
    parser.add_argument("--slices", type=int, default=5,
                        help="alternate ours and the baseline over this many slices, so both see the same machine load")
    args = parser.parse_args(argv)
    if not DATA.is_file():
        print(f"data not found: {DATA}", file=sys.stderr)
        return 2
    import torch

    from evalcore.store import RunStore

    items = load_pairs(args.limit)
    n = len(items)
    k = max(1, min(args.slices, n))
    slices = [items[i * n // k:(i + 1) * n // k] for i in range(k)]
    step = max(1, n // max(1, args.baseline_limit))
    print(f"pairs: {n} (GraphRAG-Bench Novel ground truths vs deterministic paraphrases); "
          f"torch threads: {torch.get_num_threads()}; baseline on every {step}th pair")
    with tempfile.TemporaryDirectory(prefix="bench-semantic-") as tmp:
        t0 = time.perf_counter()
        score_ours(items[:1], RunStore(Path(tmp) / "warmup"), keep_models=False)  # load our models
        baseline = Baseline()
        print(f"model loading (both sides, not timed below): {time.perf_counter() - t0:.1f} s")
        store = RunStore(Path(tmp) / "runs")
        CPU.update(ours=0.0, baseline=0.0)
        cold = base_time = 0.0
        ours: dict[str, list] = {m: [] for m in METRICS}
        base: dict[str, list] = {m: [] for m in METRICS}
        sampled: list[int] = []
        offset = 0
        for part in slices:  # ours (cold) and the baseline take turns
            elapsed, values = score_ours(part, store)
            cold += elapsed
            picks = [i for i in range(len(part)) if (offset + i) % step == 0]
            b_elapsed, b_values = baseline.score([part[i] for i in picks])
            base_time += b_elapsed
            for m in METRICS:
                ours[m].extend(values[m])
                base[m].extend(b_values[m])
            sampled.extend(offset + i for i in picks)
            offset += len(part)
        cpu_cold = CPU["ours"]
        warm, again = score_ours(items, store)
    m_pairs = len(sampled)
    ours_rate, base_rate, warm_rate = n / cold, m_pairs / base_time, n / warm
    print(f"evalcore cold  : {cold:8.2f} s  {ours_rate:9.1f} pairs/s  (4 metrics, empty cache)")
    print(f"baseline loop  : {base_time:8.2f} s  {base_rate:9.1f} pairs/s  ({m_pairs} pairs, one at a time)")
    print(f"evalcore warm  : {warm:8.2f} s  {warm_rate:9.1f} pairs/s  (fresh embedders, cache in the store)")
    print(f"speed-up vs per-pair baseline: {ours_rate / base_rate:.1f}x wall, "
          f"{(CPU['baseline'] / m_pairs) / (cpu_cold / n):.1f}x CPU time   (goal >= 3x)")
    print(f"warm vs cold: {cold / warm:.1f}x faster   (goal >= 20x)")
    ours_arr = {m: np.array(v) for m, v in ours.items()}
    worst = max(float(np.nanmax(np.abs(ours_arr[m][sampled] - np.array(base[m])))) for m in METRICS)
    same = all(np.array_equal(ours_arr[m], again[m], equal_nan=True) for m in METRICS)
    print(f"max |ours - baseline| over {m_pairs} pairs and 4 metrics: {worst:.2e};  warm == cold: {same}")
    for m in METRICS:
        print(f"  mean {m:20s} {np.nanmean(ours_arr[m]):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
