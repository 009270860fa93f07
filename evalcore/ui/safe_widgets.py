"""The Streamlit pieces every page is built from, each made safe once here: URL-backed widgets
(only values the store knows get in), tables, and the rendering of untrusted text (nothing of a
run's is ever Markdown or HTML). Also re-exports the store handle (`store`, `call`).

URL state (datasette's lesson: the URL is the state). Each widget is seeded from its query
parameter the first time it renders in a session, then writes its value back, so copying
the address bar reproduces the view. Every URL value is checked against an allow-list built
from the store (run ids, methods, metrics that exist); anything else is dropped with a
visible note instead of an exception.

Untrusted text (answers, contexts, judge I/O, even run names) goes through st.text,
st.code or st.dataframe, or, where words must be highlighted, through `inert_html` (every
character escaped, our own <mark> the only markup): never Markdown, never its own HTML.
Names in tables, pickers, warnings and headings show their invisible characters (zero-width
spaces, soft hyphens, Hangul fillers, variation selectors...) as escapes (`shown_name`), so two
methods that differ never look alike; answers shown with st.text stay verbatim.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st

from evalcore.analysis.runs import leaderboard as L
from evalcore.analysis.charts.inert import inert_figure, plotly_text, reveal, shown_name  # noqa: F401  (pages use these)
from evalcore.schemas.ids import canonical_id, match_name
from evalcore.common.csv_safety import frame_to_csv
from evalcore.ui.cached_reads import call, store  # noqa: F401  (pages import both from here)


def header(title: str, caption: str) -> None:
    """Page title and one line on what the page is for (our own constant text only)."""
    st.title(title)
    st.caption(caption)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&\"'=^%@/])")
# GFM's literal autolinks (http://…, www.…, a@b.c) ignore backslash escapes, so a URL
# in untrusted text would still become a link; an invisible word joiner breaks the pattern.
_AUTOLINK_START = re.compile(r"(?i)(https?|ftp|www|mailto)(?=\\?[:.])|(?<=@)")
WORD_JOINER = "\u2060"


def md(text: Any) -> str:
    """Untrusted text made inert for the Streamlit elements that render Markdown (warnings,
    infos, captions, button and download labels, subheaders): every ASCII punctuation mark
    that Markdown, Streamlit's :color[] directives, KaTeX ($) or autolinks could use is
    backslash-escaped, line breaks become spaces and invisible characters escapes
    (`shown_name`), so a value shows as the characters it is and nothing in it links, loads an
    image, colours or typesets. URL and e-mail beginnings also get an invisible word joiner:
    GFM autolinks them whatever the escapes."""
    text = shown_name(_ASCII_SPACE_RUN.sub(" ", str(text)).strip(" "))
    text = _AUTOLINK_START.sub(lambda m: m.group(0) + WORD_JOINER, text)
    return _MD_SPECIAL.sub(r"\\\1", text)


_ASCII_SPACE_RUN = re.compile("[ \t\n\r\x0b\x0c]+")


def _warn_dropped(param: str, value: Any, why: str) -> None:
    st.warning(f"Ignored URL parameter {md(param)}={md(repr(str(value)[:80]))}: {md(why)}.")


def _url_choice(raw: str, by_text: dict[str, Any]) -> str | None:
    """The option a URL value names under the id rule (evalcore.schemas.ids: NFC, no outer
    spaces), so `?method=alpha` opens a method stored as "alpha " by an older evalcore; for a
    `run:method` key the rule applies to the method part too. None when no option matches."""
    found = match_name(raw, by_text)
    if found is None and ":" in raw:
        run, _, method = raw.partition(":")
        found = next((k for k in by_text if k.partition(":")[0] == canonical_id(run)
                      and match_name(method, [k.partition(":")[2]]) is not None), None)
    return found


def _shown(format_func: Callable[[Any], str]) -> Callable[[Any], str]:
    """A picker's labels as names are shown (`shown_name`): invisible characters as escapes."""
    return lambda option: shown_name(format_func(option))


