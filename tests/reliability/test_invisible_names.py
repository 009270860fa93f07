"""Names that differ never print alike (issue 34 round 4, item 14).

Invisible characters passed raw: methods `alpha`, `al\\u200bpha` and `alph\\u00ada` read as three
systems called "alpha" in `score`, `compare` (terminal, --markdown, --json), `export -f md` and the
rest. Now every output shows them as escapes: the terminal guard and `visible` (evalcore/common/inert_text.py,
one list: every format character (Cf), Unicode's other default-ignorable characters (U+034F,
Hangul fillers, variation selectors, tag characters), every space but U+0020, the braille blank),
Markdown cells, the dashboard's tables, pickers and messages, and the HTML report. In a name a
backslash that would read as an escape is doubled, so the six characters `\\u200b` and U+200B
differ too. Free text keeps the two invisible characters that build an emoji (a joiner between
pictographs, a presentation selector after one) in running output; names show even those.
"""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from tests.optional import requires
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.cli import main as cli_main
from evalcore.common.inert_text import INVISIBLE_CLASS, markdown_cell, visible

RAW_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")
NAMES = ["alpha", "al\u200bpha", "alph\u00ada", "al\u200cpha", "al\u200dpha", "al\u2060pha", "al\ufeffpha",
         "al\u034fpha", "al\ufe0fpha", "al\u115fpha", "al\u3164pha", "alpha\U000e0041", "al\u00a0pha", "al pha",
         "al\\u200bpha", "al\u2800pha", "al\ufffbpha", "al\U000e0100pha", "al\u2062pha", "al\u180epha"]


# ---- the list, against Unicode --------------------------------------------------------------------

def test_every_format_space_and_default_ignorable_character_is_shown():
    missed = [f"U+{c:04X}" for c in range(0x110000)
              if (unicodedata.category(chr(c)) in ("Cf", "Zs", "Zl", "Zp", "Cc", "Cs") and c != 0x20)
              and visible(chr(c)) == chr(c)]
    assert not missed, missed
    regex = requires("regex")   # the well-kept implementation of the Unicode property
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    missed = [f"U+{c:04X}" for c in range(0x110000) if ignorable.match(chr(c)) and visible(chr(c)) == chr(c)]
    assert not missed, missed


# ---- different names never print alike: visible and markdown_cell can be read back ------------

def _undo_visible(shown: str) -> str:
    out, i = [], 0
    while i < len(shown):
        ch, nxt = shown[i], shown[i + 1:i + 2]
        if ch != "\\" or not nxt or nxt not in "\\ntrxu":
            out.append(ch)
            i += 1
        elif nxt in "\\ntr":
            out.append({"\\": "\\", "n": "\n", "t": "\t", "r": "\r"}[nxt])
            i += 2
        elif nxt == "x":
            out.append(chr(int(shown[i + 2:i + 4], 16)))
            i += 4
        else:
            code = int(shown[i + 2:i + 6], 16)
            i += 6
            if 0xD800 <= code < 0xDC00 and shown[i:i + 2] == "\\u":
                code = 0x10000 + ((code - 0xD800) << 10) + int(shown[i + 2:i + 6], 16) - 0xDC00
                i += 6
            out.append(chr(code))
    return "".join(out)


def _undo_markdown(cell: str) -> str:
    tokens = {"&nbsp;": " ", "&lt;": "<", "&gt;": ">", "&amp;": "&"}
    out, i = [], 0
    while i < len(cell):
        for token, ch in tokens.items():
            if cell.startswith(token, i):
                out.append(ch)
                i += len(token)
                break
        else:
            if cell[i] == "\\":
                i += 1
            out.append(cell[i])
            i += 1
    return _undo_visible("".join(out))


HOSTILE_ALPHABET = st.sampled_from(list("\\xunrt0123abcdef &;<>*|:nbsp\n\t\r") + ["\u200b", "\u200d", "\u00ad",
                                   "\u3164", "\ufe0f", "\U000e0041", "\u00a0", "\x1b", "\u202e", "👩", "💻"])
NAME_TEXT = st.text(HOSTILE_ALPHABET, max_size=12) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(NAME_TEXT)
def test_a_shown_name_reads_back_as_exactly_that_name(name):
    shown = visible(name)
    assert not RAW_INVISIBLE.search(shown) and "\n" not in shown
    assert _undo_visible(shown) == name       # so no two names show alike


@settings(max_examples=300, deadline=None)
@given(NAME_TEXT)
def test_a_markdown_cell_reads_back_as_exactly_that_name(name):
    cell = markdown_cell(name)
    assert not RAW_INVISIBLE.search(cell)
    assert _undo_markdown(cell) == name


def test_the_reported_names_show_apart():
    shown = [visible(n) for n in NAMES]
    assert len(set(shown)) == len(NAMES) and not any(RAW_INVISIBLE.search(s) for s in shown)
    assert visible("al\u200bpha") == "al\\u200bpha" and visible("al\\u200bpha") == "al\\\\u200bpha"
    assert visible("alph\u00ada") == "alph\\u00ada" and visible("tag\U000e0041") == "tag\\udb40\\udc41"


def test_free_text_keeps_emoji_and_shows_every_other_invisible_character():
    emoji = "👩\u200d💻 ❤\ufe0f 1\ufe0f\u20e3 👍🏽 🏳\ufe0f\u200d🌈"
    assert visible(emoji, single_line=False) == emoji                 # running text: the stream guard
    assert "\\u200d" in visible(emoji) and "\\ufe0f" in visible(emoji)  # a name shows even those
    for text in ("a\u200db", "👩\u200db", "a\u200d💻", "a\ufe0f", "\u200d💻", "🏴\U000e0067\U000e007f"):
        assert not RAW_INVISIBLE.search(visible(text, single_line=False)), text


