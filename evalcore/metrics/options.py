"""Scoring options: the settings metrics read from `ScoringContext.options`, by name.

Options reach the metrics from three places: Python (`score_run(..., options=...)`), a run
config's `score_options:` mapping, and `evalcore score --options-file FILE` / `--option KEY=VALUE`.
Why a closed list: a misspelt key (`dont_know_phrase`) would otherwise be ignored, the metric
would quietly use its default, and the user would believe the setting applied. Values are
checked by the metric that reads them (it knows their shape); the checks here are only the
ones that must happen before any work starts.
"""

from __future__ import annotations

import difflib
import math
from numbers import Real
from typing import Any, Mapping

from evalcore.errors import EvalcoreError

# key -> what it sets (the docs page that explains it is named in docs/metrics/*.md)
SCORING_OPTIONS: dict[str, str] = {
    "judge": "judge spec for judged metrics (e.g. heuristic, anthropic:MODEL)",
    "judge_concurrency": "judge requests in flight",
    "judge_update_manifest": "record the judge in the run manifest (default true)",
    "judge_record_claims": "store the judge's per-claim verdicts (default true)",
    "judge_repeats": "independent judge verdicts per judged value, K (default 1; docs/judges.md, Repeated verdicts)",
    "embedding_model": "model for semantic_similarity and embedding-based judge metrics",
    "bertscore_model": "model for BERTScore",
    "bertscore_layer": "hidden layer for BERTScore",
    "bertscore_idf": "weight BERTScore tokens by idf over the run's references",
    "bertscore_rescale": "rescale BERTScore with a baseline",
    "bertscore_baseline": "LAYER,P,R,F csv for BERTScore rescaling",
    "progress": "show progress bars",
    "match_snippets": "retrieval: an anchor with a snippet also needs the snippet in the chunk text",
    "dont_know_phrases": "abstention phrases per language, found anywhere in the answer",
    "dont_know_forms": "no-answer forms per language, counted when they are the answer",
    "negative_rules": "negative_detection rules per check type and language",
    "citation_indicators": "source indicators counted by source_citation_quality",
    "citation_indicators_for_full": "indicators needed for a full source_citation_quality score",
    "acknowledge_phrases": "phrases that acknowledge conflicting sources",
    "prices": "model prices per million tokens for cost_usd",
    "rag_model": "the answering model, when responses do not name it (for cost_usd)",
    "weights": "weighted_score objective weights",
    "objectives": "weighted_score objective definitions",
    "budgets": "weighted_score reference budgets for latency and cost",
    "overall_components": "overall_score components: name -> (metric, divisor, weight)",
    "ragas_weights": "ragas_score weights",
}

# Options whose value is a mapping of names to non-negative weights.
_WEIGHT_MAPPINGS = ("weights", "ragas_weights")


def check_options(options: Mapping[str, Any], source: str = "scoring options") -> dict[str, Any]:
    """`options` as a dict, or an EvalcoreError naming the unknown key (with the nearest known
    one) or the malformed value."""
    if not isinstance(options, Mapping):
        raise EvalcoreError(f"{source}: expected a mapping of option names to values, got {options!r}")
    for key, value in options.items():
        if key not in SCORING_OPTIONS:
            near = difflib.get_close_matches(str(key), SCORING_OPTIONS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise EvalcoreError(f"{source}: unknown option {key!r}{hint}; known: {', '.join(sorted(SCORING_OPTIONS))}")
        if key == "match_snippets" and not isinstance(value, bool):
            raise EvalcoreError(f"{source}: option 'match_snippets' must be true or false, got {value!r}")
        if key in _WEIGHT_MAPPINGS and value is not None:
            _check_weights(key, value, source)
        if key == "judge_repeats":
            check_repeats(value, source)
    return dict(options)


MAX_JUDGE_REPEATS = 50  # K verdicts cost K passes of judge calls: beyond this, a typo more likely


def check_repeats(value: Any, source: str = "judge_repeats") -> int:
    """K as a whole number 1..MAX_JUDGE_REPEATS, or one error naming the value. Why strict: a
    K of 2.5, "3" or true would otherwise be read as some other K without a word."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_JUDGE_REPEATS:
        raise EvalcoreError(f"{source}: option 'judge_repeats' (--repeats) must be a whole number from 1 to "
                            f"{MAX_JUDGE_REPEATS}, got {value!r}")
    return value


def _check_weights(key: str, value: Any, source: str) -> None:
    good = isinstance(value, Mapping) and value and all(
        isinstance(w, Real) and not isinstance(w, bool) and math.isfinite(w) and w >= 0 for w in value.values())
    if not good or sum(value.values()) <= 0:
        raise EvalcoreError(f"{source}: option {key!r} must map names to non-negative numbers with a "
                            f"positive sum, got {value!r}")


def parse_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` from the command line; VALUE is read as YAML, so `match_snippets=false`,
    `budgets={latency: 5000}` and `dont_know_phrases={en: [no idea]}` all work."""
    import yaml

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise EvalcoreError(f"--option {text!r}: expected KEY=VALUE")
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise EvalcoreError(f"--option {text!r}: the value is not valid YAML ({exc})") from exc