def url_select(label: str, options: Sequence[Any], param: str, *, format_func: Callable[[Any], str] = str,
               default: Any = None, help: str | None = None, container: Any = st) -> Any:
    """A selectbox bound to query parameter `param` (validated against `options`)."""
    options = list(options)
    if not options:
        return None
    key = f"url_{param}"
    if key not in st.session_state or st.session_state[key] not in options:
        raw = st.query_params.get(param)
        by_text = {str(o): o for o in options}
        if raw is not None:  # a name in the URL means what it means when typed (_url_choice)
            raw = _url_choice(raw, by_text)
            if raw is None:
                _warn_dropped(param, st.query_params.get(param), "not one of the available choices")
        st.session_state[key] = by_text.get(raw) if raw is not None else (
            default if default in options else options[0])
    value = container.selectbox(label, options, key=key, format_func=_shown(format_func), help=help)
    # The default stays out of the URL so links stay short; reading it back gives the same view.
    set_param(param, None if value == (default if default in options else options[0]) else value)
    return value


def url_multi(label: str, options: Sequence[Any], param: str, *, default: Sequence[Any] = (),
              format_func: Callable[[Any], str] = str, help: str | None = None, container: Any = st) -> list:
    """A multiselect bound to a repeated query parameter (`?m=a&m=b`)."""
    options = list(options)
    key = f"url_{param}"
    if key not in st.session_state:
        raw = st.query_params.get_all(param)
        by_text = {str(o): o for o in options}
        bad = [r for r in raw if _url_choice(r, by_text) is None]
        if bad:
            _warn_dropped(param, ", ".join(bad), "not available here")
        picked = [_url_choice(r, by_text) for r in raw]
        chosen = [by_text[r] for r in picked if r is not None] if raw else [d for d in default if d in options]
        st.session_state[key] = list(dict.fromkeys(chosen))
    else:
        st.session_state[key] = [v for v in st.session_state[key] if v in options]
    value = container.multiselect(label, options, key=key, format_func=_shown(format_func), help=help)
    set_param(param, value)
    return value


def url_text(label: str, param: str, *, max_len: int = 200, help: str | None = None, container: Any = st) -> str:
    key = f"url_{param}"
    if key not in st.session_state:
        st.session_state[key] = (st.query_params.get(param) or "")[:max_len]
    value = container.text_input(label, key=key, max_chars=max_len, help=help)
    set_param(param, value or None)
    return value


def _parse_number(raw: str | None, lo: float, hi: float) -> float | None:
    try:
        value = float(raw) if raw not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and lo <= value <= hi else None


def url_number(label: str, param: str, *, lo: float, hi: float, default: float | None = None,
               help: str | None = None, container: Any = st) -> float | None:
    """A number typed into a text box, bound to `param`; non-numbers and out-of-range values
    are dropped with a note. (A text box rather than st.number_input: the latter never
    finishes rendering under headless Chromium's virtual time, which the browser test uses.)"""
    key = f"url_{param}"
    if key not in st.session_state:
        raw = st.query_params.get(param)
        if raw is not None and _parse_number(raw, lo, hi) is None:
            _warn_dropped(param, raw, f"expected a number in [{lo:g}, {hi:g}]")
            raw = None
        st.session_state[key] = raw if raw is not None else ("" if default is None else f"{default:g}")
    text = container.text_input(label, key=key, max_chars=32, help=help)
    value = _parse_number(text, lo, hi)
    if text and value is None:
        container.warning(f"{label}: expected a number in [{lo:g}, {hi:g}].")
    set_param(param, None if value is None else f"{value:g}")
    return value


def url_int(param: str, lo: int, hi: int, default: int = 0) -> int:
    """An integer query parameter (e.g. the question index), clamped into [lo, hi]."""
    raw = st.query_params.get(param)
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        _warn_dropped(param, raw, "expected an integer")
        value = default
    return max(lo, min(hi, value))


def set_param(param: str, value: Any) -> None:
    """Write one query parameter (lists become repeated keys; empty removes it)."""
    if value is None or value == "" or value == []:
        if param in st.query_params:
            del st.query_params[param]
        return
    new = [str(v) for v in value] if isinstance(value, (list, tuple)) else str(value)
    if st.query_params.get_all(param) != (new if isinstance(new, list) else [new]):
        st.query_params[param] = new


MISSING = "–"  # how every table shows a missing value (Streamlit's default reads "None")


