"""Tell the dashboard's front end where its server lives, so a deep link starts its page sooner.

Why: Streamlit's front end does not know its server's base path. Opened at /compare, it
first asks /compare/_stcore/health (404: /compare is a page, not a base path), waits its
fixed 100 ms retry delay, then asks /_stcore/health. Every link to a page other than the
root paid that, before our script could even start (0.12-0.16 s of a ~1.4 s cold load).

Streamlit reads an optional `window.__streamlit = {BACKEND_BASE_URL: ...}` set before its
bundle runs. This ASGI middleware adds one small inline script to the HTML page Streamlit
serves for a page path, and only there: the request's path, below the server's own base
(ASGI root_path, then Streamlit's server.baseUrlPath), must be exactly `/<one of our page
url paths>`. The script names the browser's path minus that last segment as the base, so a
proxy that adds a prefix keeps working (/team/compare -> /team/). The root page, unknown
paths, assets, _stcore endpoints and every other response pass through untouched, and are
left to Streamlit's own probing.

The edited page is a new document, so the request loses its conditional and range headers
(a 304 or a byte range of the unedited file would not fit it) and its Accept-Encoding (the
body is edited uncompressed; it is ~8 KB), and the response loses the file's validators.
HEAD answers with the edited length. Pure ASGI, no Streamlit import: evalcore/ui/served.py
mounts it with st.App(middleware=...). The script holds only our page name (letters,
digits, '-' and '_', checked); no request data is echoed.
"""

from __future__ import annotations

import re
from typing import Any, Awaitable, Callable, Iterable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_MODULE_SCRIPT = b'<script type="module"'
_PAGE_NAME = re.compile(r"[A-Za-z0-9_-]+")
# request headers that ask for something other than the whole edited page
_DROPPED_REQUEST = {b"accept-encoding", b"range", b"if-range", b"if-none-match", b"if-modified-since"}
# response headers that describe the unedited file
_DROPPED_RESPONSE = {b"content-length", b"etag", b"last-modified", b"accept-ranges"}
# ASGI extensions that would let the app send the file without a body we can edit
_DROPPED_EXTENSIONS = ("http.response.pathsend", "http.response.zerocopysend")


def hint_script(page: str) -> bytes:
    """The inline <script> for a request of `page`: the browser's path without its last segment
    `page` becomes window.__streamlit.BACKEND_BASE_URL (nothing is set if the path does not
    end in `page`, or if something already set window.__streamlit)."""
    if not _PAGE_NAME.fullmatch(page):  # it is written into a <script>: only plain names
        raise ValueError(f"page url path {page!r}: expected letters, digits, '-' or '_'")
    return ("<script>(()=>{const page='" + page + "';"
            "const path=location.pathname.replace(/\\/+$/,'');"
            "if(!window.__streamlit&&path.endsWith('/'+page))"
            "window.__streamlit={BACKEND_BASE_URL:location.origin+path.slice(0,path.length-page.length)};"
            "})()</script>").encode()


def with_hint(html: bytes, script: bytes) -> bytes:
    """`html` with `script` just before Streamlit's module script (the bundle reads the hint
    when it loads); unchanged when that tag is not there (a Streamlit that serves its page
    differently then simply probes as before)."""
    at = html.find(_MODULE_SCRIPT)
    return html if at < 0 else html[:at] + script + html[at:]


def page_of(path: str, bases: Iterable[str], pages: Iterable[str]) -> str | None:
    """Which of `pages` the request path names below the server's `bases` (outermost first:
    ASGI root_path, then Streamlit's baseUrlPath), or None (the root page, any other path)."""
    for base in bases:
        base = "/" + base.strip("/") if base.strip("/") else ""
        if base:
            if path != base and not path.startswith(base + "/"):
                return None
            path = path[len(base):]
    return next((p for p in pages if path == "/" + p), None)


class BackendBaseHint:
    """ASGI middleware: the hint in the HTML page of a page path, all else passed through."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], page_paths: Iterable[str],
                 base_url_path: Callable[[], str | None] = lambda: ""):
        self.app = app
        self.pages = tuple(p for p in page_paths if p)
        for page in self.pages:
            hint_script(page)  # a name that could not be written into the script fails here, at start
        self.base_url_path = base_url_path  # read per request: Streamlit's config may change it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        page = None
        if scope["type"] == "http" and scope.get("method") in ("GET", "HEAD"):
            page = page_of(scope.get("path", ""), (scope.get("root_path", ""), self.base_url_path() or ""),
                           self.pages)
        if page is None:
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        extensions = {k: v for k, v in (scope.get("extensions") or {}).items() if k not in _DROPPED_EXTENSIONS}
        scope = {**scope, "method": "GET", "extensions": extensions,
                 "headers": [(k, v) for k, v in scope.get("headers", []) if k.lower() not in _DROPPED_REQUEST]}
        script = hint_script(page)
        start: Message | None = None
        body = bytearray()

        async def edit(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                if (message.get("status") == 200 and b"content-encoding" not in headers
                        and headers.get(b"content-type", b"").startswith(b"text/html")):
                    start = message  # held until the whole body is here
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.extend(message.get("body", b""))
                if message.get("more_body"):
                    return
                edited = with_hint(bytes(body), script)
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in _DROPPED_RESPONSE]
                await send({**start, "headers": [*headers, (b"content-length", str(len(edited)).encode())]})
                await send({"type": "http.response.body", "body": b"" if head else edited})
                return
            elif message["type"] == "http.response.body" and head:
                message = {**message, "body": b""}  # not ours to edit: still a HEAD's empty body
            await send(message)

        await self.app(scope, receive, edit)
