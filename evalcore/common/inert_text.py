"""Untrusted text made inert for the two places that read control syntax in it: terminals and Markdown.

Why: method and run names, question ids, categories, answers, judge text and file names come
from other people's files and servers. Printed raw, an escape sequence in one is a command to the
terminal (OSC 52 writes the clipboard, OSC 0 sets the title, OSC 8 makes a link, CSI 2J clears
the screen), a Unicode bidi override makes `evil` read as `live`, and a newline forges a line of
output. Markdown reads its own syntax (links, images, HTML, table pipes). The dashboard already
escapes HTML (evalcore.analysis.charts.inert); this is the same promise for the CLI and Markdown.

Made visible, never dropped (a reader can still tell two names apart):
  C0 controls          \\x00-\\x1f as \\x1b ...; tab, newline, CR as \\t \\n \\r in a one-line field
  DEL, C1 controls     \\u007f, \\u0080-\\u009f (8-bit CSI \\u009b, OSC \\u009d ...)
  invisible characters every format character (Unicode category Cf: bidi controls, zero-width
                       space / joiners, word joiner, BOM, soft hyphen, U+FFF9-FFFB, tag characters
                       U+E0000-E0FFF), the rest of Unicode's default-ignorable characters
                       (U+034F, Hangul fillers U+115F/U+1160/U+3164/U+FFA0, variation selectors
                       U+FE00-FE0F and U+E0100-E01EF, Mongolian selectors), the braille blank
                       U+2800, and every space but U+0020 (U+00A0, U+2000-200A, U+3000 ...): so
                       "alpha", "al\\u200bpha" and "alph\\u00ada" never print alike
  line/para separators \\u2028, \\u2029; lone surrogates \\ud800-\\udfff
Everything above U+001F is written as \\uXXXX (a character beyond U+FFFF as its UTF-16 pair,
\\udb40\\udc41), so JSON printed through the guard stays valid JSON that decodes to the same text.

Names and running text. A one-line field (`visible(...)`, as every table cell, `echo_line`
and `markdown_cell` use it) escapes all of the above, and doubles a backslash that would
otherwise read as the start of an escape: a name holding the six characters `\\u200b` prints
as `\\\\u200b`, one holding the invisible character as `\\u200b`. Running text
(`single_line=False`: the stream guard over everything a command prints) keeps newlines, tabs
and CR LF, keeps backslashes as they are (JSON), and keeps the two invisible characters emoji
are built from where they build one: a zero-width joiner between two pictographs (woman, ZWJ,
laptop: one emoji) and a presentation selector U+FE0E/U+FE0F right after a pictograph or before
a keycap. Everywhere else they show as escapes, in free text (answers) too: the terminal is for
telling things apart, the dashboard for reading.

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
import unicodedata
from typing import Any, Callable, TextIO

# What no one can see: format characters (Cf), the rest of Unicode's Default_Ignorable_Code_Point,
# every space but U+0020, line and paragraph separators and the braille blank. Spelled out (a
# scan of unicodedata at import would cost the CLI's start); tests/reliability/
# test_invisible_names.py checks it against Python's categories and the `regex` module's property.
INVISIBLE_CLASS = ("\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u1680"
                   "\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164"
                   "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                   "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
_CONTROLS = "\x00-\x1f\x7f-\x9f"
_SURROGATES = "\ud800-\udfff"
_UNSAFE_CLASS = _CONTROLS + INVISIBLE_CLASS + _SURROGATES
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
# In running output newlines and tabs are layout, and a carriage return just before a newline
# (CR LF) is harmless; a lone CR would let text overwrite its own line.
_LINES_CLASS = f"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{INVISIBLE_CLASS}{_SURROGATES}"
_UNSAFE_IN_LINES = re.compile(f"\r(?!\n)|[{_LINES_CLASS}]")
# The same, with a backslash before what an escape starts with (x u n t r, a backslash, or a
# character that will be escaped): doubled, so `\\u200b` typed and U+200B never print alike.
_MARKED = {True: re.compile(f"\\\\(?=[\\\\xuntr{_UNSAFE_CLASS}])|[{_UNSAFE_CLASS}]"),
           False: re.compile(f"\\\\(?=[\\\\xuntr{_LINES_CLASS}]|\r(?!\n))|\r(?!\n)|[{_LINES_CLASS}]")}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
ZWJ = "\u200d"
PRESENTATION = ("\ufe0e", "\ufe0f")
KEYCAP = "\u20e3"
_MODIFIERS = range(0x1F3FB, 0x1F400)  # skin tones: part of the pictograph before them


def escape_code(ch: str) -> str:
    """The terminal spelling of one character: \\n \\r \\t, \\xNN below U+0020, \\uXXXX above
    (a character beyond U+FFFF as its UTF-16 pair, as JSON spells it)."""
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x20:
        return f"\\x{code:02x}"
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _pictograph(ch: str) -> bool:
    return unicodedata.category(ch) == "So"


def _pictograph_before(text: str, at: int) -> bool:
    """Is there a pictograph just before `at` (past one presentation selector or skin tone)?"""
    i = at - 1
    if i >= 0 and (text[i] in PRESENTATION or ord(text[i]) in _MODIFIERS):
        i -= 1
    return i >= 0 and _pictograph(text[i])


def builds_emoji(text: str, at: int) -> bool:
    """Does the invisible character at `at` build an emoji: a zero-width joiner between two
    pictographs, or a presentation selector after a pictograph or before a keycap?"""
    ch, after = text[at], text[at + 1:at + 2]
    if ch == ZWJ:
        return _pictograph_before(text, at) and bool(after) and _pictograph(after)
    if ch in PRESENTATION:
        return after == KEYCAP or _pictograph_before(text, at)
    return False


def reveal(text: str, spell: Callable[[str], str], single_line: bool = True, mark_backslashes: bool = False) -> str:
    """`text` with every character the module docstring lists replaced by `spell(ch)`; in running
    text (`single_line=False`) newlines, tabs, CR LF and emoji sequences stay. With
    `mark_backslashes` a backslash that would read as the start of an escape is passed to
    `spell` too (escape_code doubles it), so different texts never show alike. The one
    definition of "unsafe" behind `visible`, the dashboard and the HTML report
    (evalcore.analysis.charts.inert)."""
    if single_line and not mark_backslashes:
        return _UNSAFE.sub(lambda m: spell(m.group()), text)
    pattern = _MARKED[single_line] if mark_backslashes else _UNSAFE_IN_LINES
    if single_line:
        return pattern.sub(lambda m: spell(m.group()), text)

    def one(match: re.Match[str]) -> str:
        return match.group() if builds_emoji(match.string, match.start()) else spell(match.group())

    return pattern.sub(one, text)


def visible(value: Any, single_line: bool = True) -> str:
    """`value` as text whose control and invisible characters show as escapes (see the module
    docstring). A one-line field (a name, an id, a category) shows newlines and tabs as escapes
    too, and a backslash that would read as an escape is doubled; with `single_line=False`
    they stay (running text), as does the CR of a CR LF, and backslashes are left alone (JSON)."""
    text = value if isinstance(value, str) else str(value)
    return reveal(text, escape_code, single_line, mark_backslashes=single_line)


# Markdown punctuation, plus what GitHub's autolinks need (':' of a scheme, '.' of www.x.y, '@' of
# an e-mail): escaped, a URL in an answer stays text in a pull request or job summary.
_MD_PUNCTUATION = frozenset("\\`*_{}[]()!|~:.@")
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_SPACE_RUN = re.compile(" {2,}")


def markdown_cell(value: Any) -> str:
    """Untrusted text as one Markdown table cell (or inline text) that renders as exactly its
    characters: it is one line of `visible` (newlines, tabs, control and invisible characters
    become visible escapes, so "a\\nb" and "a b" differ), every character with meaning in
    Markdown (links, images, emphasis, code, headings, the table's pipes) is backslash-escaped,
    <, >, & become entities (no HTML), and a run of spaces keeps its width (each space after
    the first is &nbsp;, which HTML does not collapse). A missing value (None, NaN, pandas' NA)
    is ''; a float shows 4 significant digits."""
    if value is None or type(value).__name__ == "NAType":  # pandas.NA, without importing pandas
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    text = "".join(_MD_ENTITIES.get(ch) or ("\\" + ch if ch in _MD_PUNCTUATION else ch) for ch in visible(value))
    return _SPACE_RUN.sub(lambda m: " " + "&nbsp;" * (len(m.group()) - 1), text)


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
