"""Per-question declarative checks (EvalQuestion.checks) and the optional `is_correct_rule`.

Why: the seeds hard-coded checks per question id (EF_1 list coverage, EF_2 fact flags, EF_3
"has $604 and not 'cannot calculate'"). Here the question carries the checks as data, so a
new question needs no code. Check types (see schemas.dataset.Check):

  contains / not_contains  the value is (not) in the answer (Unicode-normalised, word edges)
  contains_any             any of `values` is in the answer
  regex                    regex (Python syntax) searched in the NFKC-normalised answer, case-
                           insensitive, by RE2 in linear time (metrics/linear_regex.py): a pattern
                           RE2 cannot run makes both metrics NaN with the reason, never a hang
  number                   some number in the answer equals `number` within `tolerance`
  list_coverage            fraction of `values` present >= `min_fraction`

`is_correct_rule` is a boolean expression over check names with `and`, `or`, `not`,
parentheses and `all` (= every check passed), e.g. "has_604 and not cannot_calculate".
It is parsed by a tiny recursive-descent parser, never eval(). Unnamed checks are named
"<type>_<position>" (1-based), e.g. "contains_1".

Metrics:
  checks_pass   the rule's value if a rule is set, else 1 if every check passed
  checks_score  fraction of checks that passed (the seeds' EF_2 "fact_score")
"""

from __future__ import annotations

import math
import re
import unicodedata

from evalcore.metrics.base import ANSWER_QUALITY, MetricSpec, Score, per_item
from evalcore.metrics.linear_regex import PatternUnsupported, compile_pattern
from evalcore.metrics.text import find, normalize, numbers_equal, parse_numbers
from evalcore.schemas import Check, EvalQuestion, EvalResponse


class RuleError(ValueError):
    """An is_correct_rule that does not parse or names an unknown check."""


class CheckUnrunnable(ValueError):
    """A check that cannot give a pass/fail (a regex the linear-time engine refuses)."""


def check_name(check: Check, position: int) -> str:
    return check.name or f"{check.type}_{position}"


def run_check(check: Check, answer: str) -> tuple[bool, dict]:
    """(passed, details) for one check against the raw answer text."""
    norm = normalize(answer)
    if check.type == "contains":
        return find(norm, check.value or ""), {}
    if check.type == "not_contains":
        return not find(norm, check.value or ""), {}
    if check.type == "contains_any":
        hits = [v for v in check.values if find(norm, v)]
        return bool(hits), {"hits": hits}
    if check.type == "regex":
        text = unicodedata.normalize("NFKC", answer or "")
        try:
            match = compile_pattern(check.value or "").search(text)
        except PatternUnsupported as exc:
            raise CheckUnrunnable(str(exc)) from None
        return match is not None, {"match": match}
    if check.type == "number":
        found = parse_numbers(answer)
        target = float(check.number)  # validated non-None by the schema
        ok = any(numbers_equal(x, target, check.tolerance) for x in found)
        return ok, {"numbers_found": found[:20]}
    if check.type == "list_coverage":
        hits = [v for v in check.values if find(norm, v)]
        fraction = len(hits) / len(check.values)
        return fraction >= check.min_fraction, {"fraction": fraction, "missing": [v for v in check.values if v not in hits]}
    raise ValueError(f"unknown check type {check.type!r}")


_TOKEN_RE = re.compile(r"\s*(\(|\)|[A-Za-z_][A-Za-z0-9_-]*)")


def _lex(rule: str) -> list[str]:
    tokens, pos = [], 0
    rule = rule.strip()
    while pos < len(rule):
        m = _TOKEN_RE.match(rule, pos)
        if not m:
            raise RuleError(f"cannot parse is_correct_rule {rule!r} at position {pos}")
        tokens.append(m.group(1))
        pos = m.end()
        while pos < len(rule) and rule[pos].isspace():
            pos += 1
    return tokens


