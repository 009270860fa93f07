"""Tell the dashboard's front end where its server lives, so a deep link starts its page sooner.

Why: Streamlit's front end does not know its server's base path. Opened at /compare, it
first asks /compare/_stcore/health (404: /compare is a page, not a base path), waits its
fixed 100 ms retry delay, then asks /_stcore/health. Every link to a page other than the
root paid that, before our script could even start (0.12-0.16 s of a ~1.4 s cold load).

Streamlit reads an optional `window.__streamlit = {BACKEND_BASE_URL: ...}` set before its
bundle runs. This ASGI middleware adds one small inline script to the HTML page Streamlit
serves for every page path: when the last path segment is one of our page URL paths, it
names the path above it as the base (exactly the front end's own second guess, so a proxy
that adds a prefix keeps working: /prefix/compare -> /prefix/). Any other path (the root,
an unknown path) is left to Streamlit's own probing. Nothing else in the page changes.

Pure ASGI, no Streamlit import: evalcore/ui/served.py mounts it with st.App(middleware=...).
The inserted script holds only our page names (JSON-encoded); no request data is echoed.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Iterable

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# Where Streamlit serves things other than the app's HTML page: never touched.
_NOT_PAGES = ("/_stcore/", "/static/", "/media/", "/component/", "/app/static/")
_MODULE_SCRIPT = b'<script type="module"'


def hint_script(page_paths: Iterable[str]) -> bytes:
    """The inline <script> that sets window.__streamlit.BACKEND_BASE_URL on our pages only."""
    names = json.dumps(sorted(set(page_paths))).replace("<", "\\u003c")  # inert inside <script>
    return ("<script>(()=>{const pages=" + names + ";"
            "const path=location.pathname.replace(/\\/+$/,'');"
            "const last=path.slice(path.lastIndexOf('/')+1);"
            "if(pages.includes(last)&&!window.__streamlit)"
            "window.__streamlit={BACKEND_BASE_URL:location.origin+path.slice(0,path.length-last.length)};"
            "})()</script>").encode()


def with_hint(html: bytes, script: bytes) -> bytes:
    """`html` with `script` just before Streamlit's module script (the bundle reads the hint
    when it loads); unchanged when that tag is not there (a Streamlit that serves its page
    differently then simply probes as before)."""
    at = html.find(_MODULE_SCRIPT)
    return html if at < 0 else html[:at] + script + html[at:]


class BackendBaseHint:
    """ASGI middleware: the hint in every GET that answers with HTML, all else passed through."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], page_paths: Iterable[str]):
        self.app = app
        self.script = hint_script(page_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") != "GET" or any(p in path for p in _NOT_PAGES):
            await self.app(scope, receive, send)
            return
        # The HTML is edited, so it must arrive uncompressed (it is ~8 KB: gzip is not worth it here).
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"]}
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
                edited = with_hint(bytes(body), self.script)
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(edited)).encode())]})
                await send({"type": "http.response.body", "body": edited})
                return
            await send(message)

        await self.app(scope, receive, edit)
