"""Retake the dashboard screenshots in docs/img/ with headless Chromium against what `evalcore app` serves.

    python scripts/screenshots.py                 # a seeded synthetic store of 3 runs x 60 questions
    python scripts/screenshots.py --store DIR     # or any store you want shown

Why a script: the images in docs/dashboard.md must show the pages as they are now, so
retaking them after a UI change is one command. It drives Chromium the way the browser test
does (tests/app/test_browser.py: the DevTools protocol, waiting in real time for each page's
title, since a virtual-time budget often stops at Streamlit's loading skeleton), then scales
each image to 1050 px wide. Binds 127.0.0.1 only. Needs the dev extras and Debian chromium.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name -> (url path with query, page title); the queries show each journey's main view
PAGES = {"runs": ("", "Runs"), "launch": ("launch", "Launch"), "questions": ("questions?qid=q00002", "Questions"),
         "grid": ("questions?view=grid&gm=token_f1", "Questions"), "compare": ("compare", "Compare"),
         "charts": ("charts", "Charts"), "annotate": ("annotate?kind=claim&who=annotator", "Annotate")}
WIDTH, HEIGHT = 1400, 1000  # the window the journeys are designed for (decisions above the fold)


def _browser_tools():
    # the browser test imports tests.optional: point `tests` at the checkout's folder (a
    # dependency ships a top-level `tests` package of its own that would shadow it)
    import types

    tests_pkg = types.ModuleType("tests")
    tests_pkg.__path__ = [str(ROOT / "tests")]
    sys.modules["tests"] = tests_pkg
    spec = importlib.util.spec_from_file_location("browser_tools", ROOT / "tests" / "app" / "test_browser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="store to show (default: a fresh synthetic one)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)  # --out may name a folder not made yet
    from PIL import Image

    tools_mod = _browser_tools()
    browser = shutil.which("chromium") or sys.exit("chromium not found (apt-get install -y chromium)")
    work = Path(tempfile.mkdtemp(prefix="evalcore_shots_"))
    try:
        store = Path(args.store) if args.store else work / "runs"
        if not args.store:
            from evalcore.demo.synthetic import build_store

            build_store(store, n_runs=3, n_questions=60)
        with tools_mod.serve_app(store, work / "streamlit.log", installed=True) as base:  # what `evalcore app` serves
            tools = tools_mod.DevTools(browser, work / "profile")
            try:
                tools.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1,
                           mobile=False)
                for path, title in PAGES.values():  # a first pass warms the server and its caches
                    tools.dom_after(f"{base}/{path}", title)
                for name, (path, title) in PAGES.items():
                    dom = tools.dom_after(f"{base}/{path}", title)
                    if not any(h.startswith(title) for h in tools_mod._headings(dom)):
                        sys.exit(f"page {name} did not render")
                    time.sleep(2)  # widgets and charts finish drawing after the title
                    out = Path(args.out) / f"{name}.png"
                    tools.screenshot(out)
                    img = Image.open(out)
                    img.resize((1050, round(img.height * 1050 / img.width)), Image.LANCZOS).save(out, optimize=True)
                    print(f"{name}: {out}")
            finally:
                tools.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
