"""The one escaping helper for highlighted untrusted text (evalcore.ui.safe_widgets.inert_html).

Hostile strings must come out as exactly their characters: no tag, attribute, Markdown link or
image, code span, LaTeX, Streamlit directive or autolink survives, bidi controls cannot reorder
the page, and long text is neither truncated nor slow to escape. The only markup in the output
is our own <mark>.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from evalcore.ui.safe_widgets import MARK_CLASSES, inert_html

HOSTILE = [
    "<script>alert('x')</script>",
    "<img src=http://127.0.0.1:9/canary onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "[link](http://127.0.0.1:9/x) ![img](http://127.0.0.1:9/i.png) <http://127.0.0.1:9/auto>",
    "www.example.invalid and http://127.0.0.1:9/x and a@b.invalid",
    "$x^2$ and $$\\int_0^1 f$$ cost $5 and $6",
    "`code` and ```fenced```",
    "**bold** __strong__ *em* ~~strike~~ # heading\n\n    indented code\n> quote\n- item",
    ":red[coloured] :material/warning: :smile:",
    "&lt;b&gt; already escaped &amp; &#60;i&#62;",
    "bidi \u202etxt.exe\u202c and \u2066isolate\u2069 zero\u200bwidth \u2028line",
    "nul \x00 bell \x07 esc \x1b[31m",
]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def _tags(markup: str) -> list[tuple[str, list]]:
    p = _Tags()
    p.feed(markup)
    p.close()
    return p.tags


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_has_no_markup_and_no_syntax_characters(text):
    out = inert_html(text)
    assert {t for t, _ in _tags(out)} <= {"br"}, f"markup leaked from {text!r}: {out}"
    assert out.count("<br>") == text.count("\n")
    # nothing Markdown, KaTeX, Streamlit directives or HTML could read is left as a raw character
    raw = re.sub(r"&#\d+;|<br>", "", out)
    assert not set(raw) & set("<>\"'&`*_[]()!$:~#\\|{}=/@"), raw
    assert "\n" not in out  # no raw line break for a Markdown block to start after


INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\u200b\u2028\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("text", [t for t in HOSTILE if not INVISIBLE.search(t)])
def test_escaped_text_reads_back_as_itself(text):
    """Inert is not mangled: unescaping gives exactly the characters (newlines as <br>)."""
    assert html.unescape(inert_html(text).replace("<br>", "\n")) == text


def test_bidi_and_control_characters_are_shown_not_obeyed():
    out = inert_html("a\u202eb\u2066c\u200bd\x00e\x1bf")
    assert html.unescape(out) == "a[U+202E]b[U+2066]c[U+200B]d[U+0000]e[U+001B]f"
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200b\x00\x1b]", out)


def test_marks_are_the_only_markup_and_their_titles_are_escaped():
    text = "The <b>Nile</b> is long. It is $6,650 km."
    spans = [(0, 24, "supported", 'claim 1 "<img src=x>"'), (25, len(text), "unsupported", "claim 2")]
    out = inert_html(text, spans)
    tags = _tags(out)
    assert [t for t, _ in tags] == ["mark", "mark"]
    assert [dict(a)["class"] for _, a in tags] == ["supported", "unsupported"]
    assert dict(tags[0][1])["title"] == 'claim 1 "<img src=x>"'  # an attribute value, not a tag
    assert html.unescape(re.sub(r"</?mark[^>]*>", "", out)) == text


def test_spans_that_overlap_or_fall_outside_are_dropped_and_unknown_classes_refused():
    out = inert_html("abcdef", [(0, 3, "match", ""), (2, 5, "match", ""), (4, 99, "match", "")])
    assert out.count("<mark") == 1
    with pytest.raises(ValueError, match="unknown highlight class"):
        inert_html("abc", [(0, 1, 'x" onclick="alert(1)', "")])
    assert "match" in MARK_CLASSES


def test_very_long_text_is_kept_whole():
    text = ("word <i>x</i> $y$ " * 60_000) + "END"
    out = inert_html(text, [(0, 4, "match", "")])
    assert out.endswith("END") and html.unescape(re.sub(r"</?mark[^>]*>", "", out)) == text


def test_missing_values_render_empty():
    assert inert_html(None) == "" and inert_html(float("nan")) == ""
