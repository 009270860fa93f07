"""A number typed as text, for the bounds a gate compares with: plain decimal notation only.

Why not `float(text)`: Python's float() (and pydantic's lax parsing) read "1_0" as 10 and any
script's digits ("１" full-width, "٠.5" Arabic-Indic) as numbers. A gate bound typed as
`token_f1:1_0` became a MIN_DELTA of 10 on a 0-1 metric and switched the gate off without a
word. A bound is what a person reads in a CI file; it must mean what it looks like: ASCII
digits, one optional '.', an optional exponent, an optional sign (`0.02`, `.5`, `2e-2`,
`+1E-3`), surrounding spaces ignored. Everything else is refused.
"""

from __future__ import annotations

import re

PLAIN_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
NOTATION = "a plain decimal number (ASCII digits, one '.', an optional exponent: 0.02, .5, 2e-2)"


def plain_decimal(text: str) -> float:
    """`text` as a float when it is a plain decimal number; ValueError (saying what is
    accepted) otherwise. The value may still be infinite (1e999): finiteness is the caller's
    rule to state."""
    stripped = text.strip(" \t")
    if not PLAIN_DECIMAL.fullmatch(stripped):
        raise ValueError(f"{text!r} is not {NOTATION}")
    return float(stripped)
