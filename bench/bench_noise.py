"""Does judge noise make `evalcore compare` call a difference that is not there? (issue 36 item 5)

    python bench/bench_noise.py                  # ~1-3 minutes on two cores, offline
    python bench/bench_noise.py --comparisons 2000

One command, offline. Three parts, printed in turn:

1. The product path. A scripted judge on 127.0.0.1 speaks the OpenAI chat-completions API (the
   real SDK path); its answer_class verdict is right about an answer, except that it flips with
   probability FLIP whenever the request samples (a temperature > 0: temperature 0 gets the same
   verdict every time, as most servers give copies). A run of 40 questions x 2 systems, whose
   answers are right or wrong by construction, is scored with `--repeats 3`; the stored repeats'
   flip rate is checked against the one the script implies, and `compare` and `compare --aa`
   run on the store.
2. What repeating a stage costs: the calls and tokens per answer of faithfulness's stages
   (claims, reference statements, context review) measured on the same judge, and what K = 3
   repeats cost when every stage is repeated versus the verdicts on fixed claims only.
3. The statistics, 500+ simulated comparisons per true Δ (0 and 0.09 on the judge's scale),
   each drawn like part 1's run (question difficulty, one answer per system, K verdicts with
   flips), analysed four ways with compare's own functions (`compare_pair`: paired bootstrap CI,
   McNemar or randomization p):
   - judge noise ignored: the K verdicts of an answer read as K independent pairs (what a
     per-repeat export or a tool that counts repeated trials as rows gives);
   - one verdict per answer (K = 1): the pass evalcore made before repeats;
   - included (evalcore): each answer's value is the mean of its K verdicts, and the CI and test
     resample questions over those means; by the law of total variance their spread holds the
     judge's variance / K (docs/comparison.md, "Three sources of uncertainty");
   - two-stage bootstrap (questions, then repeats within a question), for reference: it counts
     the judge's variance twice (Davison & Hinkley 1997, section 3.8), so it is wider.
   Printed per analysis: the false-positive rate at Δ = 0 (p < 0.05), the CI's coverage of the
   true Δ, the power at Δ = 0.09 and the mean CI width. Exits 1 when the included analysis
   covers less than 0.93 or finds more than 0.05 false positives at Δ = 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.analysis.comparison.compare import compare_pair  # noqa: E402
from evalcore.stats.resample import DEFAULT_BOOT  # noqa: E402

FLIP = 0.2  # the judge's chance of flipping a verdict when it samples
N_QUESTIONS, K = 40, 3
DELTA_ANSWERS = 0.15  # system B answers right this much more often
TRUE_DELTA = (1 - 2 * FLIP) * DELTA_ANSWERS  # the same on the judge's scale (flips pull toward 1/2)


# ---- the scripted judge --------------------------------------------------------------------
def _block(user: str, label: str) -> str:
    token = re.search(r"<<<(DATA-[0-9A-F]{16}) BEGIN", user)
    if not token:
        return ""
    t = re.escape(token.group(1))
    found = re.search(rf"<<<{t} BEGIN {label}>>>\n(.*?)\n<<<{t} END {label}>>>", user, re.DOTALL)
    return found.group(1) if found else ""


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


class Judge(ThreadingHTTPServer):
    """OpenAI chat completions on 127.0.0.1. answer_class: CORRECT for an answer marked [right],
    flipped with probability `flip` when the request samples; the faithfulness stages: the
    answer's sentences as claims, the reference's as statements, every context relevant and
    every claim supported (part 2 measures their cost, not their verdicts); the answer analysis
    (claims and questions in one reply, the default `judge_calls: combined`) likewise. No usage block is
    sent, so evalcore estimates tokens from characters (as for a local server)."""

    def __init__(self, flip: float, seed: int = 0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.flip = flip
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.calls = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        with self.lock:
            self.calls += 1
            flipped = body.get("temperature", 1.0) > 0 and self.rng.random() < self.flip
        if "classify an answer as correct or wrong" in system:
            right = "[right]" in _block(user, "answer")
            return {"label": "CORRECT" if right != flipped else "WRONG", "reason": "scripted"}
        if "rewrite an answer as a list" in system:
            return {"claims": _sentences(_block(user, "answer"))}
        if "analyse an answer in two parts" in system:  # the claims and questions of judge_calls: combined
            return {"claims": _sentences(_block(user, "answer")), "questions": ["What is it about?"] * 3,
                    "noncommittal": 0}
        if "rewrite a reference answer" in system:
            return {"statements": _sentences(_block(user, "ground_truth")) or ["(none)"]}
        if "review retrieved passages" in system:
            n_ctx = len(re.findall(r"BEGIN context \d+>>>", user))
            n_claims = len(re.findall(r"BEGIN claim \d+>>>", user))
            n_st = len(re.findall(r"BEGIN statement \d+>>>", user))
            return {"contexts": [{"i": i, "relevant": True, "score": 80, "reason": "r"} for i in range(1, n_ctx + 1)],
                    "claims": [{"i": i, "verdict": 1, "context": 1, "reason": "r"} for i in range(1, n_claims + 1)],
                    "statements": [{"i": i, "verdict": 1, "context": 1, "reason": "r"} for i in range(1, n_st + 1)]}
        raise ValueError(f"the scripted judge has no reply for: {system[:80]}")


class _Handler(BaseHTTPRequestHandler):
    server: Judge

    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        text = json.dumps(self.server.reply(body))
        out = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                       "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


# ---- part 1: the product path --------------------------------------------------------------
def draw_answers(rng: np.random.Generator, n: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """Whether each system answered each question right: question difficulty a_i ~ U(0.2, 0.9),
    A right with probability a_i, B with a_i + delta (one answer per question and system)."""
    a = rng.uniform(0.2, 0.9, n)
    return rng.random(n) < a, rng.random(n) < np.clip(a + delta, 0, 1)


def build_run(store: Any, right_a: np.ndarray, right_b: np.ndarray) -> str:
    from evalcore.schemas import EvalQuestion, EvalResponse, RetrievedChunk, RunManifest
    from evalcore.store import FORMAT_VERSION

    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="noise", name="noise",
                                          evalcore_version="bench", methods=["a", "b"]))
    qs = [EvalQuestion(id=f"q{i:03d}", question=f"What is fact {i}?", ground_truth=f"Fact {i} is true. It is old.")
          for i in range(len(right_a))]
    writer.write_questions(qs)
    ctx = [RetrievedChunk(rank=1, text="Some passage about the facts."), RetrievedChunk(rank=2, text="Another one.")]
    writer.write_responses([EvalResponse(question_id=q.id, method=m, retrieved=ctx,
                                         answer=f"{'[right]' if right else '[wrong]'} Fact {i} is true ({m}). "
                                                f"It is old.")
                            for m, rights in (("a", right_a), ("b", right_b)) for i, (q, right) in
                            enumerate(zip(qs, rights))])
    writer.publish()
    return "noise"


def product_path(store: Any, judge: Judge) -> dict[str, Any]:
    """Part 1: score with --repeats K through the SDK, read the stored repeats, run compare."""
    from evalcore.analysis.comparison.aa_check import aa_check
    from evalcore.analysis.comparison.compare import compare
    from evalcore.analysis.comparison.judge_noise import noise_table
    from evalcore.analysis.report.report_data import comparison_record, short_names
    from evalcore.scoring.engine import score_run

    right_a, right_b = draw_answers(np.random.default_rng(7), N_QUESTIONS, DELTA_ANSWERS)
    run = build_run(store, right_a, right_b)
    spec = f"openai:scripted@{judge.url}"
    start = time.perf_counter()
    score_run(store, run, metrics=["answer_correct"], options={"judge": spec, "judge_repeats": K}, progress=False)
    seconds = time.perf_counter() - start
    calls = judge.calls
    score_run(store, run, metrics=["answer_correct"], options={"judge": spec, "judge_repeats": K}, progress=False)
    noise = noise_table(store, run)
    result = compare(store, ["noise:a", "noise:b"], metrics=["answer_correct"])
    record = comparison_record(store, result, short_names([result.baseline, *result.candidates]))
    aa = aa_check(store, ["noise"], ["answer_correct"])
    return {"calls": calls, "replayed_calls": judge.calls - calls, "seconds": seconds, "noise": noise,
            "expected_flip": 1 - (1 - FLIP) ** K - FLIP ** K, "row": record["metrics"][0],
            "judge_noise": record["judge_noise"][0], "aa": aa}


# ---- part 2: what repeating each stage costs -------------------------------------------------
def stage_costs(store: Any, judge: Judge) -> dict[str, dict[str, float]]:
    """Faithfulness's calls and estimated tokens per answer, by stage, from the stored calls."""
    from evalcore.scoring.engine import score_run
    from evalcore.store import query_df

    score_run(store, "noise", metrics=["faithfulness"], options={"judge": f"openai:scripted@{judge.url}"},
              progress=False)
    calls = query_df(store, "SELECT purpose, count(*) AS calls, sum(input_tokens) AS tin, "
                            "sum(output_tokens) AS tout FROM judge_calls WHERE purpose IN "
                            "('decompose', 'answer_analysis', 'reference_statements', 'context_review') "
                            "GROUP BY purpose")
    answers = 2 * N_QUESTIONS
    return {r.purpose: {"calls": r.calls / answers, "tokens": (r.tin + r.tout) / answers}
            for r in calls.itertuples(index=False)}


