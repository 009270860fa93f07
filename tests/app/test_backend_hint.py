"""ui/backend_hint.py: the HTML page of a page path gets one inline script naming the server's
base path; every other response passes through byte for byte.

The middleware is run around a small Starlette app that answers like Streamlit's static
handler (its index.html for any path, with validators and byte ranges; hashed assets; _stcore
endpoints) behind Streamlit's own gzip. The browser side of the hint (what the script computes
from a URL) and a real server under a base path are checked in headless Chromium by
test_browser.py.
"""

from __future__ import annotations

import pytest

from tests.optional import requires

requires("starlette", "the dashboard's st.App middleware runs under Starlette (Streamlit >= 1.57 installs it)")
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.middleware.gzip import GZipMiddleware  # noqa: E402
from starlette.responses import PlainTextResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from evalcore.ui.backend_hint import BackendBaseHint, hint_script, page_of, with_hint  # noqa: E402

PAGE = ('<!DOCTYPE html><html><head><title>Streamlit</title>'
        '<script type="module" crossorigin src="./static/js/index.abc.js"></script></head>'
        '<body>' + "x" * 3000 + '</body></html>').encode()
PAGES = ["compare", "questions"]
seen: list[dict] = []  # what the app behind the middleware was asked


def _app(page: bytes = PAGE, base: str = "") -> Starlette:
    async def html(request):
        seen.append({"method": request.method, "headers": dict(request.headers),
                     "extensions": dict(request.scope.get("extensions") or {})})
        headers = {"etag": '"v1"', "last-modified": "Thu, 26 Nov 2026 12:40:35 GMT", "accept-ranges": "bytes",
                   "content-type": "text/html; charset=utf-8"}
        if request.headers.get("if-none-match") == '"v1"':
            return Response(status_code=304, headers=headers)
        if request.headers.get("range") == "bytes=100-":
            return Response(page[100:], status_code=206, headers=headers)
        return Response(page if request.method != "HEAD" else b"", headers={**headers, "content-length": str(len(page))})

    async def asset(request):
        return PlainTextResponse("console.log(1)" * 200, media_type="text/javascript")

    async def health(request):
        return PlainTextResponse("ok")

    routes = [Route("/_stcore/health", health), Route("/static/js/{name}", asset),
              Route("/{path:path}", html, methods=["GET", "HEAD", "POST"])]
    # the hint outermost, Streamlit's own gzip inside it: as st.App(middleware=...) orders them
    return Starlette(routes=routes, middleware=[
        Middleware(BackendBaseHint, page_paths=PAGES, base_url_path=lambda: base),
        Middleware(GZipMiddleware, minimum_size=500)])


def test_a_page_path_gets_its_hint_just_before_the_bundle():
    client = TestClient(_app())
    for page in PAGES:
        got = client.get(f"/{page}?sys=a&sys=b", headers={"accept-encoding": "gzip"})
        assert got.status_code == 200
        assert got.headers.get("content-encoding") is None  # asked uncompressed: the body is edited
        assert int(got.headers["content-length"]) == len(got.content)
        assert got.content == with_hint(PAGE, hint_script(page))
        assert got.text.index("window.__streamlit") < got.text.index('<script type="module"')
        assert got.text.count("<script>") == 1


def test_the_edited_page_is_whole_and_carries_no_validators_of_the_file():
    """A 304 or a byte range of the unedited file would not fit the edited page: the request
    loses those headers, the response the file's validators; HEAD tells the edited length."""
    client = TestClient(_app())
    seen.clear()
    got = client.get("/compare", headers={"if-none-match": '"v1"', "range": "bytes=100-", "if-range": '"v1"'})
    assert got.status_code == 200 and got.content == with_hint(PAGE, hint_script("compare"))
    assert not {"if-none-match", "range", "if-range", "accept-encoding"} & set(seen[-1]["headers"])
    assert not {"etag", "last-modified", "accept-ranges"} & set(got.headers)
    head = client.head("/compare")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(got.content)


def test_the_app_cannot_hand_the_server_a_file_to_send_unedited():
    """Under an ASGI server offering http.response.pathsend, Starlette sends a FileResponse by
    path (no body to edit): the page request goes on without that extension."""
    app = _app()

    async def server_with_pathsend(scope, receive, send):
        await app({**scope, "extensions": {"http.response.pathsend": {}, "other": {}}}, receive, send)

    client = TestClient(server_with_pathsend)
    seen.clear()
    client.get("/compare")
    assert seen[-1]["extensions"] == {"other": {}}
    client.get("/")
    assert "http.response.pathsend" in seen[-1]["extensions"]  # not a page path: untouched


def test_everything_else_passes_through_untouched():
    client = TestClient(_app())
    for path in ("/", "/anything", "/compare/x", "/team/compare", "/Compare"):
        seen.clear()
        got = client.get(path, headers={"accept-encoding": "gzip", "if-none-match": '"other"'})
        assert got.content == PAGE and got.headers["etag"] == '"v1"', path
        assert got.headers["content-encoding"] == "gzip", path  # Streamlit's compression still applies
        assert seen[-1]["headers"]["if-none-match"] == '"other"', path
    asset = client.get("/static/js/index.abc.js", headers={"accept-encoding": "gzip"})
    assert asset.headers["content-encoding"] == "gzip" and b"__streamlit" not in asset.content
    assert client.get("/_stcore/health").text == "ok"
    assert client.post("/compare").content == PAGE  # only GET and HEAD pages are edited


def test_under_a_base_path_only_the_pages_below_it_are_hinted():
    """server.baseUrlPath = "compare": /compare/ is then the root page (never hinted: it was
    once told its base was "/" and probed the wrong server path forever), /compare/questions a page."""
    client = TestClient(_app(base="compare"))
    assert client.get("/compare").content == PAGE
    assert client.get("/compare/compare").content == with_hint(PAGE, hint_script("compare"))
    assert client.get("/compare/questions").content == with_hint(PAGE, hint_script("questions"))
    assert client.get("/questions").content == PAGE  # outside the base


def test_page_of_reads_the_path_below_every_base():
    assert page_of("/compare", ("", ""), PAGES) == "compare"
    assert page_of("/", ("", ""), PAGES) is None
    assert page_of("/compare/", ("", ""), PAGES) is None  # Streamlit redirects it first
    assert page_of("/dash/compare", ("", "dash"), PAGES) == "compare"
    assert page_of("/dash/compare", ("", "/dash/"), PAGES) == "compare"
    assert page_of("/dash", ("", "dash"), PAGES) is None
    assert page_of("/dashboard/compare", ("", "dash"), PAGES) is None
    assert page_of("/proxy/dash/questions", ("/proxy", "dash"), PAGES) == "questions"
    assert page_of("/compare", ("", "compare"), PAGES) is None


def test_a_page_without_streamlit_bundle_tag_is_served_unchanged():
    other = b"<html><head></head><body>" + b"y" * 600 + b"</body></html>"
    assert TestClient(_app(other)).get("/compare").content == other
    assert with_hint(b"<html></html>", hint_script("compare")) == b"<html></html>"


def test_the_script_holds_only_a_plain_page_name():
    assert "const page='compare'" in hint_script("compare").decode()
    for bad in ("</script><img src=x>", "a'b", "a/b", ""):
        with pytest.raises(ValueError, match="page url path"):
            hint_script(bad)
    with pytest.raises(ValueError, match="page url path"):
        BackendBaseHint(lambda *a: None, page_paths=["compare", "x'y"])