def dataframe(data: Any, **kwargs: Any) -> Any:
    """st.dataframe as every page draws one: no index, missing values read "–" (the one
    convention, docs/dashboard.md). Cell text stays inert (the grid renders no Markdown/HTML),
    and its invisible characters show as escapes (`shown_frame`; a Styler's frame must be made
    with it before styling, as `show_table` does)."""
    kwargs.setdefault("hide_index", True)
    kwargs.setdefault("placeholder", MISSING)
    return st.dataframe(shown_frame(data) if isinstance(data, pd.DataFrame) else data, **kwargs)


def shown_frame(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with the control and invisible characters of its text cells and column names shown
    as escapes (`shown_name`: a grid cell is one line, and tables are where names are told
    apart; answers are read verbatim through `untrusted`); `df` itself when it holds none, so a
    page's styler and column settings see the frame they were made for."""
    text_cols = [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype)]
    changed = {c: df[c].map(lambda v: shown_name(v) if isinstance(v, str) else v) for c in text_cols}
    changed = {c: col for c, col in changed.items() if not col.equals(df[c])}
    names = {c: shown_name(c) for c in df.columns if isinstance(c, str) and shown_name(c) != c}
    if not changed and not names:
        return df
    out = df.copy()
    for c, col in changed.items():
        out[c] = col
    return out.rename(columns=names)


def show_table(df: pd.DataFrame, name: str, *, key: str | None = None,
               style: Callable[[pd.DataFrame], Any] | None = None, **kwargs: Any) -> None:
    """A dataframe (text rendered inert) plus a CSV download of exactly what is shown, written by
    the one CSV writer (cells a spreadsheet would run as formulas are guarded, as in every CSV
    evalcore writes). `style(df)` may return a pandas Styler (colours only; text stays as it is);
    it is given the frame as shown (`shown_frame`), the download keeps the exact text."""
    dataframe(style(shown_frame(df)) if style else df, **kwargs)
    st.download_button(f"Download {md(name)} (CSV)", frame_to_csv(df).encode("utf-8"), file_name=f"{name}.csv",
                       mime="text/csv", key=key or f"dl_{name}", on_click="ignore")


def untrusted(label: str, text: Any) -> None:
    """Show untrusted text verbatim: a fixed caption, then the text as plain text. A missing
    value reads "(none)" and an empty string "(empty)", so neither looks like a rendering gap."""
    st.caption(label)
    if text is None or (isinstance(text, float) and math.isnan(text)):
        st.text("(none)")
    else:
        st.text(str(text) if str(text) else "(empty)")


def empty_state(what: str, hint: str) -> None:
    st.info(md(f"{what} {hint}"))


def pick_systems(label: str, how_many: int) -> tuple[list[str], dict[str, str]] | None:
    """The page's system picker (run:method keys in `?sys=`), defaulting to the methods of the
    most recent scored run (never two runs of different datasets unless picked), at most
    `how_many`: (picked keys, key -> display label). None (after an empty state) when the store
    has no runs yet."""
    sys_df = call(L.systems)
    if sys_df.empty:
        empty_state("No runs yet.", "Import or launch one first.")
        return None
    labels = dict(zip(sys_df.run_id + ":" + sys_df.method, sys_df.label))
    keys = list(labels)
    pool = sys_df[sys_df.has_metrics] if sys_df.has_metrics.any() else sys_df  # newest run first
    sizes = pool.groupby("run_id", sort=False).size()
    # the newest scored run with enough methods to fill the picker (2 to compare), else the newest
    enough = [r for r, n in sizes.items() if n >= min(how_many, 2)]
    newest = enough[0] if enough else pool.run_id.iloc[0]
    default = [k for k in keys if k.partition(":")[0] == newest][:how_many]
    return url_multi(label, keys, "sys", default=default, format_func=labels.get), labels


def short_labels(keys: Sequence[str], labels: dict[str, str] | None = None) -> dict[str, str]:
    """Short display labels for `run_id:method` keys (the method alone within one run)."""
    from evalcore.ui.wording import short_system_labels

    runs = call(L.run_list)
    return short_system_labels(list(keys), dict(zip(runs.run_id, runs.name)))