# ---- part 3: the statistics ------------------------------------------------------------------
def judged(rng: np.random.Generator, right: np.ndarray, k: int, flip: float) -> np.ndarray:
    """(n, k) verdicts 1/0: right or wrong, each flipped with probability `flip`."""
    flips = rng.random((right.size, k)) < flip
    return (right[:, None] != flips).astype(float)


def two_stage_ci(va: np.ndarray, vb: np.ndarray, rng: np.random.Generator, n_boot: int = DEFAULT_BOOT) -> tuple:
    """Percentile CI of mean Δ resampling questions, then each side's repeats within a question."""
    n, k = va.shape
    qi = rng.integers(0, n, (n_boot, n))
    ra, rb = rng.integers(0, k, (n_boot, n, k)), rng.integers(0, k, (n_boot, n, k))
    a = np.take_along_axis(va[qi], ra, axis=2).mean(axis=(1, 2))
    b = np.take_along_axis(vb[qi], rb, axis=2).mean(axis=(1, 2))
    return tuple(np.percentile(b - a, [2.5, 97.5]))


def one_comparison(rng: np.random.Generator, delta: float, n: int, k: int, flip: float) -> dict[str, tuple]:
    """(significant, CI) per analysis for one simulated comparison."""
    right_a, right_b = draw_answers(rng, n, delta)
    va, vb = judged(rng, right_a, k, flip), judged(rng, right_b, k, flip)
    out = {}
    pooled = compare_pair(va.ravel(), vb.ravel(), True, DEFAULT_BOOT, 10000, 0, binary=True)
    single = compare_pair(va[:, 0], vb[:, 0], True, DEFAULT_BOOT, 10000, 0, binary=True)
    means = compare_pair(va.mean(axis=1), vb.mean(axis=1), True, DEFAULT_BOOT, 10000, 0, binary=True)
    for name, row in (("ignored", pooled), ("k1", single), ("included", means)):
        out[name] = (row["p_value"] < 0.05, (row["ci_low"], row["ci_high"]))
    lo, hi = two_stage_ci(va, vb, rng)
    out["two_stage"] = (not lo <= 0 <= hi, (lo, hi))
    return out


