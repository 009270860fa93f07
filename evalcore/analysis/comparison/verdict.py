"""What a paired comparison says, in words: the verdict per tested metric, the one-line summary,
the minimum detectable effect, and the warnings that two systems are not comparable as scored.

Why a module of its own: the Compare page and `evalcore compare` print the same sentences, and
a sentence is a number a person reads. A verdict must say what the statistics say, no more:
- no question with a value on both sides (0 pairs) -> "not compared": nothing was looked at,
  so nothing was found either way (Markdown used to say "no significant difference" here, the
  words of a comparison that looked and found nothing; every renderer reads this outcome);
- significant after Holm -> "better" / "worse";
- not significant, but the unadjusted CI excludes 0 -> "not significant after testing m
  metrics" (the CI alone would call it a difference; the correction for testing m metrics
  does not);
- not significant, and the questions are too few for a realistic difference to be found ->
  "too few questions", with the minimum detectable effect at this n and number of tests;
- otherwise -> "no significant difference", with the smallest Δ this n could have detected.

Minimum detectable effect (MDE), two-sided, at Holm's strictest level α/m and 80% power, from
the paired differences' standard deviation s: (z(1 − α/2m) + z(0.8)) · s / √n. "Too few" means
either that no outcome at all could reach α/m (the exact tests' smallest p-value at n pairs,
2·0.5^n, or 1/(1 + permutations) for the Monte Carlo test, is not below α/m), or that the MDE is
at least half the observed range of the metric's values (only a difference of half the scale
would have been found).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from evalcore.analysis.labels.judge_labels import judges_text
from evalcore.stats.normal import two_sided_z, upper_z_of_log_tail
from evalcore.stats.resample import DEFAULT_PERM, EXACT_MAX_N

EPS = 1e-12
POWER = 0.8
# The dashboard's default set of tested metrics, and `evalcore compare`'s without --metrics.
N_DEFAULT_TESTED = 4
NOT_COMPARED = "not compared"
OUTCOMES = ("better", "worse", "not significant", "too few questions", "no significant difference", NOT_COMPARED)


def min_p_value(n_pairs: int, n_perm: int = DEFAULT_PERM) -> float:
    """The smallest two-sided p-value the paired tests can return on n pairs (every pair
    different, all the same way): 2·0.5^n for the exact tests, 1/(1 + n_perm) for the seeded
    Monte Carlo randomization test used above EXACT_MAX_N non-zero differences."""
    if n_pairs <= 0:
        return 1.0
    exact = min(1.0, 2.0 * 0.5 ** n_pairs)
    return exact if n_pairs <= EXACT_MAX_N else max(exact, 1.0 / (1 + n_perm))


def minimum_detectable_effect(sd_diff: float, n_pairs: int, n_tests: int, alpha: float = 0.05,
                              power: float = POWER) -> float:
    """|Δ| a paired test finds with `power` at Holm's strictest level α/m (normal approximation)."""
    if n_pairs < 2 or not sd_diff == sd_diff:
        return math.nan
    # the level's quantile from its logarithm: 1 - alpha/2m rounds to 1.0 for a tiny alpha
    return (two_sided_z(alpha, n_tests) + upper_z_of_log_tail(math.log1p(-power))) * sd_diff / math.sqrt(n_pairs)


def scored_on_all(store: Any, keys: Sequence[str]) -> list[str]:
    """Metrics with at least one value (not NaN) for every system (`run_id:method`), from the
    run summaries, sorted."""
    from evalcore.store import query_df

    runs = sorted({k.partition(":")[0] for k in keys})
    rows = query_df(store, """SELECT run_id || ':' || method AS system, metric FROM summary_metrics
                        WHERE n_scored > 0 AND list_contains($k, run_id || ':' || method)""",
              {"k": list(keys)}, runs=runs)
    per = rows.groupby("metric")["system"].nunique()
    return sorted(per[per == len(set(keys))].index)


