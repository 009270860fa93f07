"""Scale: `evalcore score` on the local engine vs `--engine ray`, on this machine.

    python bench/bench_scale.py            # 200,000 answers x deterministic metrics, 20,000 x semantic_similarity
    python bench/bench_scale.py --quick    # 10,000 and 1,000 (a smoke run)

Two measurements, each local vs Ray in the same bench run:

1. deterministic: N recorded answers (default 200,000) x the default metric selection (no judge,
   no embeddings: retrieval, citation, lexical, abstention, performance, composites). Built
   deterministically (seeded) from real data in ../shared/data: HaluEval QA rows (knowledge as
   the gold chunk, right or hallucinated answer) and SQuAD v2 "Normans" questions (paragraph as
   the gold chunk, 112 unanswerable), each question copied under new ids and answered by 8
   methods with their own retrieval quality (gold chunk in the top 5 or not, at some rank, among
   distractor chunks with their text), answer style (right, hallucinated, verbose, abstaining),
   citations, latency and tokens.
2. semantic: M answers (default 20,000) x `semantic_similarity` (the packaged MiniLM, offline):
   GraphRAG-Bench Novel ground truths vs deterministic paraphrases of them (bench_semantic.py's
   paraphrase(), seeded per (question, method)), 10 methods.

Each set is imported once (`evalcore import`, JSONL) into a store; the store folder is then
copied so that each engine scores an identical fresh copy. Each measured command runs in a
fresh subprocess, `python -m evalcore --store S score RUN --no-progress [--engine ray]` (and
`--metrics semantic_similarity` for 2), and its wall clock is the figure: interpreter start,
imports, reading the run, scoring, writing and publishing, and for Ray its start-up (ray.init of
a local instance with all CPUs, the actor pool, shutdown) are all inside it. Ray's start-up is
also timed alone (a trivial `ray.init(); ray.shutdown()` in a fresh process, with and without
the import). Embedding caches: each engine scores its own store copy, whose cache
(`<store>/_shared/embeddings/`) starts empty, and EVALCORE_CACHE_DIR points at a fresh folder
per measured command, so neither engine gets cache hits.

Prints both wall times, the per-answer cost of each engine, the ratio ray/local (goal: <= 1.5
on this 2-core machine) and the largest difference between the values the two engines stored
(<= 1e-9 deterministic, <= 1e-6 embeddings). Exits 1 when a goal or an equality is missed.
Also prints the driver-side share: the time to read all questions and answers of the run and
select metrics, which the Ray engine's driver does once (evalcore/scale/ray_scoring.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():  # a worktree beside the main checkout
    DATA = Path("/work/shared/data")
HALUEVAL = DATA / "halueval" / "qa_one-turn_data.jsonl"
SQUAD = DATA / "squad_v2_dev" / "dev-v2.0_Normans.json"
NOVEL = DATA / "graphrag_bench" / "novel_questions.json"
GOAL = 1.5
TOL = {"deterministic": 1e-9, "semantic": 1e-6}

# method -> (P(gold chunk in the top 5), P(right answer), P(hallucinated), P(abstain)); the rest verbose-right
METHODS = {
    "bm25-small": (0.70, 0.45, 0.30, 0.10),
    "bm25-large": (0.70, 0.60, 0.20, 0.08),
    "dense-small": (0.80, 0.50, 0.25, 0.10),
    "dense-large": (0.80, 0.65, 0.15, 0.08),
    "hybrid-small": (0.88, 0.55, 0.20, 0.10),
    "hybrid-large": (0.88, 0.70, 0.10, 0.08),
    "rerank-large": (0.93, 0.72, 0.08, 0.10),
    "closed-book": (0.00, 0.40, 0.45, 0.05),
}
SEMANTIC_METHODS = 10
TOP_K = 5


def _rng(*parts: object) -> random.Random:
    return random.Random(int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:16], 16))


# ---- data ---------------------------------------------------------------------------------------
def base_questions() -> tuple[list[dict], dict[str, str]]:
    """(questions, chunks {chunk_id: text}) from HaluEval QA and SQuAD v2 Normans."""
    questions, chunks = [], {}
    for i, line in enumerate(HALUEVAL.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        cid = f"halu-{i}"
        chunks[cid] = row["knowledge"]
        questions.append({"id": f"h{i}", "question": row["question"], "ground_truth": row["right_answer"],
                          "hallucinated": row["hallucinated_answer"], "gold": cid, "answerable": True,
                          "question_type": "halueval"})
    article = json.loads(SQUAD.read_text(encoding="utf-8"))["data"][0]
    for j, para in enumerate(article["paragraphs"]):
        cid = f"squad-p{j}"
        chunks[cid] = para["context"]
        for qa in para["qas"]:
            answers = list(dict.fromkeys(a["text"] for a in qa["answers"]))
            plausible = [a["text"] for a in qa.get("plausible_answers", [])]
            questions.append({"id": qa["id"], "question": qa["question"], "ground_truth": answers or None,
                              "hallucinated": (plausible or ["the Vikings"])[0], "gold": cid,
                              "answerable": not qa["is_impossible"], "question_type": "squad_v2"})
    return questions, chunks


def deterministic_records(n: int):
    """n answer records: base questions copied under new ids x the 8 METHODS (seeded)."""
    questions, chunks = base_questions()
    chunk_ids = sorted(chunks)
    methods = list(METHODS)
    n_questions = -(-n // len(methods))
    emitted = 0
    for k in range(n_questions):
        base = questions[k % len(questions)]
        copy = k // len(questions)
        qid = f"{base['id']}~{copy}"
        for method in methods:
            if emitted == n:
                return
            p_gold, p_right, p_hallu, p_abstain = METHODS[method]
            rng = _rng(qid, method)
            retrieved = []
            if method != "closed-book":
                picks = rng.sample(chunk_ids, TOP_K + 1)
                picks = [c for c in picks if c != base["gold"]][:TOP_K]
                if rng.random() < p_gold:
                    picks[rng.choices(range(TOP_K), weights=[8, 4, 2, 1, 1])[0]] = base["gold"]
                retrieved = [{"chunk_id": c, "text": chunks[c], "rank": r + 1, "score": round(1.0 - 0.1 * r, 3)}
                             for r, c in enumerate(picks)]
            right = base["ground_truth"][0] if isinstance(base["ground_truth"], list) else base["ground_truth"]
            u = rng.random()
            if not base["answerable"] and u < 0.5:
                answer = "I don't know: the documents do not say."
            elif u < p_right and right:
                answer = right
            elif u < p_right + p_hallu:
                answer = base["hallucinated"]
            elif u < p_right + p_hallu + p_abstain or not right:
                answer = "I don't know."
            else:
                answer = f"According to the retrieved documents, the answer is {right}."
            cited = [r["chunk_id"] for r in retrieved[:rng.randint(0, 2)]]
            record = {"question_id": qid, "method": method, "question": base["question"], "answer": answer,
                      "answerable": base["answerable"], "gold_chunk_ids": [base["gold"]],
                      "question_type": base["question_type"], "retrieved": retrieved, "citations": cited,
                      "latency_ms": round(rng.uniform(200, 4000), 1),
                      "token_usage": {"input_tokens": 200 + 150 * len(retrieved) + rng.randint(0, 200),
                                      "output_tokens": rng.randint(5, 80)}}
            if base["ground_truth"]:
                record["ground_truth"] = base["ground_truth"]
            emitted += 1
            yield record


def semantic_records(n: int):
    """n answer records: GraphRAG-Bench Novel ground truths x SEMANTIC_METHODS paraphrases (seeded)."""
    from bench_semantic import paraphrase

    rows = json.loads(NOVEL.read_text(encoding="utf-8"))
    emitted = 0
    for k in range(-(-n // SEMANTIC_METHODS)):
        row = rows[k % len(rows)]
        qid = f"{row['id']}~{k}"  # the source repeats a few ids: k makes each question's id unique
        for m in range(SEMANTIC_METHODS):
            if emitted == n:
                return
            emitted += 1
            yield {"question_id": qid, "method": f"system-{m}", "question": row["question"],
                   "ground_truth": row["answer"], "answer": paraphrase(row["answer"], f"{qid}/{m}")}


def write_jsonl(path: Path, records) -> dict[str, int]:
    n = answers = 0
    texts: set[str] = set()
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
            texts.add(r["answer"])
            gt = r.get("ground_truth")
            for t in gt if isinstance(gt, list) else [gt] if gt else []:
                texts.add(t)
    return {"records": n, "distinct_texts": len(texts), "bytes": path.stat().st_size}


# ---- commands -----------------------------------------------------------------------------------
def _env(cache_dir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.pop("EVALCORE_RAY_CPUS", None)  # the engine's local instance gets all CPUs
    if cache_dir is not None:
        env["EVALCORE_CACHE_DIR"] = str(cache_dir)
    return env


def evalcore(store: Path, *args: str, cache_dir: Path | None = None) -> tuple[float, str]:
    """Run `python -m evalcore --store STORE ARGS` in a fresh process: (wall seconds, stdout)."""
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), *args],
                         capture_output=True, text=True, env=_env(cache_dir), cwd=str(ROOT))
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"evalcore {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return wall, res.stdout


def python_seconds(code: str) -> float:
    """Wall seconds of `python -c CODE` in a fresh process (CODE prints its own inner figure)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=str(ROOT))
    if res.returncode != 0:
        raise SystemExit(f"python -c failed:\n{res.stderr}")
    return float(res.stdout.strip().splitlines()[-1])


