"""Annotate page as app.py's navigation runs it from a checkout; the page is evalcore.ui.annotate.

evalcore/ui/entry.py holds the one page list; `evalcore app` (an install) registers
evalcore/ui/annotate.py itself, a checkout's app.py this wrapper. Either way only render() draws.
"""

from evalcore.ui.entry import run_page
from evalcore.ui.annotate import render

run_page(render)
