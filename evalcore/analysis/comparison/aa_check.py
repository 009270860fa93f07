"""`evalcore compare RUN RUN --aa`: the Δ judge noise alone produces, a system against itself.

Why: before trusting "B is better by 0.03", a reader wants to know what a comparison of A with A
shows when only the judge changes. A run scored with `--repeats K` (K >= 2) holds K independent
judgings of the same answers, so its repeats split in two halves (repeats 0..h-1 and h..K-1,
h = K // 2) are two judgings of one system: their paired comparison, by the very statistics
`compare` uses (`tested_rows`: bootstrap CI, randomization test, Holm over the metrics), is an
A/A test. A significant Δ there is a false positive (expected in a share alpha of metrics, no
more), and the band `noise_delta` is how far judge noise alone moves a Δ between two K-repeat
judgings of these answers (analysis/comparison/judge_noise.aa_noise_band).
"""

from __future__ import annotations

from typing import Any, Sequence

from evalcore.analysis.comparison.compare import ALPHA, Selection, tested_rows
from evalcore.analysis.comparison.judge_noise import aa_noise_band, answers_of, halves, repeat_frame
from evalcore.analysis.read import sql as Q
from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import match_name
from evalcore.stats.repeats import within
from evalcore.stats.resample import DEFAULT_BOOT, DEFAULT_PERM


def aa_selections(store, refs: Sequence[str]) -> list[Selection]:
    """The distinct systems of RUN[:METHOD] refs (a run alone: each of its methods), in order;
    `compare RUN RUN --aa` names one run twice, which is one system."""
    out: list[Selection] = []
    for ref in refs:
        run_ref, _, method = ref.partition(":")
        run_id = store.resolve(run_ref)
        methods = Q.run_methods(store, run_id)
        if method:
            stored = match_name(method, methods)
            if stored is None:
                raise EvalcoreError(f"run {run_id} has no method {method!r}; it has: {', '.join(methods)}")
            chosen = [stored]
        else:
            chosen = list(methods)
        out.extend(s for s in (Selection(run_id, m) for m in chosen) if s not in out)
    return out


def aa_check(store, refs: Sequence[str], metrics: Sequence[str] | None = None, seed: int = 0,
             alpha: float = ALPHA, n_boot: int = DEFAULT_BOOT, n_perm: int = DEFAULT_PERM) -> list[dict[str, Any]]:
    """Per system and metric with repeats: the halves' paired statistics (compare's row: Δ, CI,
    p, Holm p over the system's metrics, significant) with K, the answers measured, the judge's
    within-answer SD and flip rate, and `noise_delta`. An EvalcoreError naming the system when
    it has no repeats (scored with K = 1) or a named metric has none."""
    rows: list[dict[str, Any]] = []
    for sel in aa_selections(store, refs):
        by_key = answers_of(repeat_frame(store, [sel.label], metrics))
        found = {metric: answers for (_, metric), answers in by_key.items()}
        if not found:
            raise EvalcoreError(f"{sel.label} has no repeated judge verdicts: --aa needs a run scored with "
                                "`evalcore score RUN --judge J --repeats K` (K >= 2)")
        absent = [m for m in metrics or [] if m not in found]
        if absent:
            raise EvalcoreError(f"{sel.label}: no repeated judge verdicts of {', '.join(absent)} "
                                f"(repeated: {', '.join(sorted(found))})")
        names = list(metrics) if metrics else sorted(found)
        pairs, facts = {}, {}
        for metric in names:
            first, second, k = halves(found[metric])
            if k < 2:
                raise EvalcoreError(f"{sel.label}: {metric} has one judge verdict per answer (K = 1); "
                                    "--aa needs K >= 2")
            pairs[metric] = (first, second)
            w = within(list(found[metric].values()))
            facts[metric] = {"k": k, "n_answers": w.n_answers, "within_sd": w.within_sd, "flip_rate": w.flip_rate,
                             "noise_delta": aa_noise_band(found[metric])}
        for row in tested_rows(pairs, f"{sel.label} (first half of the repeats)",
                               f"{sel.label} (second half of the repeats)", n_boot, n_perm, seed, alpha):
            rows.append({"system": sel.label, **row, **facts[row["metric"]]})
    return rows
