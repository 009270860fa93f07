"""`regex` checks run in linear time (RE2, evalcore/metrics/linear_regex.py).

Before: `^(a+)+$` against "a" * 34 + "!" backtracked for hours and scoring hung. The hang test
runs in a subprocess with a generous ceiling, so a regression fails instead of stalling the
suite. Patterns RE2 refuses give NaN with the reason; the shorthand classes keep Python's
Unicode meaning (checked against `re` on inputs where backtracking is harmless).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from evalcore.metrics.base import ScoringContext
from evalcore.metrics.checks import SPECS
from evalcore.metrics.linear_regex import compile_pattern
from evalcore.schemas import EvalQuestion, EvalResponse

ROOT = Path(__file__).resolve().parents[2]
BY_NAME = {s.name: s for s in SPECS}


def _score(name: str, pattern: str, answer: str):
    q = EvalQuestion(id="q", question="?", checks=[{"type": "regex", "name": "rx", "value": pattern}])
    r = EvalResponse(question_id="q", method="m", answer=answer)
    return BY_NAME[name].compute([(q, r)], ScoringContext(run_id="t"))[0]


def test_catastrophic_pattern_does_not_hang_scoring():
    code = ("from evalcore.metrics.checks import SPECS\n"
            "from evalcore.metrics.base import ScoringContext\n"
            "from evalcore.schemas import EvalQuestion, EvalResponse\n"
            "q = EvalQuestion(id='q', question='?', checks=[{'type': 'regex', 'value': '^(a+)+$'}])\n"
            "r = EvalResponse(question_id='q', method='m', answer='a' * 34 + '!')\n"
            "for spec in SPECS:\n"
            "    print(spec.name, spec.compute([(q, r)], ScoringContext(run_id='t'))[0].value)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)  # a ceiling against a hang; it takes well under a second
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["checks_pass", "0.0", "checks_score", "0.0"]


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)a", r"(?<!b)a", r"(?>a+)b", r"a++", r"(?x) a"])
def test_patterns_re2_cannot_run_are_nan_with_the_reason(pattern):
    for name in ("checks_pass", "checks_score"):
        score = _score(name, pattern, "aa")
        assert math.isnan(score.value)
        assert "check 'rx'" in score.reason and "linear-time" in score.reason, score.reason


def test_unicode_word_boundary_is_refused_only_where_it_would_differ():
    assert _score("checks_pass", r"\bfoo\b", "a foo b").value == 1.0
    assert _score("checks_pass", r"\bfoo\b", "a food b").value == 0.0
    korean = _score("checks_pass", r"\b604\b", "보험료는 604 달러")
    assert math.isnan(korean.value) and "\\b" in korean.reason


@pytest.mark.parametrize("pattern", [
    r"\d+", r"\w+원", r"[\w-]+", r"\s+\S+", r"\D+", r"^\w+$", r"(×|\*|multipl)", r"café", r"[^\d\s]+",
    r"x\Z", r"\u00e9+", r"(?P<n>\d{3})", r"[]a]+", r"a.c", r"(?i)ABC", r"(?s)a.b",
])
@pytest.mark.parametrize("text", ["가격은 604원 입니다", "CAFÉ ١٢٣ ok_x", "a\u3000b\u2028c", "abx", "]a]é a\nb ABC"])
def test_same_matches_as_python_re(pattern, text):
    text = unicodedata.normalize("NFKC", text)
    want = re.search(pattern, text, flags=re.IGNORECASE)
    assert compile_pattern(pattern).search(text) == (want.group(0) if want else None)
