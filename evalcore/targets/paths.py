"""A tiny field-path evaluator for mapping foreign JSON responses onto our contract.

Why our own: a target config must say where the answer and the sources live in *any*
server's JSON (`data.sources[*].id`) without pulling in a JSONPath dependency or ever
evaluating user code. The grammar is deliberately small:

    path    := segment ("." segment)*
    segment := name ("[" index "]")*  |  "[" index "]" ...
    index   := integer (negative counts from the end) | "*" (every item)
    name    := any characters except . [ ]   (or a quoted 'name.with.dots' inside brackets)

`get_path(doc, "a.b")` returns the value or None when any step is missing; once a `[*]`
appears the result is a list (the wildcard maps over items, missing items are dropped).
The empty path "" or "$" returns the document itself.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_MISSING = object()
_TOKEN = re.compile(r"""\[\s*(?:(-?\d+)|(\*)|'([^']*)'|"([^"]*)")\s*\]|([^.\[\]]+)|(\.)""")


class PathError(ValueError):
    """A field path that does not follow the grammar above."""


@lru_cache(maxsize=512)
def parse_path(path: str) -> tuple[tuple[str, Any], ...]:
    """Split a path into steps: ("key", name) | ("index", int) | ("all", None)."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:].lstrip(".")
    steps: list[tuple[str, Any]] = []
    pos = 0
    expect_name = True
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise PathError(f"bad field path {path!r} at position {pos}")
        index, star, quoted1, quoted2, name, dot = match.groups()
        if dot:
            if expect_name:
                raise PathError(f"bad field path {path!r}: empty segment at position {pos}")
            expect_name = True
        elif name is not None:
            if not expect_name:
                raise PathError(f"bad field path {path!r}: missing '.' before {name!r}")
            steps.append(("key", name.strip()))
            expect_name = False
        elif star:
            steps.append(("all", None))
            expect_name = False
        elif index is not None:
            steps.append(("index", int(index)))
            expect_name = False
        else:
            steps.append(("key", quoted1 if quoted1 is not None else quoted2))
            expect_name = False
        pos = match.end()
    if steps and expect_name:
        raise PathError(f"bad field path {path!r}: ends with '.'")
    return tuple(steps)


def _step(value: Any, kind: str, arg: Any) -> Any:
    if kind == "key":
        return value.get(arg, _MISSING) if isinstance(value, dict) else _MISSING
    if kind == "index":
        if isinstance(value, list) and -len(value) <= arg < len(value):
            return value[arg]
        return _MISSING
    raise AssertionError(kind)  # pragma: no cover - "all" is handled by the caller


def _walk(value: Any, steps: tuple[tuple[str, Any], ...]) -> Any:
    for i, (kind, arg) in enumerate(steps):
        if kind == "all":
            if not isinstance(value, list):
                return _MISSING
            rest = steps[i + 1:]
            out = []
            for item in value:
                got = _walk(item, rest)
                if got is _MISSING:
                    continue
                if any(k == "all" for k, _ in rest) and isinstance(got, list):
                    out.extend(got)
                else:
                    out.append(got)
            return out
        value = _step(value, kind, arg)
        if value is _MISSING:
            return _MISSING
    return value


def get_path(doc: Any, path: str, default: Any = None) -> Any:
    """The value at `path` in `doc`, or `default` when a step is missing."""
    got = _walk(doc, parse_path(path))
    return default if got is _MISSING else got
