"""evalcore.stats.repeats: the judge's within-answer SD, flip rate and share of a Δ's variance."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalcore.stats.repeats import Answer, delta_noise, judge_variance, within


def test_within_pools_the_answers_variances_and_counts_disagreements():
    answers = [Answer((1.0, 1.0, 1.0), ("CORRECT",) * 3), Answer((1.0, 0.0, 1.0), ("CORRECT", "WRONG", "CORRECT")),
               Answer((0.0, math.nan, 0.0), ("WRONG", None, "WRONG")), Answer((0.4, math.nan, math.nan))]
    w = within(answers)
    assert w.n_answers == 3 and w.k == 3  # the last answer has one valued repeat: it says nothing
    assert w.within_sd == pytest.approx(math.sqrt((0 + 1 / 3 + 0) / 3))
    assert w.flip_rate == pytest.approx(1 / 3)


def test_an_answer_without_two_valued_repeats_gives_nothing():
    w = within([Answer((0.5,)), Answer((math.nan, 0.2))])
    assert w.n_answers == 0 and math.isnan(w.within_sd) and math.isnan(w.flip_rate)


def test_judge_variance_uses_the_repeat_differences_when_both_sides_have_the_same_k():
    a, b = Answer((0.2, 0.4, 0.6)), Answer((0.3, 0.5, 0.7))  # repeat r of both moves together
    assert judge_variance(a, b) == pytest.approx(0.0)  # shared noise cancels in the difference
    c = Answer((0.3, 0.5))
    assert judge_variance(a, c) == pytest.approx(np.var([0.2, 0.4, 0.6], ddof=1) / 3 + np.var([0.3, 0.5], ddof=1) / 2)
    assert judge_variance(a, None) == pytest.approx(np.var([0.2, 0.4, 0.6], ddof=1) / 3)
    assert judge_variance(Answer((0.5,)), None) == 0.0  # one repeat: not measurable


def test_delta_noise_is_a_share_in_0_1_and_the_sd_of_delta_from_the_judge_alone():
    d = delta_noise([0.1, -0.1, 0.3, 0.0], [0.01, 0.01, 0.01, 0.01])
    assert d.judge_share == pytest.approx(0.01 / np.var([0.1, -0.1, 0.3, 0.0], ddof=1))
    assert d.noise_sd == pytest.approx(math.sqrt(0.01 / 4))
    assert math.isnan(delta_noise([0.1, 0.1], [0.0, 0.0]).judge_share)  # no variance to share
    assert delta_noise([0.0, 0.2], [0.5, 0.5]).judge_share == 1.0  # clipped: an estimate, never above 1
    assert math.isnan(delta_noise([0.1], [0.0]).judge_share)


def test_the_share_estimates_the_judges_part_of_the_variance_of_question_means():
    """Simulated: between-question SD 0.2, judge SD 0.3 per verdict, K = 3: the judge's part
    of Var(mean of K) is 0.09/3 / (0.04 + 0.09/3 · 2) for a Δ of two independent sides."""
    rng = np.random.default_rng(0)
    n, k = 4000, 3
    q = rng.normal(0, 0.2, n)
    a = q[:, None] + rng.normal(0, 0.3, (n, k))
    b = q[:, None] + 0.1 + rng.normal(0, 0.3, (n, k)) + rng.normal(0, 0.2, n)[:, None]
    diffs = b.mean(axis=1) - a.mean(axis=1)
    jv = [judge_variance(Answer(tuple(x)), Answer(tuple(y))) for x, y in zip(a, b)]
    expected = (2 * 0.09 / k) / (0.04 + 2 * 0.09 / k)
    assert delta_noise(diffs, jv).judge_share == pytest.approx(expected, abs=0.03)
