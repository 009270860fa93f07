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
(evalcore/judges/pricing.py) and prompt templates (evalcore/judges/prompts.py).

Without aliases, what is loaded is proportional to the file, but not small: each node costs
about 400 bytes while PyYAML composes it, so an 11 MB config of a million `k: {}` lines took
1.8 GB and 52 s. So the nodes (scalars, keys included, and collections) are counted in the
scan of events that runs before loading, and a file of more is refused before a node is
built: a question file at most MAX_YAML_NODES (500 000, EVALCORE_MAX_YAML_NODES); settings
(a run config, an options file, a price table, a prompt template), which are small by nature,
at most SETTINGS_MAX_NODES (20 000) in a file of at most 1 MB (`read_settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from evalcore.errors import InputError
from evalcore.common.text_input import read_document, shown_mb
from evalcore.common.value_budget import SETTINGS_MAX_BYTES, SETTINGS_MAX_NODES, YAML_NODES_ENV, yaml_node_limit


class AliasRefused(yaml.YAMLError):
    """A YAML alias (`*name`): not accepted, see the module docstring."""

    def __init__(self, anchor: str, mark: Any):
        self.anchor = anchor
        self.mark = mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
        super().__init__(f"YAML aliases are not accepted (found *{anchor} at {where}): an alias can "
                         f"expand a small file into a huge or endless value; write the value out")


class TooManyNodes(yaml.YAMLError):
    """More nodes than the file may hold (see the module docstring)."""

    def __init__(self, limit: int, mark: Any, hint: str):
        where = f" (at line {mark.line + 1})" if mark is not None else ""
        super().__init__(f"more than {limit:,} YAML nodes{where}; {hint}")


HINT = f"a YAML file is parsed whole: set {YAML_NODES_ENV} to raise the bound, or use JSONL"


class NoAliasSafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader that stops at the first alias instead of expanding it, and past
    `max_nodes` nodes (set on the instance)."""

    max_nodes = -1  # no bound unless set
    hint = HINT

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise AliasRefused(event.anchor, event.start_mark)
        self.nodes = getattr(self, "nodes", 0) + 1
        if 0 <= self.max_nodes < self.nodes:
            raise TooManyNodes(self.max_nodes, self.peek_event().start_mark, self.hint)
        return super().compose_node(parent, index)


MAX_DEPTH = 500  # nesting levels; question files use fewer than ten


class TooDeep(yaml.YAMLError):
    """Nesting deeper than MAX_DEPTH (the C composer recurses on the C stack)."""


_CSafeLoader = getattr(yaml, "CSafeLoader", None)  # libyaml: the same YAML, about 5x faster


def _prescan(text: str, max_nodes: int, hint: str) -> None:
    """Walk the event stream (libyaml's parser is iterative): refuse the first alias, nesting
    the C composer would have to recurse through, and more than `max_nodes` nodes."""
    depth = nodes = 0
    try:
        for event in yaml.parse(text, Loader=_CSafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise AliasRefused(event.anchor, event.start_mark)
            if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if nodes > max_nodes:
                    raise TooManyNodes(max_nodes, event.start_mark, hint)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise TooDeep(f"nested too deeply (more than {MAX_DEPTH} levels, at line {mark.line + 1})")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except (AliasRefused, TooDeep, TooManyNodes):
        raise
    except yaml.YAMLError as exc:
        # Newer libyaml (PyYAML 6.0.4+) has a nesting limit of its own that can fire before
        # ours; whichever layer refuses, the user reads the same sentence.
        if "nesting depth" in str(exc):
            mark = getattr(exc, "problem_mark", None)
            where = f", at line {mark.line + 1}" if mark is not None else ""
            raise TooDeep(f"nested too deeply (over the YAML parser's own limit{where})") from None
        raise


def loads(text: str, max_nodes: int | None = None, hint: str = HINT) -> Any:
    """Parse YAML text with aliases refused (raises yaml.YAMLError, AliasRefused included),
    and more than `max_nodes` nodes (default: yaml_node_limit()) refused before they are built.

    With libyaml the text is checked by a scan of its events, then loaded by the C loader
    (a 1.3 MB question file: ~2 s instead of ~10 s); without it, by NoAliasSafeLoader."""
    max_nodes = yaml_node_limit() if max_nodes is None else max_nodes
    if _CSafeLoader is None:
        loader = NoAliasSafeLoader(text)
        loader.max_nodes, loader.hint = max_nodes, hint
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    _prescan(text, max_nodes, hint)
    return yaml.load(text, Loader=_CSafeLoader)  # noqa: S506 - safe, and alias-free by now


SETTINGS_HINT = "settings files (configs, options, price tables) are small by nature"


def read_settings(path: str | Path) -> Any:
    """A settings file (a run config, an options file): like `read_yaml`, within the small
    bounds of settings (SETTINGS_MAX_BYTES, SETTINGS_MAX_NODES)."""
    path = Path(path)
    size = path.stat().st_size if path.is_file() else 0
    if size > SETTINGS_MAX_BYTES:
        raise InputError(str(path), f"the file is {size / 2 ** 20:,.1f} MB; a settings file (a config, an options "
                         f"file) may be at most {shown_mb(SETTINGS_MAX_BYTES)}")
    return read_yaml(path, SETTINGS_MAX_BYTES, SETTINGS_MAX_NODES, SETTINGS_HINT)


def read_yaml(path: str | Path, max_bytes: int | None = None, max_nodes: int | None = None,
              hint: str = HINT) -> Any:
    """Load a YAML file, or raise InputError naming the file and what is wrong with it.

    YAML is parsed whole, so the file is bounded as a whole (evalcore/common/text_input.py: 64 MB
    unless EVALCORE_MAX_RECORD_MB is higher), and binary data is refused by its offset; its
    nodes are counted before they are built (`loads`)."""
    path = Path(path)
    text = read_document(path, max_bytes)
    try:
        return loads(text, max_nodes, hint)
    except (AliasRefused, TooDeep, TooManyNodes) as exc:
        raise InputError(str(path), str(exc)) from exc
    except yaml.YAMLError as exc:
        raise InputError(str(path), f"invalid YAML: {exc}") from exc
    except RecursionError:
        raise InputError(str(path), "nested too deeply (over Python's recursion limit)") from None
