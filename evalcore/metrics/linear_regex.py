"""Regex search in linear time (RE2) for patterns that come with the data.

Why: a `regex` check's pattern is written by whoever wrote the question file, and Python's
`re` backtracks: `^(a+)+$` against `"a" * 34 + "!"` takes longer than the universe has left,
and scoring hung on it. RE2 (google-re2) matches in time linear in the text for every
pattern it accepts, so no pattern and no answer can stall scoring. What RE2 does not accept
(back-references, look-around, atomic groups, possessive quantifiers, verbose mode) cannot
be matched in linear time: such a check is reported as unrunnable (NaN with the reason),
never run slowly.

Patterns are written in Python's syntax and keep Python's meaning where RE2's differs:
  \\d \\D \\w \\W \\s \\S  Unicode (RE2's are ASCII-only): rewritten to Unicode property
                     classes (\\W and \\S inside `[...]` cannot be and are refused);
  \\Z                end of text (RE2 spells it \\z); \\uXXXX and \\UXXXXXXXX are rewritten too;
  \\b \\B             RE2's word boundary knows ASCII words only; on an answer with non-ASCII
                     letters or digits it would silently differ from Python's, so that case
                     is refused with a reason (write the boundary out, e.g. `(?:^|\\W)word`).
Matching is case-insensitive (Unicode simple case folding).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

try:
    import re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; guarded for a broken install
    re2 = None  # type: ignore[assignment]

_SPACE = r"\t-\r\x{1c}-\x{20}\x{85}\p{Z}"  # Python's str.isspace()
_WORD = r"\p{L}\p{N}_"  # Python's str.isalnum() or "_"
# escape letter -> (outside a [...] set, inside one; None = cannot be said inside a set)
_REWRITE = {
    "d": (r"\p{Nd}", r"\p{Nd}"), "D": (r"\P{Nd}", r"\P{Nd}"),
    "w": (f"[{_WORD}]", _WORD), "W": (f"[^{_WORD}]", None),
    "s": (f"[{_SPACE}]", _SPACE), "S": (f"[^{_SPACE}]", None),
    "Z": (r"\z", None),
}


class PatternUnsupported(ValueError):
    """The pattern cannot be run in linear time; the message says why, for a NaN reason."""


@dataclass(frozen=True)
class LinearPattern:
    source: str
    compiled: object
    ascii_boundary: bool  # uses \b or \B, whose RE2 meaning is ASCII-only

    def search(self, text: str) -> str | None:
        """The first match's text, or None. Raises PatternUnsupported when the answer would
        make RE2's ASCII word boundary differ from Python's."""
        if self.ascii_boundary and any(not c.isascii() and (c.isalnum() or c == "_") for c in text):
            raise PatternUnsupported(
                f"pattern {self.source!r} uses \\b or \\B, which RE2 (the linear-time engine) applies "
                f"to ASCII words only, and this answer has non-ASCII letters or digits; write the "
                f"boundary out, e.g. (?:^|\\W)word(?:\\W|$)")
        match = self.compiled.search(text)
        return match.group(0) if match is not None else None


def _translate(pattern: str) -> tuple[str, bool]:
    """Python regex syntax -> RE2 syntax with Python's meaning (see the module docstring)."""
    out: list[str] = []
    in_set = False
    set_start = -1  # index in `pattern` where the current set's items begin
    boundary = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e in _REWRITE:
                outside, inside = _REWRITE[e]
                if in_set and inside is None:
                    raise PatternUnsupported(f"\\{e} inside [...] is not supported by the linear-time "
                                             f"engine; list the characters instead")
                out.append(inside if in_set else outside)
            elif e in "uU":
                width = 4 if e == "u" else 8
                digits = pattern[i + 2:i + 2 + width]
                if len(digits) != width or any(ch not in "0123456789abcdefABCDEF" for ch in digits):
                    raise PatternUnsupported(f"bad \\{e} escape at position {i}")
                out.append(f"\\x{{{digits}}}")
                i += 2 + width
                continue
            else:
                if e in "bB" and not in_set:
                    boundary = True
                out.append(c + e)
            i += 2
            continue
        if in_set:
            if c == "]" and i > set_start:
                in_set = False
        elif c == "[":
            in_set = True
            set_start = i + 1
            if pattern[set_start:set_start + 1] == "^":
                set_start += 1
        out.append(c)
        i += 1
    return "".join(out), boundary


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> LinearPattern:
    """Compile a check's pattern for RE2, case-insensitive; PatternUnsupported says why not."""
    if re2 is None:
        raise PatternUnsupported("the linear-time regex engine (google-re2) is not installed: "
                                 "pip install google-re2")
    translated, boundary = _translate(pattern)
    options = re2.Options()
    options.log_errors = False  # the reason goes into the metric, not onto stderr
    options.case_sensitive = False
    try:
        compiled = re2.compile(translated, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternUnsupported(f"pattern {pattern!r} uses a feature RE2, the linear-time engine, "
                                 f"does not support ({detail}); back-references, look-around, atomic "
                                 f"groups and possessive quantifiers cannot be matched in linear time") from None
    return LinearPattern(pattern, compiled, boundary)