ANALYSES = {"ignored": "judge noise ignored: K verdicts as K pairs", "k1": "one verdict per answer (K = 1)",
            "included": "included: mean of K per answer (evalcore)", "two_stage": "two-stage bootstrap (reference)"}


def simulate(comparisons: int, seed: int = 1) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    tally: dict[str, dict[str, list]] = {a: {"fp": [], "cover0": [], "power": [], "cover1": [], "width": []}
                                          for a in ANALYSES}
    for _ in range(comparisons):
        for delta, truth in ((0.0, 0.0), (DELTA_ANSWERS, TRUE_DELTA)):
            for name, (significant, (lo, hi)) in one_comparison(rng, delta, N_QUESTIONS, K, FLIP).items():
                t = tally[name]
                (t["fp"] if delta == 0 else t["power"]).append(significant)
                (t["cover0"] if delta == 0 else t["cover1"]).append(lo <= truth <= hi)
                t["width"].append(hi - lo)
    return {a: {key: float(np.mean(v)) for key, v in t.items()} for a, t in tally.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comparisons", type=int, default=500, help="simulated comparisons per true Δ")
    args = parser.parse_args()
    from evalcore.store import RunStore

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-no-key")
    judge = Judge(FLIP)
    thread = threading.Thread(target=judge.serve_forever, daemon=True)
    thread.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = RunStore(Path(tmp) / "runs")
            part1 = product_path(store, judge)
            stages = stage_costs(store, judge)
    finally:
        judge.shutdown()
        judge.server_close()
    noise = part1["noise"].set_index("method")
    print(f"1. product path: {N_QUESTIONS} questions x 2 systems, answer_correct, K = {K}, flip {FLIP}: "
          f"{part1['calls']} judge calls in {part1['seconds']:.1f} s, {part1['replayed_calls']} on a second pass")
    flips = float((noise.flip_rate * noise.n_answers).sum() / noise.n_answers.sum())
    print(f"   stored repeats: flip rate {flips:.3f} over {int(noise.n_answers.sum())} answers (the script implies "
          f"{part1['expected_flip']:.3f}); judge SD a {noise.at['a', 'within_sd']:.3f}, b {noise.at['b', 'within_sd']:.3f}")
    row, jn = part1["row"], part1["judge_noise"]
    print(f"   compare a b: Δ {row['delta']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}], p {row['p_value']:.4f} "
          f"({row['test']}); judge share of Δ variance {jn['judge_share']:.2f}, ± {jn['noise_delta']:.4f} from "
          "judge noise alone")
    for r in part1["aa"]:
        print(f"   compare --aa {r['system']}: halves Δ {r['delta']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}], "
              f"p {r['p_value']:.4f}; ± {r['noise_delta']:.4f} between two K = {K} judgings")
    print("2. faithfulness per answer by stage (calls, estimated tokens):")
    for stage, c in sorted(stages.items()):
        print(f"   {stage:<22} {c['calls']:.2f} calls  {c['tokens']:8.0f} tokens")
    total = sum(c["tokens"] for c in stages.values())
    verdicts = stages.get("context_review", {"tokens": 0.0})["tokens"]
    print(f"   K = {K}, every stage repeated: {K * total:.0f} tokens per answer ({K:.1f} x one pass); verdicts on "
          f"fixed claims only: {total + (K - 1) * verdicts:.0f} ({(total + (K - 1) * verdicts) / total:.2f} x)")
    start = time.perf_counter()
    stats = simulate(args.comparisons)
    print(f"3. {args.comparisons} simulated comparisons per true Δ (0 and {TRUE_DELTA:.2f} on the judge's scale; "
          f"n = {N_QUESTIONS}, K = {K}, flip {FLIP}), {time.perf_counter() - start:.0f} s:")
    print(f"   {'analysis':<46} {'FP at Δ=0':>9} {'cover Δ=0':>9} {'cover Δ>0':>9} {'power':>6} {'CI width':>8}")
    for name, label in ANALYSES.items():
        s = stats[name]
        print(f"   {label:<46} {s['fp']:9.3f} {s['cover0']:9.3f} {s['cover1']:9.3f} {s['power']:6.3f} {s['width']:8.3f}")
    inc = stats["included"]
    ok = inc["cover0"] >= 0.93 and inc["fp"] <= 0.05
    print("goal (included: coverage >= 0.93, false positives <= 0.05 at Δ = 0):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
