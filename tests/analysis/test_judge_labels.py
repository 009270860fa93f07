"""The short judge label: one home for "who judged" in a few words (Runs, Questions)."""

from __future__ import annotations

import math

from evalcore.analysis.labels.judge_labels import full_judge_ids, short_judge_label

HEUR = [f"heuristic:lexical-v3/{p}@1" for p in ("answer_class", "claims", "context_review", "grade")]
HAIKU = [f"anthropic:claude-haiku-4-5/{p}@2" for p in ("claims", "context_review")]


def test_heuristic_judge_reads_as_word_overlap():
    assert short_judge_label(HEUR) == "heuristic (word overlap)"


def test_model_judge_reads_as_the_model_name():
    assert short_judge_label(HAIKU) == "claude-haiku-4-5"


def test_several_judges_name_the_model_first_and_count_the_rest():
    assert short_judge_label(HEUR + HAIKU) == "claude-haiku-4-5 +1"


def test_stored_comma_separated_text_is_accepted():
    assert short_judge_label(", ".join(HAIKU)) == "claude-haiku-4-5"


def test_nothing_judged_gives_empty_label():
    assert short_judge_label(None) == "" and short_judge_label(math.nan) == ""  # a missing `judges` cell
    assert short_judge_label([None, "", math.nan]) == ""
    assert short_judge_label("–") == ""


def test_full_ids_are_distinct_and_sorted_one_per_line():
    assert full_judge_ids(HAIKU + HAIKU).splitlines() == sorted(HAIKU)