def default_tested_metrics(store: Any, keys: Sequence[str]) -> list[str]:
    """The metrics a comparison tests unless told otherwise (the Compare page's default and
    `evalcore compare` without --metrics): the first few of the leaderboard's key metrics scored
    on every system, else the most important metrics scored on every system. Few on purpose:
    Holm over 45 metrics at n = 10 makes nothing significant."""
    from evalcore.analysis.runs.leaderboard import key_metric_names
    from evalcore.analysis.questions.question_drilldown import metric_order

    have = scored_on_all(store, keys)
    picked = [m for m in key_metric_names() if m in set(have)][:N_DEFAULT_TESTED]
    return picked or metric_order(have)[:N_DEFAULT_TESTED]


def _outcome(r: Any, n_tests: int, alpha: float) -> tuple[str, float]:
    p = r.p_holm
    hib = bool(r.higher_is_better)
    gained = (r.delta > 0) if hib else (r.delta < 0)
    if p < alpha and r.delta == r.delta and abs(r.delta) > EPS:
        return ("better" if gained else "worse"), math.nan
    n = int(r.n_pairs)
    mde = minimum_detectable_effect(getattr(r, "sd_diff", math.nan), n, n_tests, alpha)
    span = getattr(r, "span", math.nan)
    if min_p_value(n) >= alpha / max(1, n_tests) or (mde == mde and span == span and span > EPS
                                                       and mde >= 0.5 * span):
        return "too few questions", mde
    excludes_zero = r.ci_low == r.ci_low and (r.ci_low > EPS or r.ci_high < -EPS)
    return ("not significant" if excludes_zero else "no significant difference"), mde


