"""ui/backend_hint.py: the HTML page gets one inline script naming the server's base path;
every other response passes through byte for byte.

The middleware is run around a small Starlette app that answers like Streamlit's static
handler (an HTML page for any page path, hashed assets, _stcore endpoints); the browser side
of the hint (what the script computes from a URL) is checked in headless Chromium by
test_browser.py::test_deep_link_asks_the_right_server_path_first.
"""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.middleware.gzip import GZipMiddleware  # noqa: E402
from starlette.responses import HTMLResponse, PlainTextResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from evalcore.ui.backend_hint import BackendBaseHint, hint_script, with_hint  # noqa: E402

PAGE = ('<!DOCTYPE html><html><head><title>Streamlit</title>'
        '<script type="module" crossorigin src="./static/js/index.abc.js"></script></head>'
        '<body>' + "x" * 3000 + '</body></html>')
SCRIPT = hint_script(["compare", "questions"])


def _app(page: str = PAGE) -> Starlette:
    async def html(request):
        if request.headers.get("if-none-match") == '"v1"':
            return Response(status_code=304, headers={"etag": '"v1"', "content-type": "text/html"})
        return HTMLResponse(page, headers={"etag": '"v1"'})

    async def asset(request):
        return PlainTextResponse("console.log(1)" * 200, media_type="text/javascript")

    async def health(request):
        return PlainTextResponse("ok")

    routes = [Route("/_stcore/health", health), Route("/static/js/{name}", asset), Route("/{path:path}", html, methods=["GET", "HEAD", "POST"])]
    # the hint outermost, Streamlit's own gzip inside it: as st.App(middleware=...) orders them
    return Starlette(routes=routes, middleware=[Middleware(BackendBaseHint, page_paths=["compare", "questions"]),
                                                Middleware(GZipMiddleware, minimum_size=500)])


def test_every_page_path_gets_the_hint_just_before_the_bundle():
    client = TestClient(_app())
    for path in ("/", "/compare", "/questions", "/anything"):
        got = client.get(path, headers={"accept-encoding": "gzip"})
        assert got.status_code == 200
        assert got.headers.get("content-encoding") is None  # asked uncompressed: the body is edited
        assert int(got.headers["content-length"]) == len(got.content)
        assert got.content == with_hint(PAGE.encode(), SCRIPT)
        assert got.text.index("window.__streamlit") < got.text.index('<script type="module"')
        assert got.text.count("<script>") == 1


def test_everything_else_passes_through_untouched():
    client = TestClient(_app())
    asset = client.get("/static/js/index.abc.js", headers={"accept-encoding": "gzip"})
    assert asset.headers["content-encoding"] == "gzip"  # Streamlit's compression still applies
    assert asset.text == "console.log(1)" * 200 and b"__streamlit" not in asset.content
    assert client.get("/_stcore/health").text == "ok"
    assert client.post("/compare").content == PAGE.encode()  # only GET pages are edited
    not_modified = client.get("/compare", headers={"if-none-match": '"v1"'})
    assert not_modified.status_code == 304 and not_modified.content == b""


def test_a_page_without_streamlit_bundle_tag_is_served_unchanged():
    other = "<html><head></head><body>" + "y" * 600 + "</body></html>"
    assert TestClient(_app(other)).get("/compare").text == other
    assert with_hint(b"<html></html>", SCRIPT) == b"<html></html>"


def test_the_script_holds_only_our_page_names():
    script = hint_script(["compare", "</script><img src=x>"]).decode()
    assert "</script><img" not in script and "\\u003c/script>" in script
    assert script.count("</script>") == 1 and script.startswith("<script>")
