"""Make untrusted text storable and exportable: lone UTF-16 surrogates and NUL become U+FFFD, and we say where.

Why this exists: JSON may spell a lone surrogate (`"\\ud800"`) and Python's json module
decodes it into a `str` holding that code point. Such a string cannot be encoded as UTF-8,
so it fails wherever evalcore writes text (Parquet part files, run.json) - and it fails
the whole batch it is in, not just its own record. A live target that answered one such
string used to fail the run, and `--resume` asked the same question again and failed again,
forever. JSON may also spell NUL (`"\\u0000"`): that one can be stored, but a CSV export then
holds a NUL byte, which every reader of text refuses as binary data (evalcore/common/text_input.py),
so `export -f csv` wrote a file `import` could not read back. Replacing the code point keeps
every other character of the record; the list of field paths that were changed goes with the
record (`EvalResponse.raw`, a manifest note, the import's output) so a reader can tell the
stored text is not byte-for-byte what the file or server sent.

Python `str`s never hold a surrogate *pair* (json joins a valid pair into one character),
so every code point in U+D800..U+DFFF found here is unencodable.

File names are the other source of surrogates: a name that is not UTF-8 reaches Python with
each undecodable byte as U+DC80..U+DCFF ("surrogate escapes"). `storable_path` spells those
bytes `\\xff`, so the name can be stored and still tells the file apart.

The walk is iterative (no recursion limit to hit on deep JSON) and edits lists and dicts in
place: callers hand it containers they have just parsed and own. Used by every reader of
records (evalcore/datasets/records.py: answers, labels, questions, spans), the live runner's
response parsing (evalcore/targets/parse.py), its target probe (evalcore/pipeline/live.py) and
the run manifest's serializer (a last guard for any path or name that reached it).
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable

REPLACEMENT = "\ufffd"
MAX_PATHS = 20  # changed field paths kept in a record's note; the count is always exact
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
WHAT = "NUL or lone UTF-16 surrogates"  # how notes name what was replaced


def storable_text(text: str) -> tuple[str, int]:
    """(text with every lone surrogate and NUL replaced by U+FFFD, how many were replaced)."""
    if text.isascii() and "\x00" not in text:
        return text, 0
    return _UNSTORABLE.subn(REPLACEMENT, text)


def storable_path(path: str | os.PathLike[str]) -> str:
    """A file name as evalcore stores it (run.json, notes): the name itself when it is text; each
    byte of a name that is not UTF-8 (a surrogate escape U+DC80..U+DCFF) as `\\xNN`, any other
    unstorable character as U+FFFD. `a\\xff.jsonl` is the file whose name has the byte 0xFF."""
    text = os.fspath(path)
    if text.isascii():
        return text.replace("\x00", REPLACEMENT)
    return storable_text(path_spelling(text))[0]


def path_spelling(text: str) -> str:
    """`text` with each surrogate escape (U+DC80..U+DCFF: a byte that was not UTF-8) as `\\xNN`."""
    return _ESCAPED_BYTE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def _storable_name(text: str) -> tuple[str, int]:
    fixed = storable_path(text)
    return fixed, int(fixed != text)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def make_storable(value: Any, fix: Callable[[str], tuple[str, int]] = storable_text) -> tuple[Any, list[str]]:
    """Replace lone surrogates and NUL in every string of a JSON-like value (keys included).

    Returns the value (the same object for containers, edited in place; a new one for a
    top-level string) and the paths of the fields that changed, e.g. `["answer",
    "retrieved[0].text"]`. `fix` is the repair of one string (`storable_names` spells the
    bytes of file names instead)."""
    changed: list[str] = []
    if isinstance(value, str):
        fixed, n = fix(value)
        return fixed, ([""] if n else [])
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    fixed, n = fix(item)
                    if n:
                        node[i] = fixed
                        changed.append(_join(path, i))
                elif isinstance(item, (list, dict)):
                    stack.append((item, _join(path, i)))
        elif isinstance(node, dict):
            renamed = _renamed_keys(node, fix)
            for key, item in node.items():
                if key in renamed:
                    changed.append(_join(path, renamed[key]) + " (key)")
                where = _join(path, renamed.get(key, key))
                if isinstance(item, str):
                    fixed, n = fix(item)
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


def _renamed_keys(node: dict, fix: Callable[[str], tuple[str, int]]) -> dict[Any, str]:
    """The keys of `node` that need repair, and their repaired names. Keys that repair to a name
    already there (`k\\ud800` and `k\\udfff` both to `k\ufffd`) get ` (2)`, ` (3)`... appended:
    no value is lost to another, and keys that needed no repair keep their names."""
    renamed: dict[Any, str] = {}
    for key in node:
        if isinstance(key, str):
            fixed, n = fix(key)
            if n:
                renamed[key] = fixed
    if not renamed:
        return renamed
    taken = {key for key in node if key not in renamed}
    for key, fixed in renamed.items():
        name, n = fixed, 2
        while name in taken:
            name, n = f"{fixed} ({n})", n + 1
        renamed[key] = name
        taken.add(name)
    return renamed


def storable_names(value: Any) -> Any:
    """`value` (a manifest's data) with every string storable, file names' bytes spelled `\\xNN`
    (`storable_path`): the run manifest's last guard before it is written."""
    return make_storable(value, _storable_name)[0]


def storable_note(paths: list[str]) -> str:
    """One line saying which fields had unstorable characters replaced."""
    shown = ", ".join(p or "(the value)" for p in paths[:MAX_PATHS])
    more = f" and {len(paths) - MAX_PATHS} more" if len(paths) > MAX_PATHS else ""
    return (f"replaced characters that cannot be stored or exported ({WHAT}) with U+FFFD in "
            f"{len(paths)} field(s): {shown}{more}")


def cut_deep(value: Any, max_depth: int) -> tuple[Any, list[str]]:
    """`value` (a JSON-like value this caller owns) with every non-empty list or object nested
    more than `max_depth` levels deep replaced by a short text saying so, and the paths cut.

    Why: what a server sends (a target's /models/info) goes into run.json, and a manifest nested
    deeper than pydantic writes (~250 levels) cannot be written at all: a live run was refused
    with "unexpected PydanticSerializationError" for a target whose info was nested 251 deep."""
    cut: list[str] = []
    if not isinstance(value, (list, dict)):
        return value, cut
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, level = stack.pop()
        keys = range(len(node)) if isinstance(node, list) else list(node)
        for key in keys:
            item = node[key]
            if isinstance(item, (list, dict)) and item:
                where = _join(path, key)
                if level + 1 > max_depth:
                    node[key] = f"<nested deeper than {max_depth} levels: not kept>"
                    cut.append(where)
                else:
                    stack.append((item, where, level + 1))
    return value, cut