# ---- highlighted untrusted text: the one escaping helper --------------------------------------
# The classes our own <mark> elements may carry (CSS in HIGHLIGHT_CSS); nothing else is markup.
MARK_CLASSES = frozenset({"supported", "unsupported", "unjudged", "cited", "match"})
HIGHLIGHT_CSS = (
    "<style>.ec-text{white-space:pre-wrap;overflow-wrap:anywhere;line-height:1.5;margin:0 0 .4rem 0;"
    "font-size:.95rem}.ec-text mark,.ec-text b.chip{padding:0 .1em;border-radius:.2em;color:inherit}"
    ".supported{background:#c7ebd0}.unsupported{background:#f9c7c4;text-decoration:underline wavy #b2182b}"
    ".unjudged{background:#e4e4e4}.cited{background:#fde68a}.match{background:#bfdbfe}"
    ".ec-text small{color:#666}</style>")


def _escape_table() -> dict[int, str]:
    """Every ASCII character that HTML, Markdown, KaTeX ($), Streamlit directives (:x[]) or an
    autolink could read as syntax becomes a numeric character reference (shown as itself, read
    as nothing); a line break becomes <br> (so the text holds no raw newline a Markdown block
    could start after); tabs stay tabs."""
    table = {ord(c): f"&#{ord(c)};" for c in map(chr, range(33, 127)) if not c.isalnum()}
    table.update({ord("\n"): "<br>", ord("\r"): "", ord("\t"): "&#9;"})
    return table


_ESCAPES = _escape_table()


def _visible(ch: str) -> str:
    """A control or invisible character (bidi overrides, zero-width joiners, line separators...)
    shown as its code point, so it can neither reorder nor hide the text around it."""
    return f"[U+{ord(ch):04X}]"


def inert_html(text: Any, spans: Sequence[tuple[int, int, str, str]] = ()) -> str:
    """Untrusted text as HTML that renders as exactly its characters, plus our own highlights.

    `spans` are (start, end, css class, title) over `text` (from evalcore.analysis.questions.highlight):
    each becomes `<mark class=... title=...>`; the class must be one of MARK_CLASSES and the
    title is escaped like the text. Every other character of `text` is escaped: html.escape
    (quote=True) semantics for & < > " ', and beyond it every ASCII punctuation mark as a
    numeric reference, so the result stays inert under Markdown too (links, images, `code`,
    $LaTeX$, **emphasis**, :colour[] directives, autolinks); control and bidi characters are
    shown as their code points. Overlapping or out-of-range spans are dropped, never trusted."""
    s = "" if text is None or (isinstance(text, float) and math.isnan(text)) else str(text)
    out, pos = [], 0
    for start, end, css, title in sorted(spans, key=lambda sp: (sp[0], sp[1])):
        if css not in MARK_CLASSES:
            raise ValueError(f"unknown highlight class {css!r}")
        if not (pos <= start < end <= len(s)):
            continue
        out += [_escape(s[pos:start]), f'<mark class="{css}" title="{_escape(title)}">',
                _escape(s[start:end]), "</mark>"]
        pos = end
    out.append(_escape(s[pos:]))
    return "".join(out)


def _escape(s: str) -> str:
    """html.escape(s, quote=True) widened: & < > " ' and every other ASCII punctuation mark become
    numeric references (html.unescape gives the text back), controls become visible code points."""
    return reveal(s, _visible, single_line=False).translate(_ESCAPES)


def untrusted_heading(text: Any) -> None:
    """A heading whose words are data (a method or run name): through inert_html, so it reads
    exactly as stored (Markdown would need the autolink breaks of `md`, which change the text)."""
    st.html(f'{HIGHLIGHT_CSS}<h4 class="ec-heading" style="margin:0.4rem 0 0.2rem">{inert_html(text)}</h4>')


def highlighted(label: str, text: Any, spans: Sequence[tuple[int, int, str, str]] = (), *,
                note: str | None = None) -> None:
    """A fixed caption (ours, never data: it is rendered as Markdown), then untrusted text with
    highlights, rendered through inert_html only. A missing value reads "(none)" and an empty one
    "(empty)", as in `untrusted`."""
    if label:
        st.caption(label)
    if text is None or (isinstance(text, float) and math.isnan(text)):
        body = "<small>(none)</small>"
    elif not str(text):
        body = "<small>(empty)</small>"
    else:
        body = inert_html(text, spans)
    extra = f"<br><small>{inert_html(note)}</small>" if note else ""
    st.html(f'{HIGHLIGHT_CSS}<div class="ec-text">{body}{extra}</div>')