RAY_STARTUP = """
import time
t0 = time.perf_counter()
import ray, ray.data
t1 = time.perf_counter()
ray.init(address="local", include_dashboard=False, log_to_driver=False, configure_logging=False)
ray.shutdown()
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def ray_startup() -> tuple[float, float]:
    res = subprocess.run([sys.executable, "-c", RAY_STARTUP], capture_output=True, text=True, env=_env())
    if res.returncode != 0:
        raise SystemExit(f"ray start-up failed:\n{res.stderr}")
    imp, init = map(float, res.stdout.split()[-2:])
    return imp, init


DRIVER_READ = """
import sys, time
from evalcore.store import RunStore
from evalcore.scoring.queries import run_questions
from evalcore.scoring.engine import _registry, select_metrics
from evalcore.scale.ray_scoring import _responses_file, scan_answers
t0 = time.perf_counter()
store = RunStore(sys.argv[1]); run_id = store.resolve(sys.argv[2])
questions = {q.id: q for q in run_questions(store, run_id)}
scan = scan_answers(_responses_file(store, run_id), questions)
specs, _ = select_metrics(_registry(), [], sys.argv[3:] or None, None, {}, have=scan.have)
import resource
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, time.perf_counter() - t0)
"""


def driver_read(store: Path, run_id: str, metrics: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS bytes) of what the Ray driver reads before the pass: every question,
    the answers scanned in batches, metric selection; in a fresh process (imports excluded
    from the seconds, included in the RSS)."""
    res = subprocess.run([sys.executable, "-c", DRIVER_READ, str(store), run_id, *metrics],
                         capture_output=True, text=True, env=_env())
    if res.returncode != 0:
        raise SystemExit(f"driver read failed:\n{res.stderr}")
    rss, seconds = map(float, res.stdout.strip().splitlines()[-1].split())
    return seconds, rss


