"""Judge calls, tokens and wall time of the four ragas-style metrics, combined design vs separate.

    python bench/bench_judge_calls.py            # 10 questions x 2 methods, 1 s judge latency, 5 timed runs
    python bench/bench_judge_calls.py --quick    # 0.2 s latency, one timed run per design

One command, offline. A scripted judge speaking the Anthropic Messages API runs on 127.0.0.1
(the real SDK path: structured outputs when the request carries a schema; in free-text mode one
reply in eight is wrapped in prose, as models do, so the repair path shows). It reports usage
as a provider does: input tokens = request characters / 3.5, output tokens = reply characters
/ 3.5. The answers: the first 10 HotpotQA dev questions from ../shared/data when present (two
methods: one answers with the gold fact and retrieves its supporting paragraphs, one answers
from distractors), else the packaged example.

The same answers are scored with faithfulness + context_precision + context_recall +
answer_relevance under both call designs (scoring option `judge_calls`, issue 38 item 3):
`separate`, the previous design (claims, questions and the context review asked apart, 3 + 1/M
calls per answer for M methods), and `combined`, the default (an answer's claims and its
generated questions in one call, 2 + 1/M). Printed side by side, measured in this one run, with
the ratio combined / separate:
1. calls, input tokens and output tokens per answer (the judge's reported usage);
2. wall time of `evalcore score` per answer (a fresh process and an empty judge cache each
   time, the designs alternated; median of the runs), and of its judge phase alone (first
   request in to last reply out, at the judge: start-up and model loading are the rest);
3. repair calls with structured outputs (goal 0) and without them (for comparison);
4. re-score calls (goal 0) and the `--dry-run` estimate against the real count (within 5%);
5. agreement: the stored values of the two designs, compared answer by answer (the scripted
   judge gives the same verdicts to the same claims, so they must be equal).
Exits 1 when a goal is missed (combined <= 2.5 calls per answer among them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.judges.offline.words import sentences  # noqa: E402

HOTPOT = ROOT.parent / "shared" / "data" / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json"
RAGAS = ["faithfulness", "context_precision", "context_recall", "answer_relevance"]
DESIGNS = ("separate", "combined")
CHARS_PER_TOKEN = 3.5
GOAL_CALLS = 2.5


# ---- the answers ---------------------------------------------------------------------------
def hotpot_records(n: int = 10) -> list[dict[str, Any]]:
    data = json.loads(HOTPOT.read_text(encoding="utf-8"))[:n]
    out = []
    for row in data:
        paragraphs = {title: " ".join(sents) for title, sents in row["context"]}
        gold_titles = list(dict.fromkeys(t for t, _ in row["supporting_facts"]))
        others = [t for t in paragraphs if t not in gold_titles]
        gold_ctx = [paragraphs[t] for t in gold_titles] + [paragraphs[t] for t in others[:3]]
        weak_ctx = [paragraphs[t] for t in others[3:8]]
        truth = f"The answer is {row['answer']}."
        out.append({"question_id": row["_id"], "method": "local_search", "question": row["question"],
                    "ground_truth": truth, "answer": f"{row['answer']}. {gold_ctx[0].split('.')[0]}.",
                    "contexts": gold_ctx})
        out.append({"question_id": row["_id"], "method": "basic_search", "question": row["question"],
                    "ground_truth": truth, "answer": f"{weak_ctx[0].split('.')[0]}. I am not certain.",
                    "contexts": weak_ctx})
    return out


def example_records() -> list[dict[str, Any]]:
    from evalcore.cli.transfer_commands import example_files
    from evalcore.datasets import load_questions
    from evalcore.scoring.importer import parse_recorded

    answers, questions_file = example_files()
    qs, rs = parse_recorded(answers, dataset=load_questions(questions_file))
    by_id = {q.id: q for q in qs}
    return [{"question_id": r.question_id, "method": r.method, "question": by_id[r.question_id].question,
             "ground_truth": by_id[r.question_id].ground_truth or "", "answer": r.answer,
             "contexts": [c.text for c in r.retrieved if c.text]} for r in rs]


# ---- the scripted judge ----------------------------------------------------------------------
def _blocks(user: str, label: str) -> list[str]:
    token = re.search(r"<<<(DATA-[0-9A-F]{16}) BEGIN", user)
    if not token:
        return []
    t = re.escape(token.group(1))
    return re.findall(rf"<<<{t} BEGIN {label}>>>\n(.*?)\n<<<{t} END {label}>>>", user, re.DOTALL)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 3}


def _questions(answer: str) -> dict[str, Any]:
    return {"questions": [f"What about {w}?" for w in sorted(_words(answer))[:3]] or ["What is it?"],
            "noncommittal": int("not certain" in answer)}


def _review(user: str) -> dict[str, Any]:
    """Each context's relevance (two question words in it) and each statement's support (half
    its words in one context): the same verdicts for the same texts, whichever design asks."""
    ctxs = _blocks(user, r"context \d+")
    words = [_words(c) for c in ctxs]

    def verdicts(items: list[str]) -> list[dict[str, Any]]:
        out = []
        for i, s in enumerate(items, 1):
            best = max(range(len(ctxs)), key=lambda k: len(_words(s) & words[k]), default=None)
            ok = best is not None and len(_words(s) & words[best]) >= max(1, len(_words(s)) // 2)
            out.append({"i": i, "verdict": int(ok), "context": best + 1 if ok else None, "reason": "r"})
        return out
    question = _words((_blocks(user, "question") or [""])[0])
    return {"contexts": [{"i": i, "relevant": int(len(question & w) >= 2), "score": 80 if len(question & w) >= 2 else 10,
                          "reason": "r"} for i, w in enumerate(words, 1)],
            "claims": verdicts(_blocks(user, r"claim \d+")), "statements": verdicts(_blocks(user, r"statement \d+"))}


def judge_reply(system: str, user: str) -> dict[str, Any]:
    """A plausible verdict for each task the four send, in either design."""
    answer = (_blocks(user, "answer") or [""])[0]
    if "analyse an answer in two parts" in system:
        return {"claims": sentences(answer) or [], **_questions(answer)}
    if "rewrite an answer as a list" in system:
        return {"claims": sentences(answer) or []}
    if "rewrite a reference answer" in system:
        return {"statements": sentences((_blocks(user, "ground_truth") or [""])[0])}
    if "review retrieved passages" in system:
        return _review(user)
    if "which questions an answer" in system:
        return _questions(answer)
    if "rate directly how well" in system:
        return {"score": 0.5, "reason": "r"}
    raise ValueError("unknown task")


class ScriptedJudge(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # 16 requests connect at once: the default backlog of 5 drops some for 1 s

    def __init__(self, latency: float):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency = latency
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedJudge

    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        started = time.perf_counter()
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        system, msgs = body.get("system", ""), body["messages"]
        user = msgs[0]["content"]
        time.sleep(self.server.latency)
        reply = json.dumps(judge_reply(system, user))
        structured, repair = "output_config" in body, len(msgs) > 1
        # free text: one reply in eight comes wrapped in prose, as models do without a schema
        if not structured and not repair and zlib.crc32(user.encode()) % 8 == 0:
            reply = "Here is my assessment:\n" + reply
        chars = len(system) + sum(len(m["content"]) for m in msgs)
        tokens_in, tokens_out = round(chars / CHARS_PER_TOKEN), max(1, round(len(reply) / CHARS_PER_TOKEN))
        with self.server.lock:
            self.server.log.append({"in": tokens_in, "out": tokens_out, "repair": repair, "start": started,
                                    "end": time.perf_counter()})
        payload = json.dumps({"id": "msg_b", "type": "message", "role": "assistant", "model": body["model"],
                              "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn",
                              "stop_sequence": None,
                              "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


# ---- one design, measured ------------------------------------------------------------------------
def _cli(store: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), *args], env=env,
                          capture_output=True, text=True, check=False)


def _import(store: Path, records: list[dict[str, Any]], env: dict[str, str]) -> str:
    path = store.parent / f"{store.name}-answers.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    res = _cli(store, env, "import", str(path), "--name", "bench")
    if res.returncode:
        raise SystemExit(res.stderr)
    return res.stdout.strip().splitlines()[-1]


def _score(store: Path, run: str, env: dict[str, str], design: str, *extra: str) -> subprocess.CompletedProcess:
    res = _cli(store, env, "score", run, "--judge", "anthropic:claude-haiku-4-5", "--metrics", ",".join(RAGAS),
               "--no-progress", "--option", f"judge_calls={design}", *extra)
    if res.returncode:
        raise SystemExit(res.stderr)
    return res


def _values(store: Path, run: str) -> dict[tuple[str, str, str], float]:
    from evalcore.store import RunStore, query_df

    rows = query_df(RunStore(store), "SELECT method, question_id, metric, value FROM metrics WHERE run_id = ?", [run])
    return {(r.method, r.question_id, r.metric): float(r.value) for r in rows.itertuples(index=False)}


def measure(design: str, records: list[dict[str, Any]], env: dict[str, str], server: ScriptedJudge,
            tmp: Path) -> dict[str, Any]:
    """Calls, tokens, repairs, re-score calls, the dry-run estimate and the values of one design."""
    store = tmp / f"runs-{design}"
    run = _import(store, records, env)
    estimate = json.loads(_score(store, run, env, design, "--dry-run").stdout)["calls"]
    server.log.clear()
    _score(store, run, env, design)
    sent = list(server.log)
    server.log.clear()
    _score(store, run, env, design)
    rescore = len(server.log)
    text_store = tmp / f"runs-{design}-text"
    text_run = _import(text_store, records, env)
    server.log.clear()
    _score(text_store, text_run, {**env, "EVALCORE_JUDGE_STRUCTURED": "0"}, design)
    return {"calls": len(sent), "in": sum(s["in"] for s in sent), "out": sum(s["out"] for s in sent),
            "repairs": sum(s["repair"] for s in sent), "text_repairs": sum(s["repair"] for s in server.log),
            "rescore": rescore, "estimate": estimate, "values": _values(store, run)}


def walls(records: list[dict[str, Any]], env: dict[str, str], server: ScriptedJudge, tmp: Path,
          runs: int) -> dict[str, dict[str, list[float]]]:
    """Per design, `evalcore score`'s wall time (a fresh process and an empty cache each time, the
    designs alternated) and its judge phase: from the first request's arrival at the judge to
    the last reply (what the call design changes; the rest is start-up and model loading)."""
    out: dict[str, dict[str, list[float]]] = {d: {"score": [], "judge": []} for d in DESIGNS}
    for i in range(runs):
        for design in (DESIGNS if i % 2 == 0 else DESIGNS[::-1]):
            store = tmp / f"runs-wall-{design}-{i}"
            run = _import(store, records, env)
            server.log.clear()
            t0 = time.perf_counter()
            _score(store, run, env, design)
            out[design]["score"].append(time.perf_counter() - t0)
            out[design]["judge"].append(max(s["end"] for s in server.log) - min(s["start"] for s in server.log))
    return out


# ---- the report ----------------------------------------------------------------------------------
def agreement(a: dict, b: dict) -> tuple[int, int]:
    """(answers x metrics with equal values, NaN equal to NaN; all compared)."""
    keys = sorted(set(a) | set(b))
    same = sum(k in a and k in b and (a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k]))) for k in keys)
    return same, len(keys)


def report(m: dict[str, dict[str, Any]], wall: dict[str, dict[str, list[float]]], n: int) -> list[tuple]:
    """Rows: figure, separate, combined, ratio, goal, met."""
    old, new = m["separate"], m["combined"]
    w_old, w_new = (statistics.median(wall[d]["score"]) / n for d in DESIGNS)
    j_old, j_new = (statistics.median(wall[d]["judge"]) / n for d in DESIGNS)
    same, total = agreement(old["values"], new["values"])
    per = {k: (old[k] / n, new[k] / n) for k in ("calls", "in", "out")}
    return [
        ("calls per answer", f"{per['calls'][0]:.2f}", f"{per['calls'][1]:.2f}", per["calls"][1] / per["calls"][0],
         f"<= {GOAL_CALLS}", per["calls"][1] <= GOAL_CALLS),
        ("input tokens per answer", f"{per['in'][0]:,.0f}", f"{per['in'][1]:,.0f}", per["in"][1] / per["in"][0],
         "<= separate", per["in"][1] <= per["in"][0]),
        ("output tokens per answer", f"{per['out'][0]:,.0f}", f"{per['out'][1]:,.0f}", per["out"][1] / per["out"][0],
         "within 5% (same content)", per["out"][1] <= 1.05 * per["out"][0]),
        ("score wall time per answer (s)", f"{w_old:.2f}", f"{w_new:.2f}", w_new / w_old, "(measured)", True),
        ("  of which the judge phase (s)", f"{j_old:.3f}", f"{j_new:.3f}", j_new / j_old, "(measured)", True),
        ("repair calls (structured outputs)", str(old["repairs"]), str(new["repairs"]), None, "0",
         old["repairs"] == new["repairs"] == 0),
        ("repair calls (free text)", str(old["text_repairs"]), str(new["text_repairs"]), None, "(for comparison)", True),
        ("re-score calls", str(old["rescore"]), str(new["rescore"]), None, "0", old["rescore"] == new["rescore"] == 0),
        ("dry-run estimate / real calls", f"{old['estimate']} / {old['calls']}", f"{new['estimate']} / {new['calls']}",
         None, "within 5%", all(abs(x["estimate"] - x["calls"]) <= 0.05 * x["calls"] for x in (old, new))),
        ("values equal to the separate design's", "-", f"{same} / {total}", None, "all", same == total and total > 0),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="0.2 s latency and one wall-clock run per design")
    ap.add_argument("--latency", type=float, default=None)
    ap.add_argument("--runs", type=int, default=None, help="wall-clock runs per design (median)")
    args = ap.parse_args()
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 1.0)
    runs = args.runs or (1 if args.quick else 5)
    records = hotpot_records() if HOTPOT.is_file() else example_records()
    source = "HotpotQA dev (first 10)" if HOTPOT.is_file() else "the packaged example"
    n_answers, n_questions = len(records), len({r["question_id"] for r in records})
    server = ScriptedJudge(latency)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-bench-not-a-key",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-bench-judge-"))
    try:
        measured = {d: measure(d, records, env, server, tmp) for d in DESIGNS}
        wall = walls(records, env, server, tmp, runs)
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"judge calls: {n_questions} questions x {n_answers // n_questions} methods = {n_answers} answers "
          f"({source}), judge latency {latency:g} s, {runs} timed run(s) per design\n")
    print(f"{'figure':36} {'separate':>14} {'combined':>14} {'ratio':>6}  goal")
    failures = []
    for name, old, new, ratio, goal, ok in report(measured, wall, n_answers):
        cell = f"{ratio:.2f}" if ratio is not None else "-"
        print(f"{name:36} {old:>14} {new:>14} {cell:>6}  {goal}  {'ok' if ok else 'MISSED'}")
        if not ok:
            failures.append(name)
    for kind in ("score", "judge"):
        print(f"\n{kind} wall times (s): " + "; ".join(f"{d} " + ", ".join(f"{w:.1f}" for w in wall[d][kind])
                                                      for d in DESIGNS), end="")
    print()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