def _tested(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a verdict speaks about: those marked `tested` (the Compare page's table lists
    every metric, tested or not), else every compared row with a Holm p and every row on 0 pairs
    (`compare`'s table holds the tested metrics only; an untested row has no Holm p)."""
    if "p_holm" not in table:
        return table.iloc[0:0]
    if "tested" in table:
        return table[table["tested"].astype(bool)]
    return table[table["p_holm"].notna() | (table["n_pairs"] == 0)]


def _not_compared_text(r: Any, way: str) -> str:
    a, b = getattr(r, "n_baseline", None), getattr(r, "n_candidate", None)
    counts = (f" (values: baseline {int(a)}, candidate {int(b)})"
              if a is not None and b is not None and a == a and b == b else "")
    return (f"{r.metric}: not compared ({way}) · no question has a value on both sides{counts} · n = 0, "
            "so nothing can be said about this metric")


def verdict_lines(table: pd.DataFrame, base_name: str, cand_name: str, alpha: float = 0.05,
                  judged: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One sentence per tested metric of a pair table: the outcome (see the module docstring)
    and the words, Δ with its CI, Holm p and n, in the metric's direction, ending in who judged
    the metric's values when `judged` (pair_judges) names someone: every surface prints the
    sentence whole. A metric on 0 pairs is "not compared" and is not counted among the m
    metrics Holm tested."""
    tested = _tested(table)
    m = int((tested["n_pairs"] > 0).sum())
    judged = judged or {}
    rows = []
    for r in tested.itertuples():
        who = judged.get(r.metric) or ""
        text, outcome, mde = _sentence(r, m, alpha, base_name, cand_name)
        rows.append({"metric": r.metric, "outcome": outcome, "verdict": text + (f" · judged by {who}" if who else ""),
                     "mde": mde, "judged_by": who})
    return pd.DataFrame(rows, columns=["metric", "outcome", "verdict", "mde", "judged_by"])


def _sentence(r: Any, m: int, alpha: float, base_name: str, cand_name: str) -> tuple[str, str, float]:
    """(the sentence, the outcome, the MDE) of one tested row; `m` metrics were tested."""
    way = "higher is better" if r.higher_is_better else "lower is better"
    if int(r.n_pairs) == 0:
        return _not_compared_text(r, way), NOT_COMPARED, math.nan
    outcome, mde = _outcome(r, m, alpha)
    gained = (r.delta > 0) if r.higher_is_better else (r.delta < 0)
    winner, loser = (cand_name, base_name) if gained else (base_name, cand_name)
    ci = f"95% CI [{r.ci_low:+.3g}, {r.ci_high:+.3g}]" if r.ci_low == r.ci_low else "no CI (n < 2)"
    tail = f"Δ {r.delta:+.3g}, {ci} · Holm p = {r.p_holm:.2g} · n = {int(r.n_pairs)}"
    tests = f"{m} metric{'s' if m != 1 else ''}"
    # the finding and its numbers first (a narrow column shows the start), the caveat last
    if outcome in ("better", "worse"):
        text = f"{r.metric}: {winner} is better than {loser} by {abs(r.delta):.3g} ({way}) · {tail}"
    elif outcome == "not significant":
        text = (f"{r.metric}: not significant after testing {tests} ({way}) · {tail} · the unadjusted CI "
                f"excludes 0 ({winner} ahead), Holm's correction for {tests} does not")
    elif outcome == "too few questions":
        text = f"{r.metric}: too few questions to tell ({way}) · {tail} · {_why_not_found(r, mde, m, alpha)}"
    else:
        text = f"{r.metric}: no significant difference ({way}) · {tail} · {_why_not_found(r, mde, m, alpha)}"
    return text, outcome, mde


def _why_not_found(r: Any, mde: float, m: int, alpha: float) -> str:
    """Why a Δ was not called a difference, in the reason that decided it: no p at this n could
    reach α/m (the exact tests' floor); or the smallest Δ found with 80% power (the MDE), with
    "half the range the values span" when that is what made the questions too few; and when the
    observed Δ is beyond the MDE, that its Holm p still is not below α (the test decides, not
    the normal approximation behind the MDE)."""
    n = int(r.n_pairs)
    floor = min_p_value(n)
    if floor >= alpha / max(1, m):
        return (f"at n = {n} the smallest p any result could reach, {floor:.2g}, is not below "
                f"α/{m} = {alpha / max(1, m):.2g}, so no difference could be called significant")
    if mde == 0 and abs(r.delta) <= EPS:
        return "the same value on every paired question"
    if mde != mde:
        return f"at n = {n} no difference can be detected"
    tests = f"{m} metric{'s' if m != 1 else ''}"
    text = f"at n = {n} with {tests} tested only |Δ| ≥ {mde:.3g} is detectable (80% power)"
    spread = getattr(r, "span", math.nan)
    if spread == spread and spread > EPS and mde >= 0.5 * spread:
        text += f", at least half the range the values span ({spread:.3g})"
    if abs(r.delta) >= mde:
        text += f"; this Δ is that large, but its Holm p, {r.p_holm:.2g}, is not below α = {alpha:.2g}"
    return text


def verdict_summary(lines: pd.DataFrame, table: pd.DataFrame, base_name: str, cand_name: str) -> str:
    """The one line a comparison opens with: "X is better than Y on 2 of 4 tested metrics and
    worse on none, n = 40" (n = the most paired questions of any tested metric, and the smaller
    n of the metrics with fewer: "n = 40 (34 for 2 of them)"); metrics on 0 pairs are counted
    apart ("1 not compared"), and when every one is, it says so first."""
    skipped = int((lines["outcome"] == NOT_COMPARED).sum()) if len(lines) else 0
    m = len(lines) - skipped
    if m == 0 and skipped == 0:
        return f"{cand_name} against {base_name}: no metric tested"
    if m == 0:
        return (f"{cand_name} against {base_name}: nothing compared — {skipped} tested metric"
                f"{'s' if skipped != 1 else ''} not compared (no question has a value on both sides)")
    tested = table[table["metric"].isin(set(lines["metric"]))]
    pairs = [int(k) for k in tested["n_pairs"] if k > 0]
    n = max(pairs, default=0)
    fewer = sorted({k for k in pairs if k < n}, reverse=True)  # metrics some answers lack a value of
    if fewer:
        k = sum(1 for x in pairs if x < n)
        n = f"{n} ({', '.join(map(str, fewer))} for {'one' if k == 1 else k} of them)"

    def count(outcome: str) -> str:
        k = int((lines["outcome"] == outcome).sum())
        return "none" if k == 0 else str(k)

    text = (f"{cand_name} is better than {base_name} on {count('better')} of {m} tested metric"
            f"{'s' if m != 1 else ''} and worse on {count('worse')}, n = {n}")
    extra = []
    for outcome, words in (("not significant", "not significant after testing"),
                           ("too few questions", "too few questions to tell"),
                           (NOT_COMPARED, "not compared (no question with a value on both sides)")):
        k = int((lines["outcome"] == outcome).sum())
        if k:
            extra.append(f"{k} {words}" + (f" {m} metrics" if outcome == "not significant" else ""))
    return text + (f" ({'; '.join(extra)})" if extra else "")


# ---- are the two systems comparable as scored? ---------------------------------------------
# Options that change how a pass runs, not what it computes (the judge is compared by the judge
# ids of the stored values instead). judge_repeats: K verdicts per answer change how precisely a
# value is known, not what it estimates (the mean verdict), and compare's CIs carry the difference.
# judge_calls: which prompts asked the judge, named by the values' judge ids (compared above).
_NOT_SCORING = {"judge", "progress", "judge_concurrency", "judge_update_manifest", "judge_record_claims",
                "judge_repeats", "judge_calls"}


def _scoring_options(manifest: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """The options of the latest scoring pass that scored `metric`."""
    for entry in reversed((manifest.get("config") or {}).get("scoring") or []):
        if metric in (entry.get("metrics") or []):
            return {k: v for k, v in (entry.get("options") or {}).items() if k not in _NOT_SCORING}
    return None


def _side_judges(judges: pd.DataFrame, system: str, metric: str) -> list[str]:
    return sorted(judges[(judges.system == system) & (judges.metric == metric)].judge_id)


def judges_of_pair(judges: pd.DataFrame, base: str, cand: str, metric: str) -> str:
    """Who judged `metric`'s values of the pair, in words ('' when neither side was judged):
    the judge when both sides had the same ones (`anthropic:claude-haiku-4-5`, a sampling judge
    with its temperature, `openai-compatible:m[t=1]`), else each side's, so a comparison of two
    judges never passes for a comparison of two systems: "X on the baseline, Y on the
    candidate" (full ids when the two differ only in their prompt or its version)."""
    a, b = _side_judges(judges, base, metric), _side_judges(judges, cand, metric)
    if a == b:
        return judges_text(a)
    said_a, said_b = judges_text(a), judges_text(b)
    if said_a == said_b:  # the same model, another prompt or prompt version
        said_a, said_b = ", ".join(a), ", ".join(b)
    return f"{said_a or 'no judge recorded'} on the baseline, {said_b or 'no judge recorded'} on the candidate"


def pair_judges(store: Any, base: str, cand: str, metrics: Sequence[str]) -> dict[str, str]:
    """metric -> judges_of_pair for each of `metrics` (the Compare page's table column, and the
    end of each verdict sentence)."""
    from evalcore.analysis.runs.means import metric_judges

    judges = metric_judges(store, (base, cand), tuple(metrics))
    return {m: judges_of_pair(judges, base, cand, m) for m in metrics}


def comparability(store: Any, base: str, cand: str, metrics: Sequence[str],
                  judges: pd.DataFrame | None = None) -> list[str]:
    """Why `base` and `cand` (`run_id:method`) may not be comparable as scored, one sentence each:
    different judges (or prompt versions) for a judged metric, different dataset fingerprints or
    question sets, different scoring options. A change of judge is not a change of system.
    `judges`: metric_judges' rows of the pair, when the caller has read them already."""
    from evalcore.analysis.runs.means import metric_judges
    from evalcore.store import query_df

    ra, rb = base.partition(":")[0], cand.partition(":")[0]
    out: list[str] = []
    judges = metric_judges(store, (base, cand), tuple(metrics)) if judges is None else judges
    for metric in metrics:
        a, b = _side_judges(judges, base, metric), _side_judges(judges, cand, metric)
        if a != b:
            out.append(f"{metric} was judged differently: baseline by {', '.join(a) or 'no judge'}, "
                       f"candidate by {', '.join(b) or 'no judge'} — a change of judge or prompt is not a "
                       f"change of system")
    runs = query_df(store, "SELECT run_id, dataset, dataset_fingerprint, manifest FROM runs WHERE list_contains($r, run_id)",
              {"r": sorted({ra, rb})}, runs=sorted({ra, rb})).set_index("run_id")
    if ra != rb and ra in runs.index and rb in runs.index:
        fa, fb = runs.loc[ra, "dataset_fingerprint"], runs.loc[rb, "dataset_fingerprint"]
        if isinstance(fa, str) and isinstance(fb, str) and fa != fb:
            out.append(f"different datasets: baseline {runs.loc[ra, 'dataset']} ({fa[:12]}), "
                       f"candidate {runs.loc[rb, 'dataset']} ({fb[:12]})")
        man_a, man_b = json.loads(runs.loc[ra, "manifest"]), json.loads(runs.loc[rb, "manifest"])
        differing: dict[str, list[str]] = {}  # option -> metrics whose scoring passes differ in it
        for metric in metrics:
            oa, ob = _scoring_options(man_a, metric), _scoring_options(man_b, metric)
            if oa is not None and ob is not None:
                for k in sorted(k for k in set(oa) | set(ob) if oa.get(k) != ob.get(k)):
                    differing.setdefault(k, []).append(metric)
        for k, names in differing.items():
            out.append(f"scored with a different {k!r} option (the passes that scored {', '.join(names)})")
    only_a, only_b, shared = _question_overlap(store, base, cand)
    if only_a or only_b:
        out.append(f"different question sets: {only_a} only in baseline, {only_b} only in "
                   f"candidate ({shared} shared, compared on those)")
    return out


def _question_overlap(store: Any, base: str, cand: str) -> tuple[int, int, int]:
    """(questions only `base` answered, only `cand` answered, both answered), counted in SQL:
    two sets of 100,000 ids built in Python took a quarter of a second."""
    from evalcore.schemas.ids import id_sql
    from evalcore.store import query_df

    ra, _, ma = base.partition(":")
    rb, _, mb = cand.partition(":")
    qid = id_sql("question_id")  # as the pairs are compared (evalcore.schemas.ids)
    row = query_df(store, f"""
        WITH a AS (SELECT DISTINCT {qid} AS question_id FROM responses WHERE run_id = $ra AND method = $ma),
             b AS (SELECT DISTINCT {qid} AS question_id FROM responses WHERE run_id = $rb AND method = $mb)
        SELECT count(*) FILTER (WHERE b.question_id IS NULL) AS only_a,
               count(*) FILTER (WHERE a.question_id IS NULL) AS only_b,
               count(a.question_id) FILTER (WHERE b.question_id IS NOT NULL) AS shared
        FROM a FULL JOIN b ON a.question_id = b.question_id""",
        {"ra": ra, "ma": ma, "rb": rb, "mb": mb}, runs=sorted({ra, rb})).iloc[0]
    return int(row["only_a"]), int(row["only_b"]), int(row["shared"])


def span(a: np.ndarray, b: np.ndarray) -> float:
    """The observed range of a metric's values on both sides (the scale the MDE is read on)."""
    both = np.concatenate([a, b])
    return float(both.max() - both.min()) if both.size else math.nan


@dataclass(frozen=True)
class PairVerdict:
    """What a comparison of one candidate with its baseline concludes, as every surface shows it
    (the terminal, --json, the Compare page, the reports and the gate render this, never a verdict
    of their own): one sentence per tested metric, the headline, and why the two may not be
    comparable as scored."""

    lines: pd.DataFrame
    summary: str
    warnings: tuple[str, ...]


def pair_verdict(store: Any, rows: pd.DataFrame, base: str, cand: str, base_name: str, cand_name: str,
                 alpha: float = 0.05) -> PairVerdict:
    """THE verdict of `cand` against `base` (`run_id:method`) over a comparison's rows of that
    pair (`compare`'s table, or the Compare page's `pair_table`, which marks its tested rows)."""
    from evalcore.analysis.runs.means import metric_judges

    tested = list(_tested(rows).metric)
    judges = metric_judges(store, (base, cand), tuple(tested))
    judged = {m: judges_of_pair(judges, base, cand, m) for m in tested}
    lines = verdict_lines(rows, base_name, cand_name, alpha, judged)
    return PairVerdict(lines, verdict_summary(lines, rows, base_name, cand_name),
                       tuple(comparability(store, base, cand, tested, judges)))
