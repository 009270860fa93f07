"""The one YAML loader evalcore uses for files it reads: PyYAML's safe loader without aliases.

Why: `yaml.safe_load` builds only plain data, but it still expands aliases (`*name`). A
question file is untrusted input, and aliases are how a small YAML file becomes a huge or
endless value: nine levels of nine aliases each ("billion laughs") expand to 387 million
strings and ran for minutes; a 1 MB file of aliased long strings grew to 19 GB once each
copy was validated; an anchor that refers to itself (`&q {..., metadata: *q}`) builds a
cyclic value that later code walks until RecursionError. Refusing aliases makes the size of
what is loaded proportional to the size of the file, so every YAML file either loads or fails
fast with a message naming the file, the line and the alias. An anchor (`&name`) alone is
harmless and still accepted. Nothing evalcore ships needs aliases: write the value out again.

Used for question files and run configs (evalcore/datasets/records.py), price tables
(evalcore/pricing.py) and prompt templates (evalcore/judges/prompts.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalcore.errors import InputError
from evalcore.text_input import read_document


class AliasRefused(yaml.YAMLError):
    """A YAML alias (`*name`): not accepted, see the module docstring."""

    def __init__(self, anchor: str, mark: Any):
        self.anchor = anchor
        self.mark = mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
        super().__init__(f"YAML aliases are not accepted (found *{anchor} at {where}): an alias can "
                         f"expand a small file into a huge or endless value; write the value out")


class NoAliasSafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader that stops at the first alias instead of expanding it."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise AliasRefused(event.anchor, event.start_mark)
        return super().compose_node(parent, index)


MAX_DEPTH = 500  # nesting levels; question files use fewer than ten


class TooDeep(yaml.YAMLError):
    """Nesting deeper than MAX_DEPTH (the C composer recurses on the C stack)."""


_CSafeLoader = getattr(yaml, "CSafeLoader", None)  # libyaml: the same YAML, about 5x faster


def _prescan(text: str) -> None:
    """Walk the event stream (libyaml's parser is iterative): refuse the first alias, and
    nesting the C composer would have to recurse through."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_CSafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise AliasRefused(event.anchor, event.start_mark)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise TooDeep(f"nested too deeply (more than {MAX_DEPTH} levels, at line {mark.line + 1})")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except (AliasRefused, TooDeep):
        raise
    except yaml.YAMLError as exc:
        # Newer libyaml (PyYAML 6.0.4+) has a nesting limit of its own that can fire before
        # ours; whichever layer refuses, the user reads the same sentence.
        if "nesting depth" in str(exc):
            mark = getattr(exc, "problem_mark", None)
            where = f", at line {mark.line + 1}" if mark is not None else ""
            raise TooDeep(f"nested too deeply (over the YAML parser's own limit{where})") from None
        raise


def loads(text: str) -> Any:
    """Parse YAML text with aliases refused (raises yaml.YAMLError, AliasRefused included).

    With libyaml the text is checked by a scan of its events, then loaded by the C loader
    (a 1.3 MB question file: ~2 s instead of ~10 s); without it, by NoAliasSafeLoader."""
    if _CSafeLoader is None:
        return yaml.load(text, Loader=NoAliasSafeLoader)  # noqa: S506 - a SafeLoader subclass
    _prescan(text)
    return yaml.load(text, Loader=_CSafeLoader)  # noqa: S506 - safe, and alias-free by now


def read_yaml(path: str | Path) -> Any:
    """Load a YAML file, or raise InputError naming the file and what is wrong with it.

    YAML is parsed whole, so the file is bounded as a whole (evalcore/text_input.py: 64 MB
    unless EVALCORE_MAX_RECORD_MB is higher), and binary data is refused by its offset."""
    path = Path(path)
    text = read_document(path)
    try:
        return loads(text)
    except (AliasRefused, TooDeep) as exc:
        raise InputError(str(path), str(exc)) from exc
    except yaml.YAMLError as exc:
        raise InputError(str(path), f"invalid YAML: {exc}") from exc
    except RecursionError:
        raise InputError(str(path), "nested too deeply (over Python's recursion limit)") from None
