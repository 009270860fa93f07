"""Charts page as app.py's navigation runs it from a checkout; the page is evalcore.ui.charts.

evalcore/ui/entry.py holds the one page list; `evalcore app` (an install) registers
evalcore/ui/charts.py itself, a checkout's app.py this wrapper. Either way only render() draws.
"""

from evalcore.ui.entry import run_page
from evalcore.ui.charts import render

run_page(render)
