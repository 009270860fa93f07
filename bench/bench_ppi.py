"""Benchmark: do human-corrected estimates cover the human mean, and how much narrower are they?

    python bench/bench_ppi.py [--draws 1000] [--n 50,100,200] [--seed 0] [--sets halueval_qa,graphrag_novel,...]

Data: HaluEval QA (../shared/data/halueval/qa_one-turn_data.jsonl, SOURCE.txt there): 500
questions, each with a right answer and a hallucinated one (ChatGPT-written, plausible but wrong)
and the knowledge passage as the only context: 1,000 answers whose labels are known by
construction (right = 1, hallucinated = 0). Not per-answer human judgements: the labels play the
part of the humans' values here.

A second set, graphrag_novel (GraphRAG-Bench Novel, ../shared/data/graphrag_bench): each gold answer
against its own evidence (1) and another question's answer against it (0), labels by construction
too, built by bench_heuristic_judge.graphrag_faithfulness; long abstractive answers, a weaker judge.

A third, halueval_preference, is a paired-preference case (a win rate, not a mean): two systems
answer HaluEval QA's 500 questions, each question's answer drawn (seeded) as the right or the
hallucinated one, the baseline right with probability 0.5 and the candidate with 0.7. The human
preference is known by construction (the right answer wins; the same answer twice is a tie), and
the judge's is the product's rule from the heuristic faithfulness of the two answers
(evalcore.analysis.labels.win_rate.judge_preference: better value wins, equal ties); both mapped to
the candidate's win, 1 / 0.5 / 0, by the product's win_rate.human_preference. RAGChecker's human
preference annotations (its meta-evaluation file) are named in ../shared/data/ragchecker/SOURCE.txt
but not in the snapshot, so the case is built from HaluEval. control_preference shuffles its
judge preferences (seeded), as control_uninformative does for the means.

Predictions: the offline heuristic judge's faithfulness of each answer against its passage,
computed through the product's metric (bench_heuristic_judge.metric). Truth: the label. The
target is the labels' mean over all 1,000 answers (0.5 by construction).

Per n in --n, --draws times: n answers drawn uniformly without replacement are "labelled", the
rest keep only the judge's value. Three 95% intervals for the mean:
  classical  the labels alone (ppi_py.classical_mean_ci)
  PPI        prediction-powered, lambda = 1 (ppi_py.ppi_mean_ci(lam=1))
  PPI++      power-tuned lambda, what the product reports (evalcore.analysis.labels.corrected.estimate)
Printed: each interval's coverage of the target, the median width ratio PPI / classical and
PPI++ / classical, and the judge-only mean's bias (its error with no labels at all), beside
the judge-label correlation rho. Goals (issue 25): coverage >= 0.93 everywhere; PPI++ never
more than 2% wider than classical; at n = 100, PPI++ >= 20% narrower.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

DATA = ROOT.parent / "shared" / "data"


def _labelled(cases) -> tuple[np.ndarray, np.ndarray]:
    from bench_heuristic_judge import metric

    return np.array([c.label for c in cases], dtype=float), metric("faithfulness", cases)


def halueval_qa(data: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """(labels, heuristic faithfulness) of HaluEval QA's 1,000 right/hallucinated answers."""
    from bench_heuristic_judge import halueval_faithfulness

    return _labelled(halueval_faithfulness(data))