BREAKDOWN = """
import json, sys, time
from contextlib import contextmanager
import ray
import evalcore.scale.ray_scoring as rs
import evalcore.scale.ray_session as session
from evalcore.store import RunStore
from evalcore.store.writer import RunWriter
T = {}
def timed(name, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            T[name] = T.get(name, 0.0) + time.perf_counter() - t
    return wrapper
rs.run_questions = timed("driver: read questions", rs.run_questions)
rs.run_responses = timed("driver: read answers", rs.run_responses)
rs._pair = timed("driver: pair", rs._pair)
rs.select_metrics = timed("driver: select metrics", rs.select_metrics)
rs._read_blocks = timed("driver: plan the read", rs._read_blocks)
rs._phase1_on_ray = timed("phase 1 on Ray (incl. pipeline start, actors, their writes)", rs._phase1_on_ray)
rs._phase2_local = timed("phase 2: composites on the driver (incl. its publish)", rs._phase2_local)
RunWriter.publish = timed("publish = compaction (all calls)", RunWriter.publish)
ray.init = timed("ray.init", ray.init)
ray.shutdown = timed("ray.shutdown", ray.shutdown)
store = RunStore(sys.argv[1])
t = time.perf_counter()
report = rs.score_run_ray(store, sys.argv[2])
T["total (score_run_ray)"] = time.perf_counter() - t
print(json.dumps(T))
"""


