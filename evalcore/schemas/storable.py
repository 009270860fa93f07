"""Make untrusted text storable: lone UTF-16 surrogates become U+FFFD, and we say where.

Why this exists: JSON may spell a lone surrogate (`"\\ud800"`) and Python's json module
decodes it into a `str` holding that code point. Such a string cannot be encoded as UTF-8,
so it fails wherever evalcore writes text (Parquet part files, run.json) - and it fails
the whole batch it is in, not just its own record. A live target that answered one such
string used to fail the run, and `--resume` asked the same question again and failed again,
forever. Replacing the code point keeps every other character of the record; the list of
field paths that were changed goes with the record (`EvalResponse.raw`, a manifest note) so a
reader can tell the stored text is not byte-for-byte what the server sent.

Python `str`s never hold a surrogate *pair* (json joins a valid pair into one character),
so every code point in U+D800..U+DFFF found here is unencodable.

The walk is iterative (no recursion limit to hit on deep JSON) and edits lists and dicts in
place: callers hand it containers they have just parsed and own. Used by the live runner's
response parsing (evalcore/targets/parse.py), its target probe (evalcore/runner/live.py),
and available to any loader of recorded answers.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
MAX_PATHS = 20  # changed field paths kept in a record's note; the count is always exact
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> tuple[str, int]:
    """(text with every lone surrogate replaced by U+FFFD, how many were replaced)."""
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def make_storable(value: Any) -> tuple[Any, list[str]]:
    """Replace lone surrogates in every string of a JSON-like value (keys included).

    Returns the value (the same object for containers, edited in place; a new one for a
    top-level string) and the paths of the fields that changed, e.g. `["answer",
    "retrieved[0].text"]` (at most MAX_PATHS of them; see `count` for the total)."""
    changed: list[str] = []
    if isinstance(value, str):
        fixed, n = storable_text(value)
        return fixed, ([""] if n else [])
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    fixed, n = storable_text(item)
                    if n:
                        node[i] = fixed
                        changed.append(_join(path, i))
                elif isinstance(item, (list, dict)):
                    stack.append((item, _join(path, i)))
        elif isinstance(node, dict):
            renamed: dict[Any, str] = {}
            for key, item in node.items():
                if isinstance(key, str):
                    fixed_key, n = storable_text(key)
                    if n:
                        renamed[key] = fixed_key
                        changed.append(_join(path, fixed_key) + " (key)")
                where = _join(path, renamed.get(key, key))
                if isinstance(item, str):
                    fixed, n = storable_text(item)
                    if n:
                        node[key] = fixed
                        changed.append(where)
                elif isinstance(item, (list, dict)):
                    stack.append((item, where))
            if renamed:  # rebuild in the original order with the repaired keys
                items = [(renamed.get(k, k), v) for k, v in node.items()]
                node.clear()
                node.update(items)
    return value, changed


def storable_note(paths: list[str]) -> str:
    """One line saying which fields had unencodable characters replaced."""
    shown = ", ".join(p or "(the value)" for p in paths[:MAX_PATHS])
    more = f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else ""
    return (f"replaced unencodable characters (lone UTF-16 surrogates) with U+FFFD in "
            f"{len(paths)} field(s): {shown}{more}")