def graphrag_novel(data: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """GraphRAG-Bench Novel: each gold answer against its own evidence (1) and the next same-novel
    question's answer against that evidence (0); labels by construction (bench_heuristic_judge)."""
    from bench_heuristic_judge import graphrag_faithfulness

    return _labelled(graphrag_faithfulness(data))


def halueval_preference(data: Path = DATA, seed: int = 2024) -> tuple[np.ndarray, np.ndarray]:
    """(human win, judge win) of a candidate over a baseline on HaluEval QA's 500 questions: each
    system's answer the right or the hallucinated one (seeded: baseline right with p = 0.5,
    candidate with 0.7), people preferring the right one (a tie when both gave the same), the
    judge preferring the higher heuristic faithfulness (equal: a tie)."""
    from evalcore.analysis.labels.win_rate import human_preference, judge_preference

    _, faith = halueval_qa(data)
    right, wrong = faith[0::2], faith[1::2]  # halueval_faithfulness: right, hallucinated, per question
    rng = np.random.default_rng(seed)
    base_right, cand_right = rng.random(len(right)) < 0.5, rng.random(len(right)) < 0.7
    judge = judge_preference(np.where(base_right, right, wrong), np.where(cand_right, right, wrong))
    labels = np.where(base_right == cand_right, "tie", np.where(cand_right, "B", "A"))  # A: the baseline
    return human_preference(labels, cand_is_a=False), judge


def control_uninformative(data: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """A control, not a data set: HaluEval QA's labels with the judge's values shuffled (seeded),
    so the judge carries no information. PPI (lambda = 1) pays for the judge's noise here; PPI++
    should tune lambda to ~0 and stay as wide as the labels alone."""
    y, yhat = halueval_qa(data)
    return y, np.random.default_rng(12345).permutation(yhat)


def control_preference(data: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """The preference case's control: its judge preferences shuffled (seeded), so they carry no
    information and PPI++ should fall back to the labels alone."""
    y, yhat = halueval_preference(data)
    return y, np.random.default_rng(12345).permutation(yhat)


SETS = {"halueval_qa": (halueval_qa, "halueval/qa_one-turn_data.jsonl"),
        "graphrag_novel": (graphrag_novel, "graphrag_bench/novel_questions.json"),
        "control_uninformative": (control_uninformative, "halueval/qa_one-turn_data.jsonl"),
        "halueval_preference": (halueval_preference, "halueval/qa_one-turn_data.jsonl"),
        "control_preference": (control_preference, "halueval/qa_one-turn_data.jsonl")}
WIN_RATE = {"halueval_preference", "control_preference"}  # sets whose values are a candidate's wins (1 / 0.5 / 0), not labels


def simulate(y: np.ndarray, yhat: np.ndarray, n: int, draws: int, seed: int) -> dict[str, float]:
    """Coverage and width ratios of the three intervals over `draws` random labelled samples."""
    import ppi_py

    from evalcore.analysis.labels.corrected import estimate

    rng = np.random.default_rng(seed)
    truth = y.mean()
    cover = {"classical": 0, "PPI": 0, "PPI++": 0}
    ratio_ppi, ratio_pp = [], []
    for _ in range(draws):
        mask = np.zeros(len(y), bool)
        mask[rng.choice(len(y), n, replace=False)] = True
        est = estimate(y[mask], yhat[mask], yhat[~mask], min_labels=0)
        lo, hi = est["classical_low"], est["classical_high"]
        plo, phi = (float(v) for v in np.ravel(ppi_py.ppi_mean_ci(y[mask], yhat[mask], yhat[~mask], alpha=0.05, lam=1)))
        cover["classical"] += lo <= truth <= hi
        cover["PPI"] += plo <= truth <= phi
        cover["PPI++"] += est["ci_low"] <= truth <= est["ci_high"]
        ratio_ppi.append((phi - plo) / (hi - lo))
        ratio_pp.append((est["ci_high"] - est["ci_low"]) / (hi - lo))
    return {**{f"cov_{k}": v / draws for k, v in cover.items()},
            "ratio_PPI": float(np.median(ratio_ppi)), "ratio_PPI++": float(np.median(ratio_pp))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--n", default="50,100,200")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of: {', '.join(SETS)}")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.n.split(",")]
    for name in args.sets.split(","):
        load, rel = SETS[name]
        if not (DATA / rel).is_file():
            print(f"{name}: {DATA / rel} not found (see the folder's SOURCE.txt)", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        y, yhat = load()
        rho = float(np.corrcoef(y, yhat)[0, 1])
        what = (("questions", "human win rate", "judge win rate") if name in WIN_RATE else
                ("answers", "label mean", "heuristic judge faithfulness mean"))
        print(f"{name}: {len(y)} {what[0]}, {what[1]} {y.mean():.3f}, {what[2]} "
              f"{yhat.mean():.3f} (judge-only bias {yhat.mean() - y.mean():+.3f}), rho {rho:.2f}, "
              f"sqrt(1 - rho^2) {np.sqrt(1 - rho ** 2):.2f}  [scored in {time.perf_counter() - t0:.0f} s]")
        print(f"{args.draws} draws per n, seed {args.seed}; 95% intervals")
        print(f"{'n':>5} {'cov classical':>14} {'cov PPI':>8} {'cov PPI++':>10} {'width PPI/cl':>13} "
              f"{'width PPI++/cl':>15} {'judge-only bias':>16}")
        for i, n in enumerate(sizes):
            r = simulate(y, yhat, n, args.draws, args.seed + i)
            print(f"{n:>5} {r['cov_classical']:>14.3f} {r['cov_PPI']:>8.3f} {r['cov_PPI++']:>10.3f} "
                  f"{r['ratio_PPI']:>13.3f} {r['ratio_PPI++']:>15.3f} {yhat.mean() - y.mean():>+16.3f}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