# ---- every output of the CLI --------------------------------------------------------------------

@pytest.fixture(scope="module")
def named(tmp_path_factory):
    from evalcore.scoring.importer import import_recorded
    from evalcore.scoring.engine import score_run
    from evalcore.store import RunStore

    base = tmp_path_factory.mktemp("names")
    answers = base / "zw.jsonl"
    answers.write_text("".join(json.dumps({"question_id": "q1", "method": m, "question": "x", "answer": f"a {i}",
                                           "ground_truth": "a"}) + "\n" for i, m in enumerate(NAMES)),
                       encoding="utf-8")
    store = RunStore(base / "runs")
    run = import_recorded(store, answers, name="zw").run_id
    score_run(store, run, metrics=["token_f1"], progress=False)
    return store, run, answers, base


def _run(root, argv, capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["evalcore", "--store", str(root), *argv])
    try:
        cli_main.main()
    except SystemExit:
        pass
    return capsys.readouterr()


def test_no_output_of_the_cli_shows_a_name_raw(named, capsys, monkeypatch):
    store, run, answers, base = named
    md_file = base / "export.md"
    pair = (f"{run}:alpha", *(f"{run}:{n}" for n in NAMES[1:]))
    cases = {
        ("import", str(answers), "--name", "again"): None, ("show", run): None,
        ("score", run, "--metrics", "token_f1"): None,   # (20 methods as columns: the table cuts them)
        ("compare", *pair): visible, ("compare", *pair, "--markdown"): markdown_cell,
        ("compare", *pair, "--json"): json,
        ("export", run, "-f", "md"): markdown_cell, ("export", run, "-f", "csv"): None,
        ("export", run, "-f", "json"): json, ("runs", "--json"): json, ("runs",): None, ("store", "check"): None,
        ("export", run, "-f", "md", "-o", str(md_file)): None,
    }
    for argv, spelled in cases.items():
        out, err = _run(store.root, list(argv), capsys, monkeypatch)
        for where, text in (("stdout", out), ("stderr", err)):
            bad = RAW_INVISIBLE.search(text)
            near = text[max(0, bad.start() - 40):bad.end() + 20] if bad else ""
            assert bad is None, f"{argv} {where}: raw U+{ord(bad.group()):04X} in {near!r}"
        if spelled is json:
            json.loads(out)          # still valid JSON, every invisible character a \u escape
        elif spelled is not None:
            missing = [n for n in NAMES if spelled(n) not in out]
            assert not missing, (argv, missing)
    written = md_file.read_text(encoding="utf-8")
    assert not RAW_INVISIBLE.search(written) and all(markdown_cell(n) in written for n in NAMES)


def test_json_outputs_decode_to_the_exact_names(named, capsys, monkeypatch):
    store, run, _, _ = named
    out, _ = _run(store.root, ["show", run, "--json"], capsys, monkeypatch)
    assert set(json.loads(out)["manifest"]["methods"]) == set(NAMES)
    out, _ = _run(store.root, ["export", run, "-f", "json"], capsys, monkeypatch)
    assert {r["method"] for r in json.loads(out)["rows"]} == set(NAMES)


# ---- the dashboard and the HTML report -------------------------------------------------------------

def test_the_dashboard_shows_names_apart():
    requires("streamlit")
    import pandas as pd

    from evalcore.analysis.charts.inert import html_text, plotly_text
    from evalcore.ui import safe_widgets as W

    frame = W.shown_frame(pd.DataFrame({"method": NAMES, "n": range(len(NAMES))}))
    assert len(set(frame.method)) == len(NAMES) and not frame.method.str.contains(RAW_INVISIBLE).any()
    wide = W.shown_frame(pd.DataFrame({n: [1] for n in NAMES}))               # methods as columns
    assert len(set(wide.columns)) == len(NAMES) and not any(RAW_INVISIBLE.search(c) for c in wide.columns)
    plain = pd.DataFrame({"method": ["alpha"]})
    assert W.shown_frame(plain) is plain                                       # nothing to show: untouched
    label = W._shown(str)
    for shown in ([label(n) for n in NAMES], [W.md(n) for n in NAMES], [plotly_text(n) for n in NAMES],
                  [html_text(n) for n in NAMES], [W.inert_html(n) for n in NAMES]):
        assert len(set(shown)) == len(NAMES), shown
        assert not any(RAW_INVISIBLE.search(s) for s in shown), shown
    assert W.inert_html("👩\u200d💻") == "👩\u200d💻"                        # free text keeps its emoji


def test_styled_tables_show_names_apart_and_downloads_keep_them(monkeypatch):
    requires("streamlit")
    import pandas as pd

    from evalcore.ui import safe_widgets as W

    drawn, downloads = [], []
    monkeypatch.setattr(W.st, "dataframe", lambda data, **kw: drawn.append(data))
    monkeypatch.setattr(W.st, "download_button", lambda label, data, **kw: downloads.append(data))
    df = pd.DataFrame({"method": NAMES, **{n: [0.5] * len(NAMES) for n in NAMES[:3]}})
    W.show_table(df, "t", style=lambda d: d.style.map(lambda _: "color: red"))
    shown = drawn[0].data
    assert list(shown.method) == [visible(n) for n in NAMES]
    assert list(shown.columns) == ["method", *(visible(n) for n in NAMES[:3])]
    assert all(n in downloads[0].decode("utf-8") for n in NAMES[1:3])    # the CSV holds the exact names
