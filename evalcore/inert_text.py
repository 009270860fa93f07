"""Untrusted text made inert for the two places that read control syntax in it: terminals and Markdown.

Why: method and run names, question ids, categories, answers, judge text and file names come
from other people's files and servers. Printed raw, an escape sequence in one is a command to the
terminal (OSC 52 writes the clipboard, OSC 0 sets the title, OSC 8 makes a link, CSI 2J clears
the screen), a Unicode bidi override makes `evil` read as `live`, and a newline forges a line of
output. Markdown reads its own syntax (links, images, HTML, table pipes). The dashboard already
escapes HTML (evalcore.analysis.inert); this is the same promise for the CLI and Markdown.

Made visible, never dropped (a reader can still tell two names apart):
  C0 controls          \\x00-\\x1f as \\x1b ...; tab, newline, CR as \\t \\n \\r in a one-line field
  DEL, C1 controls     \\u007f, \\u0080-\\u009f (8-bit CSI \\u009b, OSC \\u009d ...)
  bidi controls        \\u061c, \\u200e, \\u200f, \\u202a-\\u202e, \\u2066-\\u2069
  line/para separators \\u2028, \\u2029; lone surrogates \\ud800-\\udfff
Everything above U+001F is written as \\uXXXX, so JSON printed through the guard stays valid JSON
that decodes to the same text. A backslash is left as it is (paths, regexes): the escapes are
for showing, not a reversible encoding.

One boundary for the CLI: `install_inert_streams()` (called by the `evalcore` command before
anything runs) wraps sys.stdout and sys.stderr in `InertStream`, so every print path (typer.echo,
print, rich tables, warnings, logging, click's usage errors, commands added later) passes the
guard; only our own progress bars draw around it (`progress_console`), with descriptions passed
through `visible`.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any, TextIO

_UNSAFE_CLASS = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
# In running output newlines and tabs are layout, and a carriage return just before a newline
# (CR LF) is harmless; a lone CR would let text overwrite its own line.
_UNSAFE_IN_LINES = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                              "\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def visible(value: Any, single_line: bool = True) -> str:
    """`value` as text whose control characters show as escapes (see the module docstring).
    A one-line field (a name, an id, a category) shows newlines and tabs as escapes too; with
    `single_line=False` they stay (running text), as does the CR of a CR LF."""
    text = value if isinstance(value, str) else str(value)
    return (_UNSAFE if single_line else _UNSAFE_IN_LINES).sub(_escape, text)


def has_unsafe(text: str) -> bool:
    """Does `text` hold any character `visible` would escape (newlines and tabs included)?"""
    return _UNSAFE.search(text) is not None


# Markdown punctuation, plus what GitHub's autolinks need (':' of a scheme, '.' of www.x.y, '@' of
# an e-mail): escaped, a URL in an answer stays text in a pull request or job summary.
_MD_PUNCTUATION = frozenset("\\`*_{}[]()!|~:.@")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_cell(value: Any) -> str:
    """Untrusted text as one Markdown table cell (or inline text) that renders as exactly its
    characters: whitespace runs (newlines included) collapse to one space, control characters
    become visible escapes, every character with meaning in Markdown (links, images, emphasis,
    code, headings, the table's pipes) is backslash-escaped, and <, >, & become entities (no HTML).
    A missing value (None, NaN, pandas' NA) is ''; a float shows 4 significant digits."""
    if value is None or type(value).__name__ == "NAType":  # pandas.NA, without importing pandas
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    text = visible(" ".join(str(value).split()))
    return "".join(_MD_ENTITIES.get(ch) or ("\\" + ch if ch in _MD_PUNCTUATION else ch) for ch in text)


class InertStream:
    """A text stream whose writes pass through `visible(..., single_line=False)`: what reaches the
    terminal (or a log) shows control characters as escapes. Everything else (flush, isatty,
    encoding, fileno...) is the wrapped stream's. It has no `buffer`, so bytes cannot go around
    the guard; `unguarded` is the wrapped stream, for `progress_console` only."""

    def __init__(self, stream: TextIO):
        self._inert_inner = stream

    @property
    def unguarded(self) -> TextIO:
        return self._inert_inner

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._inert_inner.write(visible(text, single_line=False))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer" or name.startswith("_inert"):
            raise AttributeError(name)
        return getattr(self._inert_inner, name)


def install_inert_streams() -> None:
    """Wrap sys.stdout and sys.stderr in InertStream (once: a second call changes nothing)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, InertStream):
            setattr(sys, name, InertStream(stream))


def unguarded(stream: Any) -> Any:
    """The stream under an InertStream (the stream itself when it is not one)."""
    return stream.unguarded if isinstance(stream, InertStream) else stream


class _RawStderr:
    """sys.stderr past the guard, looked up at every call (a test runner swaps sys.stderr)."""

    def write(self, text: str) -> int:
        return unguarded(sys.stderr).write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(unguarded(sys.stderr), name)


_PROGRESS_CONSOLE: list[Any] = []


def progress_console() -> Any:
    """The one rich Console our progress bars draw on: stderr, around the guard (a live bar moves
    the cursor with escape sequences of its own). One console for every bar, so rich refuses a
    second live bar while one runs (the caller then goes on without it). What a bar shows must be
    passed through `visible` by its caller, and its columns must not parse markup."""
    if not _PROGRESS_CONSOLE:
        from rich.console import Console

        _PROGRESS_CONSOLE.append(Console(file=_RawStderr()))
    return _PROGRESS_CONSOLE[0]


def progress_options() -> dict[str, Any]:
    """The keyword arguments every rich Progress of ours takes: the progress console, and no
    redirection of stdout/stderr through it while a bar runs (what is printed meanwhile keeps
    the guard)."""
    return {"console": progress_console(), "redirect_stdout": False, "redirect_stderr": False}