def breakdown(store: Path, run_id: str) -> dict[str, float]:
    """Where an in-process `score_run_ray` pass spends its time (seconds per step)."""
    res = subprocess.run([sys.executable, "-c", BREAKDOWN, str(store), run_id], capture_output=True, text=True,
                         env=_env(store.parent / "cache-breakdown"))
    if res.returncode != 0:
        raise SystemExit(f"breakdown failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def stored_values(store: Path, run_id: str):
    from evalcore.store import query_df
    from evalcore.store import RunStore

    s = RunStore(store)
    return query_df(s, "SELECT method, question_id, metric, value, reason FROM metrics WHERE run_id = ?",
                    [run_id], runs=[run_id])


def compare(local: Path, ray_store: Path, run_id: str) -> dict[str, object]:
    """Largest |local - ray| over every stored value; keys and NaN reasons must match."""
    import numpy as np

    a, b = stored_values(local, run_id), stored_values(ray_store, run_id)
    merged = a.merge(b, on=["method", "question_id", "metric"], suffixes=("_l", "_r"), how="outer")
    both = merged["value_l"].notna() & merged["value_r"].notna()
    nan_l, nan_r = merged["value_l"].isna(), merged["value_r"].isna()
    diff = float(np.abs(merged.loc[both, "value_l"] - merged.loc[both, "value_r"]).max()) if both.any() else 0.0
    nan_mismatch = int((nan_l != nan_r).sum())
    reason_mismatch = int(((nan_l & nan_r) & (merged["reason_l"] != merged["reason_r"])).sum())
    return {"values_local": len(a), "values_ray": len(b), "keys_union": len(merged), "max_abs_diff": diff,
            "nan_mismatch": nan_mismatch, "reason_mismatch": reason_mismatch,
            "metrics": int(a["metric"].nunique())}


# ---- one comparison -----------------------------------------------------------------------------
def measure(kind: str, n: int, work: Path, metrics: list[str], only_breakdown: bool = False) -> dict[str, object]:
    build = deterministic_records if kind == "deterministic" else semantic_records
    src = work / f"{kind}.jsonl"
    t0 = time.perf_counter()
    data = write_jsonl(src, build(n))
    built = time.perf_counter() - t0
    pristine = work / f"{kind}-pristine"
    import_wall, out = evalcore(pristine, "import", str(src), "--name", f"bench-scale-{kind}")
    run_id = out.strip().splitlines()[-1].strip()
    src.unlink()
    print(f"[{kind}] {data['records']:,} answers, {data['distinct_texts']:,} distinct answer/ground-truth texts, "
          f"JSONL {data['bytes'] / 1e6:.0f} MB built in {built:.1f} s; imported in {import_wall:.1f} s "
          f"(run {run_id}, store {_du(pristine) / 1e6:.0f} MB)", flush=True)
    driver, driver_rss = driver_read(pristine, run_id, metrics)
    if only_breakdown:
        shutil.copytree(pristine, work / "breakdown")
        steps = breakdown(work / "breakdown", run_id)
        print(f"[{kind}] driver read (separate process) {driver:.1f} s, peak RSS {driver_rss / 1e9:.2f} GB; "
              f"in-process Ray pass, seconds per step:")
        for name, sec in steps.items():
            print(f"    {sec:8.1f}  {name}")
        shutil.rmtree(work / "breakdown")
        shutil.rmtree(pristine)
        return {}
    args = ["score", run_id, "--no-progress"] + (["--metrics", ",".join(metrics)] if metrics else [])
    result: dict[str, object] = {"kind": kind, "n": data["records"], "run_id": run_id, "import_s": import_wall,
                                 "driver_read_s": driver, "driver_rss": driver_rss, "store_mb": _du(pristine) / 1e6}
    for engine in ("local", "ray"):
        copy = work / f"{kind}-{engine}"
        shutil.copytree(pristine, copy)
        cache = work / f"cache-{kind}-{engine}"
        cache.mkdir()
        extra = ["--engine", "ray"] if engine == "ray" else []
        wall, out = evalcore(copy, *args, *extra, cache_dir=cache)
        result[f"{engine}_s"] = wall
        print(f"[{kind}] {engine:5s}: {wall:8.1f} s  {1000 * wall / data['records']:.3f} ms/answer", flush=True)
    shutil.rmtree(pristine)
    result["check"] = compare(work / f"{kind}-local", work / f"{kind}-ray", run_id)
    result["stored_mb"] = _du(work / f"{kind}-local") / 1e6
    for engine in ("local", "ray"):
        shutil.rmtree(work / f"{kind}-{engine}")
    return result


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 and 1,000 answers (a smoke run)")
    parser.add_argument("--deterministic", type=int, default=None, help="answers for part 1 (default 200,000)")
    parser.add_argument("--semantic", type=int, default=None, help="answers for part 2 (default 20,000; 0 skips)")
    parser.add_argument("--breakdown", action="store_true",
                        help="instead of the comparison: where an in-process Ray pass over the deterministic "
                             "set spends its time (driver read, Ray start, actors, composites, publish)")
    parser.add_argument("--workdir", default=None, help="where the stores go (default: a temporary folder)")
    args = parser.parse_args(argv)
    n_det = args.deterministic if args.deterministic is not None else 10_000 if args.quick else 200_000
    n_sem = args.semantic if args.semantic is not None else 1_000 if args.quick else 20_000
    for path in (HALUEVAL, SQUAD, NOVEL):
        if not path.is_file():
            print(f"data not found: {path}", file=sys.stderr)
            return 2
    import ray

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, ray {ray.__version__}; load average {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f} at the start", flush=True)
    imp, init = ray_startup()
    print(f"Ray start-up alone (fresh process): import ray + ray.data {imp:.1f} s, ray.init() + shutdown "
          f"(local instance, all CPUs) {init:.1f} s", flush=True)
    base = python_seconds("import time; t=time.perf_counter(); import evalcore.cli.main; "
                          "print(time.perf_counter()-t)")
    print(f"evalcore CLI import (fresh process): {base:.1f} s (in both engines' figures)", flush=True)
    if args.breakdown:
        with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.workdir) as tmp:
            measure("deterministic", n_det, Path(tmp), [], only_breakdown=True)
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=args.workdir) as tmp:
        work = Path(tmp)
        if n_det:
            results.append(measure("deterministic", n_det, work, []))
        if n_sem:
            results.append(measure("semantic", n_sem, work, ["semantic_similarity"]))
    ok = True
    print()
    print(f"{'':22s} {'answers':>9s} {'local':>9s} {'ray':>9s} {'local ms/ans':>13s} {'ray ms/ans':>11s} "
          f"{'ray/local':>9s}  max|diff|  values")
    for r in results:
        n, loc, ray_s = r["n"], r["local_s"], r["ray_s"]
        ratio = ray_s / loc
        c = r["check"]
        equal = (c["values_local"] == c["values_ray"] == c["keys_union"] and not c["nan_mismatch"]
                 and not c["reason_mismatch"] and c["max_abs_diff"] <= TOL[r["kind"]])
        ok &= equal and ratio <= GOAL
        print(f"{r['kind']:22s} {n:9,d} {loc:8.1f}s {ray_s:8.1f}s {1000 * loc / n:13.3f} {1000 * ray_s / n:11.3f} "
              f"{ratio:9.2f}  {c['max_abs_diff']:.1e}  {c['values_local']:,} ({c['metrics']} metrics)"
              f"{'' if equal else '  NOT EQUAL ' + json.dumps(c)}")
    for r in results:
        print(f"[{r['kind']}] driver-side read of all questions+answers and metric selection: "
              f"{r['driver_read_s']:.1f} s ({100 * r['driver_read_s'] / r['ray_s']:.0f}% of the Ray wall time), "
              f"peak RSS {r['driver_rss'] / 1e9:.2f} GB; "
              f"import {r['import_s']:.1f} s; store {r['store_mb']:.0f} MB before scoring, "
              f"{r['stored_mb']:.0f} MB after")
    print(f"goal: ray/local <= {GOAL} and equal values (<= 1e-9 deterministic, <= 1e-6 embeddings): "
          f"{'met' if ok else 'NOT met'}")
    print("Wall times are whole `evalcore score` processes: Ray's include its start-up and shut-down.")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
