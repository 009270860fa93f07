"""The HTTP client evalcore hands the provider SDKs, so a judge reply costs at most its cap.

Why: the anthropic and openai SDKs read a reply whole and leave its Content-Encoding to their
HTTP library (httpx, or httpx2 in later releases), which counts nothing. `ANTHROPIC_BASE_URL`
and `OPENAI_BASE_URL` point anywhere (a self-hosted model, a proxy): a judge server answering
1 KB sent as `Content-Encoding: gzip, gzip` made a 400 MB body, and `evalcore score` went
past 2.3 GB to a MemoryError. Target and embedding replies already went through
evalcore/common/http_body.py; this puts judge replies through it too.

How: each SDK client gets `http_client=judge_http_client(sdk)`. Its transport sends the
request through a client built as the SDK builds its default one (the proxies of the
environment, its connection limits and socket options), with Accept-Encoding naming only the
codings http_body decodes in bounded pieces. It reads the reply raw, decodes it with
http_body under MAX_REPLY_BYTES (the bytes sent and what every decoding layer makes of them
counted as they come), counts its JSON values against the value budget before anything is
parsed, and hands the SDK a plain reply: the decoded body, Content-Encoding removed, so the
SDK's own decoders have nothing left to inflate.

Why 4 MB: a judge answer is small. The longest the judge asks for is a task's reply limit
plus a reasoning model's 16,000 tokens (judges/backends.py), about 64 KB of text (400 KB if
every character came \\u-escaped); 4 MB is ten times that, and at the default 16 requests in
flight at most 64 MB of reply bodies are held at once (what the SDK builds from each is
bounded by the value budget).

The HTTP library logs each request's URL at INFO, and a judge URL may carry its key in the
query (`openai:MODEL@https://host/v1?api_key=...`): the library's logger gets a filter that
masks such values (evalcore/common/secret_urls.py), as targets/fetch.py does for httpx.

A reply past a bound raises http_body.BodyRefused; the SDK wraps it in its connection error
and the backends turn it into a FatalError naming the bound (judges/call_errors.py `classify`):
the same server would send the same reply again, so it is not retried. A streamed reply
(server-sent events) is read whole under the same byte cap before the SDK sees it; its values
are not counted, each event being parsed on its own. evalcore makes no streamed judge calls.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from functools import lru_cache
from typing import Any

from evalcore.common.http_body import BodyRefused, accept_encoding, read_body_async
from evalcore.common.secret_urls import public_url
from evalcore.common.value_budget import TooManyValues, check_json, value_limit

MAX_REPLY_BYTES = 4 * 2 ** 20
REPLY_LABEL = "4 MB (the bound on one judge reply)"
_SENT_AS_IS = ("content-encoding", "content-length", "transfer-encoding")  # not true of the decoded body


def http_library(sdk: Any) -> Any:
    """The HTTP library (httpx or httpx2) `sdk`'s clients are built on, read from the class
    of its default client: the SDKs accept only a client of their own library."""
    for cls in sdk.DefaultAsyncHttpxClient.__mro__:
        if cls.__name__ == "AsyncClient":
            return importlib.import_module(cls.__module__.partition(".")[0])
    raise TypeError(f"{sdk.__name__}'s default client is no AsyncClient")  # no SDK release does this


class _BoundedReplies:
    """The transport's work; `transport_class` joins it to the library's AsyncBaseTransport."""

    library: Any = None

    def __init__(self, sender: Any, max_bytes: int, label: str):
        self.sender = sender  # a client as the SDK's default, sending one hop, never following redirects
        self.max_bytes, self.label = max_bytes, label

    async def handle_async_request(self, request: Any) -> Any:
        request.headers["Accept-Encoding"] = accept_encoding()
        response = await self.sender.send(request, stream=True)
        try:
            body = await read_body_async(response, self.max_bytes, self.label)
        finally:
            await response.aclose()
        if "text/event-stream" not in response.headers.get("content-type", ""):
            try:
                check_json(body, value_limit(), scope="judge reply")
            except TooManyValues as exc:
                raise BodyRefused(f"the reply holds {exc}") from None
            except UnicodeDecodeError as exc:  # counting had to decode it: no JSON text
                raise BodyRefused(f"the reply is not JSON text ({exc.encoding}: {exc.reason})") from None
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _SENT_AS_IS]
        headers.append(("Content-Length", str(len(body))))
        extensions = {k: v for k, v in response.extensions.items() if k in ("http_version", "reason_phrase")}
        # a stream, not `content=`: the client then reads and closes it as a reply from the
        # network (a response built with its content counts as read, and never learns `elapsed`)
        return self.library.Response(response.status_code, headers=headers, stream=self.library.ByteStream(body),
                                     extensions=extensions)

    async def aclose(self) -> None:
        await self.sender.aclose()


@lru_cache(maxsize=None)
def transport_class(library: Any) -> type:
    """A transport class of `library` (its AsyncBaseTransport, so the client treats it as one)."""
    return type("BoundedReplyTransport", (_BoundedReplies, library.AsyncBaseTransport), {"library": library})


class _MaskUrls(logging.Filter):
    """Shows the request URLs a library logs with their secret values masked."""

    def __init__(self, url_type: type):
        super().__init__()
        self.url_type = url_type

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, self.url_type) for a in record.args):
            record.args = tuple(public_url(str(a)) if isinstance(a, self.url_type) else a for a in record.args)
        return True


def mask_logged_urls(library: Any) -> None:
    """Put the URL mask on `library`'s logger, once."""
    logger = logging.getLogger(library.__name__)
    if not any(isinstance(f, _MaskUrls) for f in logger.filters):
        logger.addFilter(_MaskUrls(library.URL))


def judge_http_client(sdk: Any, max_bytes: int = MAX_REPLY_BYTES, label: str = REPLY_LABEL) -> Any:
    """An `http_client` for `sdk` (the anthropic or openai module) whose replies are bounded as
    the module docstring says. Redirects are never followed: the HTTP library strips only
    `Authorization` when a redirect leaves the origin, so Anthropic's `x-api-key` (and any
    key in the query) would go to wherever a judge server points; provider APIs do not
    redirect, and a 3xx is that call's error naming the status."""
    library = http_library(sdk)
    mask_logged_urls(library)
    tls = tls_context(library)
    sender = sdk.DefaultAsyncHttpxClient(follow_redirects=False, verify=tls)
    return sdk.DefaultAsyncHttpxClient(transport=transport_class(library)(sender, max_bytes, label),
                                       follow_redirects=False, verify=tls)


_TLS: dict[tuple[str, str | None, str | None], Any] = {}
_TLS_LOCK = threading.Lock()


def tls_context(library: Any) -> Any:
    """The TLS context `library` builds by default (its CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR
    when set), built once per process and those two variables. Why: each client built it anew,
    loading the whole CA bundle twice per judge opened (~0.07 s each on this machine); an
    SSLContext is meant to be shared by connections and threads, and a changed variable gets
    a context of its own."""
    key = (library.__name__, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _TLS_LOCK:
        context = _TLS.get(key)
        if context is None:
            context = _TLS[key] = library.create_ssl_context()
    return context
