"""Data-derived text made inert for the two renderers that read markup in it: Plotly and HTML.

Why here (in analysis, not in ui/safe_widgets): the dashboard and the standalone HTML report
(evalcore.outputs.html_report, which the CLI writes and the Compare page offers) draw the same
figures from the same names, and the report may not import the dashboard. One definition of
"inert" serves both; evalcore.ui.safe_widgets re-exports these names for the pages.

Invisible characters (zero-width spaces and joiners, soft hyphens, Hangul fillers, variation
selectors, tag characters, spaces other than U+0020: evalcore.common.inert_text's list) are shown as the
terminal shows them (`\\u200b`), so two names that differ never look alike on a page, in a
chart or in the report either. Each string passes once (inert_figure does the figure's labels;
a caller does not escape them again).
"""

from __future__ import annotations

import html
import math
from typing import Any

from evalcore.common.inert_text import escape_code, reveal, visible  # reveal: also the dashboard's inert_html


def shown_name(value: Any) -> str:
    """A name (method, run, metric, category, id) as a page shows it: evalcore.common.inert_text.visible,
    the terminal's one-line spelling (every control and invisible character as its escape,
    newlines included, a backslash that would read as an escape doubled), so two names that
    differ never show alike. Apply it once: its output holds backslashes that a second pass doubles."""
    return visible(value)


def shown_text(value: Any) -> str:
    """Free text (an answer, a context) as the HTML report shows it: like `shown_name`, but
    newlines, tabs and the invisible characters that build an emoji stay."""
    return reveal(value if isinstance(value, str) else str(value), escape_code, single_line=False,
                  mark_backslashes=True)


def plotly_text(value: Any) -> Any:
    """Text Plotly may show, made inert: Plotly renders a subset of HTML in titles, ticks, legends
    and hover text (<b>, <a href>, <span style>), so data-derived strings have &, < and >
    replaced by entities, which Plotly displays as the characters themselves; control and
    invisible characters show as escapes (`shown_name`)."""
    if isinstance(value, str):
        return shown_name(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return value


def _inert_seq(values: Any) -> Any:
    if values is None or isinstance(values, str):
        return plotly_text(values)
    try:
        items = list(values)
    except TypeError:
        return values
    if not any(isinstance(v, str) for v in items):
        return values
    return [plotly_text(v) for v in items]


def inert_figure(fig: Any) -> Any:
    """Every data-derived string of a Plotly figure made inert (see plotly_text): trace names,
    text, hover text, categorical x/y values, legend and axis titles, the figure title."""
    for trace in fig.data:
        for attr in ("name", "legendgroup"):
            if getattr(trace, attr, None) is not None:
                setattr(trace, attr, plotly_text(getattr(trace, attr)))
        for attr in ("text", "hovertext", "x", "y", "labels"):
            if hasattr(trace, attr) and getattr(trace, attr) is not None:
                setattr(trace, attr, _inert_seq(getattr(trace, attr)))
    layout = fig.layout
    if layout.title and layout.title.text:
        layout.title.text = plotly_text(layout.title.text)
    for axis in (layout.xaxis, layout.yaxis):
        if axis and axis.title and axis.title.text:
            axis.title.text = plotly_text(axis.title.text)
    if layout.legend and layout.legend.title and layout.legend.title.text:
        layout.legend.title.text = plotly_text(layout.legend.title.text)
    return fig


def html_text(value: Any) -> str:
    """Untrusted text as HTML that shows exactly its characters (html.escape with quotes, so it
    is safe in element content and in quoted attributes), invisible and control characters shown
    as escapes (`shown_text`: the report's text cells keep their line breaks); a missing value is ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return html.escape(shown_text(value), quote=True)
