"""The one label vocabulary: grade bands cut exactly at their boundaries, verdict words map once."""

from __future__ import annotations

import pytest

from evalcore.metrics.judged.graded import WEIGHTS, grade
from evalcore.schemas.labels import GRADE_BANDS, Grade, grade_for


def test_twenty_exactly_is_a_d_not_an_e():
    weighted = sum(v * WEIGHTS[k] for k, v in {"correctness": 0, "completeness": 62, "consistency": 7}.items())
    assert weighted < 20.0  # floating point lands a hair below the band...
    assert grade(weighted) == "D"  # ...and the grade still says D, as 0/62/7 is exactly 20


def test_every_integer_triple_gets_the_exact_band():
    """All judge sub-scores on the 0-100 integer grid: ten times the weighted score is the integer
    5c + 3k + 2s, so the exact band is known; the grade must equal it for every triple (before
    the rounding fix, 240 triples on a boundary got a letter too low)."""
    letters = [g.value for _, g in GRADE_BANDS]
    wrong = []
    for c in range(101):
        for k in range(101):
            for s in range(101):
                tenths = 5 * c + 3 * k + 2 * s
                exact = next((letters[i] for i, (floor, _) in enumerate(GRADE_BANDS) if tenths >= 10 * floor), "E")
                weighted = c * WEIGHTS["correctness"] + k * WEIGHTS["completeness"] + s * WEIGHTS["consistency"]
                if tenths % 10 == 0 and grade(weighted) != exact:
                    wrong.append((c, k, s))
                elif tenths % 10 and abs(tenths - round(tenths, -1)) <= 1 and grade(weighted) != exact:
                    wrong.append((c, k, s))
    assert wrong == [], f"{len(wrong)} triples misgraded, e.g. {wrong[:5]}"


@pytest.mark.parametrize("score, letter", [(80, Grade.A), (79.9999999, Grade.A), (79.99, Grade.B), (0, Grade.E),
                                           (100, Grade.A), (19.99999, Grade.E)])
def test_grade_for_bands(score, letter):
    assert grade_for(score) == letter
