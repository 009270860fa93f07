"""What `evalcore app` serves: the dashboard (entry.py) as an st.App with one middleware.

Why not `streamlit run entry.py` directly: a deep link to any page but the root made
Streamlit's front end probe a wrong server path and wait 100 ms before its page could start
(see backend_hint.py). st.App is Streamlit's documented way to add ASGI middleware;
`streamlit run` on this file finds `app` and serves it with the same flags (address, port,
headless, no file watcher), the same pages, URLs and sessions. Where the installed Streamlit
has no st.App, `evalcore app` runs entry.py as before (cli/app_commands.app_script).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from evalcore.ui import warm
from evalcore.ui.backend_hint import BackendBaseHint
from evalcore.ui.entry import PAGES, page_file

HERE = Path(__file__).resolve().parent
# `streamlit run` put this folder on sys.path to import this file as `served`; our modules
# there (cache, charts, ...) must not shadow top-level names (entry.py says the same).
if str(HERE) in sys.path:
    sys.path.remove(str(HERE))

app = st.App(str(HERE / "entry.py"),
             middleware=[Middleware(BackendBaseHint, page_paths=[url for _, _, url in PAGES if url],
                                    base_url_path=lambda: st.config.get_option("server.baseUrlPath"))])

# the first visitor's work done at server start, in the background: the pages' imports, Plotly's
# figure classes, the store's views, the compiled scripts and the first page's reads (ui/warm.py)
warm.preload([page_file(module) for module, _, _ in PAGES], scripts=[HERE / "entry.py"])
