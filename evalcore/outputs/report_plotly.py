"""The Plotly JavaScript the HTML report inlines: the smallest bundle that draws its figures.

Why: the report must open offline with no request, so Plotly's code travels inside the file.
The plotly Python package ships only the full bundle (4.8 MB, every trace type: 3-D, maps,
WebGL...), which made a report of a few kilobytes of numbers a 4.9 MB file. The report draws
bar and scatter traces only, which plotly.js's "basic" partial bundle (bar, pie, scatter;
1.2 MB) draws with the same code: evalcore/assets/plotly-basic.min.js, the npm package
plotly.js-basic-dist-min unmodified (version, checksum and MIT license in evalcore/assets/NOTICE).

Kept in step with the Python package: a figure's JSON is written by plotly.py for the plotly.js
it bundles, so the basic bundle is used only when its version is that one; with another plotly
installed the report inlines that package's full bundle (correct, just larger).
tests/test_report_cli.py fails when the two drift apart in the dev environment, which is the
reminder to fetch the matching basic bundle.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

BASIC_VERSION = "4.1.1"  # evalcore/assets/plotly-basic.min.js
BASIC_TRACES = frozenset({"bar", "pie", "scatter"})
_BASIC_FILE = "plotly-basic.min.js"


def trace_types(fig: Any) -> set[str]:
    """The trace types a figure draws ('scatter' for a trace that names none, as plotly.js takes it)."""
    return {trace.type or "scatter" for trace in fig.data}


def check_drawable(fig: Any) -> None:
    """Refuse a figure the basic bundle cannot draw: plotly.js would leave its div empty without
    an error. A figure of another type needs that trace module in the inlined bundle
    (evalcore/assets/NOTICE says where the bundles come from)."""
    missing = trace_types(fig) - BASIC_TRACES
    if missing:
        raise ValueError(f"the report's Plotly bundle draws {sorted(BASIC_TRACES)} traces, not {sorted(missing)}: "
                         "inline a bundle with those trace modules (evalcore/outputs/report_plotly.py)")


def basic_bundle() -> str:
    """The vendored basic bundle's JavaScript."""
    return (resources.files("evalcore") / "assets" / _BASIC_FILE).read_text(encoding="utf-8")


def plotly_js(installed_version: str | None = None) -> str:
    """The JavaScript to inline: the basic bundle when the installed plotly writes figures for
    its version, else the installed package's full bundle."""
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    version = installed_version if installed_version is not None else get_plotlyjs_version()
    return basic_bundle() if version == BASIC_VERSION else get_plotlyjs()

