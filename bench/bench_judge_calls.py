"""Judge cost and wall-clock benchmark for the four ragas-style metrics (issue 15 goals).

    python bench/bench_judge_calls.py            # 10 questions x 2 methods, 1 s judge latency
    python bench/bench_judge_calls.py --quick    # 0.2 s latency, one wall-clock run

A scripted judge speaking the Anthropic Messages API runs on 127.0.0.1 (the real SDK path:
structured outputs when the request carries a schema; in free-text mode one reply in eight is
wrapped in prose, as models do, so the repair path shows). The answers: the first 10 HotpotQA
dev questions from ../shared/data when present (two methods: one answers with the gold fact and
retrieves its supporting paragraphs, one answers from distractors), else the packaged example.

Printed side by side, measured in this one run:
1. calls per answer for faithfulness + context_precision + context_recall + answer_relevance,
   against the previous design's 4 (decompose-with-reference, support, context_relevance,
   question_generation per answer). Goal <= 3.5.
2. prompt tokens per answer (prompt characters / 3.5, the dry run's estimate, applied to what
   was really sent), against the previous design's prompts rendered from their v1 files with
   the same inputs. Goal: no higher.
3. repair calls with structured outputs (goal 0) and with them switched off.
4. re-score calls (goal 0); `--dry-run` estimate against the real count (goal within 5%).
5. wall time of `evalcore score` (a fresh process, an empty judge cache) at the judge latency,
   median of the runs; goal <= 12.3 s at 1 s latency (ragas 0.4.3 on the same 20 answers, as
   recorded in issue 15; evalcore took 37.8 s there before this design).
Exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalcore.judges.offline.words import sentences  # noqa: E402
from evalcore.judges.prompts import render  # noqa: E402

HOTPOT = ROOT.parent / "shared" / "data" / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json"
RAGAS = ["faithfulness", "context_precision", "context_recall", "answer_relevance"]
RAGAS_RECORDED_S = 12.3  # issue 15: ragas 0.4.3, same 20 answers, 1 s judge latency
CHARS_PER_TOKEN = 3.5


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
    from evalcore.cli.store_commands import example_files
    from evalcore.scoring.importer import parse_recorded

    answers, questions_file = example_files()
    from evalcore.datasets import load_questions

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


def judge_reply(system: str, user: str) -> dict[str, Any]:
    """A plausible verdict for each task evalcore sends (old and new prompt files alike)."""
    if "rewrite an answer as a list" in system or "rewrite texts as lists" in system:
        answer = (_blocks(user, "answer") or [""])[0]
        claims = sentences(answer) or []
        if "rewrite texts" in system:
            truth = (_blocks(user, "ground_truth") or [""])[0]
            return {"answer_claims": claims, "ground_truth_statements": sentences(truth)}
        return {"claims": claims}
    if "rewrite a reference answer" in system:
        return {"statements": sentences((_blocks(user, "ground_truth") or [""])[0])}
    if "review retrieved passages" in system or "check statements against" in system \
            or "retrieved passages help" in system:
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
        relevance = [{"i": i, "relevant": int(len(question & w) >= 2), "score": 80 if len(question & w) >= 2 else 10,
                      "reason": "r"} for i, w in enumerate(words, 1)]
        review = "review retrieved passages" in system  # the current prompt; the others are v1's
        reply: dict[str, Any] = {}
        if review or "retrieved passages help" in system:
            reply["contexts"] = relevance
        if review or "check statements against" in system:
            reply["claims"] = verdicts(_blocks(user, r"claim \d+"))
            reply["statements"] = verdicts(_blocks(user, r"statement \d+"))
        return reply
    if "which questions an answer" in system:
        answer = (_blocks(user, "answer") or [""])[0]
        return {"questions": [f"What about {w}?" for w in sorted(_words(answer))[:3]] or ["What is it?"],
                "noncommittal": int("not certain" in answer)}
    if "rate directly how well" in system:
        return {"score": 0.5, "reason": "r"}
    raise ValueError("unknown task")


class ScriptedJudge(ThreadingHTTPServer):
    daemon_threads = True

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
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        system = body.get("system", "")
        msgs = body["messages"]
        user = msgs[0]["content"]
        time.sleep(self.server.latency)
        reply = json.dumps(judge_reply(system, user))
        structured = "output_config" in body
        repair = len(msgs) > 1
        # free text: one reply in eight comes wrapped in prose, as models do without a schema
        if not structured and not repair and int(hashlib.sha1(user.encode()).hexdigest(), 16) % 8 == 0:
            reply = "Here is my assessment:\n" + reply
        chars = len(system) + sum(len(m["content"]) for m in msgs)
        with self.server.lock:
            self.server.log.append({"chars": chars, "structured": structured, "repair": repair})
        payload = json.dumps({"id": "msg_b", "type": "message", "role": "assistant", "model": body["model"],
                              "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn",
                              "stop_sequence": None,
                              "usage": {"input_tokens": round(chars / CHARS_PER_TOKEN), "output_tokens": 60}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


# ---- helpers -------------------------------------------------------------------------------------
def _cli(store: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", "--store", str(store), *args], env=env,
                          capture_output=True, text=True, check=False)


def _import(store: Path, records: list[dict[str, Any]], env: dict[str, str]) -> str:
    path = store.parent / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    res = _cli(store, env, "import", str(path), "--name", "bench")
    if res.returncode:
        raise SystemExit(res.stderr)
    return res.stdout.strip().splitlines()[-1]


def previous_design_chars(records: list[dict[str, Any]]) -> int:
    """Prompt characters the previous design sent for these answers: decompose.v1 (answer and
    reference together), support.v1, context_relevance.v1, question_generation.v1 per answer,
    rendered from their files with the inputs its judge would have produced."""
    total = 0
    for r in records:
        claims, stmts = sentences(r["answer"]), sentences(r["ground_truth"])
        prompts = [render("decompose", {"question": r["question"], "answer": r["answer"],
                                        "ground_truth": r["ground_truth"]}, "1"),
                   render("support", {"contexts": r["contexts"], "claims": claims, "statements": stmts}, "1",
                          {"n_claims": str(len(claims)), "n_statements": str(len(stmts))}),
                   render("context_relevance", {"question": r["question"], "ground_truth": r["ground_truth"],
                                                "contexts": r["contexts"]}, "1",
                          {"n_contexts": str(len(r["contexts"]))}),
                   render("question_generation", {"answer": r["answer"]}, "1")]
        total += sum(len(p.system) + len(p.user) for p in prompts)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="0.2 s latency and one wall-clock run")
    ap.add_argument("--latency", type=float, default=None)
    ap.add_argument("--runs", type=int, default=None, help="wall-clock runs (median)")
    args = ap.parse_args()
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 1.0)
    runs = args.runs or (1 if args.quick else 3)
    records = hotpot_records() if HOTPOT.is_file() else example_records()
    source = "HotpotQA dev (first 10)" if HOTPOT.is_file() else "the packaged example"
    n_answers = len(records)
    n_questions = len({r["question_id"] for r in records})
    server = ScriptedJudge(latency)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-bench-not-a-key",
           "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    judge = ["--judge", "anthropic:claude-haiku-4-5", "--metrics", ",".join(RAGAS), "--no-progress"]
    failures: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="evalcore-bench-judge-"))
    try:
        # 1-4: one store, scored with structured outputs; then the same answers without them
        store = tmp / "runs"
        run = _import(store, records, env)
        dry = _cli(store, env, "score", run, *judge, "--dry-run")
        estimate = json.loads(dry.stdout)["calls"] if dry.returncode == 0 else None
        server.log.clear()
        res = _cli(store, env, "score", run, *judge)
        if res.returncode:
            raise SystemExit(res.stderr)
        sent = list(server.log)
        server.log.clear()
        _cli(store, env, "score", run, *judge)
        rescore = len(server.log)
        text_store = tmp / "runs-text"
        text_run = _import(text_store, records, env)
        server.log.clear()
        _cli(text_store, {**env, "EVALCORE_JUDGE_STRUCTURED": "0"}, "score", text_run, *judge)
        text_sent = list(server.log)
        # 5: wall time, a fresh process and an empty cache each time
        walls = []
        for i in range(runs):
            wall_store = tmp / f"runs-wall-{i}"
            wall_run = _import(wall_store, records, env)
            t0 = time.perf_counter()
            res = _cli(wall_store, env, "score", wall_run, *judge)
            walls.append(time.perf_counter() - t0)
            if res.returncode:
                raise SystemExit(res.stderr)
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)

    calls = len(sent)
    per_answer = calls / n_answers
    tokens_now = sum(s["chars"] for s in sent) / CHARS_PER_TOKEN / n_answers
    tokens_before = previous_design_chars(records) / CHARS_PER_TOKEN / n_answers
    repairs = sum(s["repair"] for s in sent)
    text_repairs = sum(s["repair"] for s in text_sent)
    wall = statistics.median(walls)
    print(f"judge benchmark: {n_questions} questions x {n_answers // n_questions} methods = {n_answers} answers "
          f"({source}), judge latency {latency:g} s\n")
    rows = [
        ("calls per answer", f"{per_answer:.2f}", "4.00", "<= 3.5", per_answer <= 3.5),
        ("prompt tokens per answer", f"{tokens_now:,.0f}", f"{tokens_before:,.0f}", "<= previous",
         tokens_now <= tokens_before),
        ("repair calls (structured outputs)", str(repairs), "-", "0", repairs == 0),
        ("repair calls (free text)", str(text_repairs), "-", "(for comparison)", True),
        ("re-score calls", str(rescore), "-", "0", rescore == 0),
        ("dry-run estimate / real calls", f"{estimate} / {calls}", "-", "within 5%",
         estimate is not None and abs(estimate - calls) <= 0.05 * calls),
    ]
    if latency == 1.0:
        rows.append(("score wall time (s)", f"{wall:.1f}", "37.8 (recorded)", f"<= {RAGAS_RECORDED_S} (ragas)",
                     wall <= RAGAS_RECORDED_S))
    else:
        rows.append(("score wall time (s)", f"{wall:.1f}", "-", "(goal measured at 1 s latency)", True))
    print(f"{'figure':36} {'now':>14} {'previous':>16}  goal")
    for name, now, before, goal, ok in rows:
        print(f"{name:36} {now:>14} {before:>16}  {goal}  {'ok' if ok else 'MISSED'}")
        if not ok:
            failures.append(name)
    print(f"\ntoken ratio now / previous: {tokens_now / tokens_before:.2f}; "
          f"wall times: {', '.join(f'{w:.1f}' for w in walls)} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