def evaluate_rule(rule: str, results: dict[str, bool]) -> bool:
    """Evaluate `rule` over named check results. Grammar:
    expr := term ('or' term)* ; term := factor ('and' factor)* ;
    factor := 'not' factor | '(' expr ')' | 'all' | NAME"""
    tokens = _lex(rule)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise RuleError(f"is_correct_rule {rule!r} ends too early")
        pos += 1
        return tokens[pos - 1]

    def expr() -> bool:
        value = term()
        while peek() == "or":
            take()
            value = term() or value
        return value

    def term() -> bool:
        value = factor()
        while peek() == "and":
            take()
            value = factor() and value
        return value

    def factor() -> bool:
        tok = take()
        if tok == "not":
            return not factor()
        if tok == "(":
            value = expr()
            if take() != ")":
                raise RuleError(f"is_correct_rule {rule!r}: missing ')'")
            return value
        if tok == "all":
            return all(results.values())
        if tok in ("and", "or", ")"):
            raise RuleError(f"is_correct_rule {rule!r}: unexpected {tok!r}")
        if tok not in results:
            raise RuleError(f"is_correct_rule {rule!r} names unknown check {tok!r}; "
                            f"checks: {', '.join(results) or '(none)'}")
        return results[tok]

    value = expr()
    if pos != len(tokens):
        raise RuleError(f"is_correct_rule {rule!r}: unexpected {tokens[pos]!r}")
    return value


def run_checks(q: EvalQuestion, answer: str) -> dict[str, tuple[bool, dict]]:
    """Every check's (passed, details); CheckUnrunnable names the check that cannot run."""
    results = {}
    for i, c in enumerate(q.checks, start=1):
        name = check_name(c, i)
        try:
            results[name] = run_check(c, answer)
        except CheckUnrunnable as exc:
            raise CheckUnrunnable(f"check {name!r}: {exc}") from None
    return results


def _checks_pass(q: EvalQuestion, r: EvalResponse) -> Score:
    if not q.checks and not q.is_correct_rule:
        return Score.nan("no checks on this question")
    try:
        results = run_checks(q, r.answer)
    except CheckUnrunnable as exc:
        return Score.nan(str(exc))
    passed = {name: ok for name, (ok, _) in results.items()}
    details = {"checks": {name: {"pass": ok, **d} for name, (ok, d) in results.items()}}
    if q.is_correct_rule:
        try:
            value = evaluate_rule(q.is_correct_rule, passed)
        except RuleError as exc:
            return Score.nan(str(exc))
        return Score(float(value), details={**details, "rule": q.is_correct_rule})
    return Score(float(all(passed.values())), details=details)


def _checks_score(q: EvalQuestion, r: EvalResponse) -> Score:
    if not q.checks:
        return Score.nan("no checks on this question")
    try:
        results = run_checks(q, r.answer)
    except CheckUnrunnable as exc:
        return Score.nan(str(exc))
    passed = [ok for ok, _ in results.values()]
    return Score(sum(passed) / len(passed),
                 details={"passed": [n for n, (ok, _) in results.items() if ok],
                          "failed": [n for n, (ok, _) in results.items() if not ok]})


def zero_on_error(fn):
    """A failed response gave no answer: whatever text it carries scores 0 (when the metric
    applies at all); details keep the error kind and what the text would have scored."""
    def wrapped(q: EvalQuestion, r: EvalResponse) -> Score:
        score = fn(q, r)
        if r.error is None or math.isnan(score.value) or score.value == 0.0:
            return score
        return Score(0.0, details={**score.details, "target_error": r.error_kind,
                                   "text_would_score": score.value})
    return wrapped


SPECS = [
    MetricSpec("checks_pass", "lexical", per_item(zero_on_error(_checks_pass)), needs=frozenset({"checks"}), binary=True,
               description="1 if the question's is_correct_rule holds (else: every check passes).",
               importance=(ANSWER_QUALITY, 6), decides_correct=3),
    MetricSpec("checks_score", "lexical", per_item(zero_on_error(_checks_score)), needs=frozenset({"checks"}),
               description="Fraction of the question's checks that pass."),
]
