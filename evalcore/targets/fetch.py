"""One HTTP exchange with a target, on rules that a hostile or broken server cannot bend.

Why not httpx's own redirect handling and `Response.content`:

* httpx follows a redirect to any origin and strips only `Authorization` on the way, so a
  configured `X-Api-Key` (and the target URL's `?api_key=`) went to whatever server a 307
  named, and that server's answers were stored as the target's. Here a redirect is followed
  only within the target's origin (scheme, host and port). A redirect to another origin is
  refused with that origin named, unless `follow_redirects` is on; even then nothing that was
  configured (headers, URL credentials, the URL's query parameters, cookies) goes there.
* a 301, 302 or 303 turns a POST into a GET without its body (what browsers do): the server
  then answers another request, typically with a 404 that hides the cause. It is refused and
  said as it is.
* `Response.content` reads a body of any size into memory, and httpx inflates each chunk of a
  compressed body whole before anyone can count it (`gzip, gzip`: 2.7 KB became 0.8 GB). Here
  the raw body goes through evalcore's bounded decoders (evalcore/common/http_body.py) and is refused
  once the bytes sent, or what any decoding layer makes of them, pass `max_bytes`. The request
  offers only the codings those decoders read (Accept-Encoding).

Endpoint URLs are built here as well (`EndpointUrls`), because httpx replaces an endpoint's
own query by the client's parameters (`/health?deep=1` lost `deep=1`). The rule: the target
URL's path is a prefix of every endpoint path; the query is the endpoint's own parameters,
then the request's (a GET query's template), then the target URL's parameters whose names
are not there yet. So the most specific value of a parameter wins, and a key in the target
URL goes with every endpoint of that target, never to another origin.
"""

from __future__ import annotations

import asyncio
import json as _json
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterable, Callable
from urllib.parse import parse_qsl, urlsplit

import httpx

from evalcore.common.http_body import BodyTooLarge, BodyUndecodable, accept_encoding, read_raw_async
from evalcore.common.secret_urls import public_url, split_url
from evalcore.targets.transport import Connections, aiohttp_module

REDIRECTS = {301, 302, 303, 307, 308}
MAX_REDIRECTS = 10
DEFAULT_PORTS = {"http": 80, "https": 443}
_NO_BODY = object()


class Refused(Exception):
    """The exchange was stopped on purpose; the message says why, for the user."""


class TooLarge(Refused):
    """The body passed the size cap."""


class Undecodable(Refused):
    """The body's Content-Encoding could not be undone (corrupt, unsupported, stacked too deep)."""


class RedirectRefused(Refused):
    """A redirect this client will not follow (another origin, POST turned GET, a loop...)."""


class ConnectionFailed(Exception):
    """The exchange failed on the way (refused, reset, a reply that is not HTTP, a body cut
    short): "<what failed>: <detail>" as the client library said it."""


_LOG = logging.getLogger("evalcore.targets")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: httpx.Headers
    content: bytes  # as sent, Content-Encoding undone; its charset is read by evalcore/common/reply_charset.py
    url: httpx.URL


def _origin_key(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or DEFAULT_PORTS.get(url.scheme)


def shown_origin(url: httpx.URL) -> str:
    """`scheme://host[:port]`: what a message may name of a URL a server chose."""
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


class EndpointUrls:
    """The full URL of every endpoint of one target (see the module docstring for the rule)."""

    def __init__(self, target_url: str):
        bare, self.params, self.credentials = split_url(target_url)
        self.base = httpx.URL(bare)
        self.origin = _origin_key(self.base)
        self._plain: dict[str, httpx.URL] = {}  # an endpoint's URL without request parameters, built once

    def __call__(self, path: str, extra: dict[str, Any] | None = None) -> httpx.URL:
        if not extra:
            url = self._plain.get(path)
            if url is None:
                url = self._plain[path] = self._build(path, None)
            return url
        return self._build(path, extra)

    def _build(self, path: str, extra: dict[str, Any] | None) -> httpx.URL:
        endpoint = urlsplit(path)
        prefix = self.base.path.rstrip("/")
        joined = f"{prefix}/{endpoint.path.lstrip('/')}" if endpoint.path else (prefix or "/")
        pairs = parse_qsl(endpoint.query, keep_blank_values=True)
        if extra:
            pairs += httpx.QueryParams(extra).multi_items()
        return self.with_target_params(self.base.copy_with(path=joined), pairs)

    def with_target_params(self, url: httpx.URL, pairs: list[tuple[str, str]] | None = None) -> httpx.URL:
        """`url` with the target URL's query parameters added where its query lacks the name."""
        pairs = list(url.params.multi_items()) if pairs is None else pairs
        names = {name for name, _ in pairs}
        pairs += [(name, value) for name, value in self.params if name not in names]
        return url.copy_with(params=pairs) if pairs else url

    def is_home(self, url: httpx.URL) -> bool:
        return _origin_key(url) == self.origin


class LargeReplies:
    """One large reply at a time per target: a reply whose body passes LARGE_REPLY_BYTES waits
    here before it grows further, and holds its turn until it is parsed (`Turn.release`).

    Why: the cap bounds one reply, not the lanes together, and a reply costs several times its
    size while it is decoded and parsed (a 32 MB answer with one character outside the BMP is a
    128 MB Python string, twice): eight lanes each reading one took 1.4 GB. Small replies never
    wait; a wait counts against the request's own timeout."""

    def __init__(self):
        self._lock = asyncio.Lock()

    def turn(self) -> "Turn":
        return Turn(self._lock)


class Turn:
    """One request's claim on its target's large-reply turn (taken only when needed)."""

    def __init__(self, lock: asyncio.Lock):
        self._lock = lock
        self.held = False

    async def pace(self, kept: int) -> None:
        if kept > LARGE_REPLY_BYTES and not self.held:
            await self._lock.acquire()
            self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self._lock.release()


LARGE_REPLY_BYTES = 4 * 2**20


async def read_capped(headers: httpx.Headers, raw: AsyncIterable[bytes], max_bytes: int, label: str,
                      turn: Turn | None = None) -> bytes:
    """The whole decoded body, or TooLarge as soon as the bytes sent, or any decoding layer's
    output, pass `max_bytes` (Undecodable when a Content-Encoding cannot be undone)."""
    try:
        return await read_raw_async(headers, raw, max_bytes, label, pace=turn.pace if turn is not None else None)
    except BodyTooLarge as exc:
        raise TooLarge(str(exc)) from None
    except BodyUndecodable as exc:
        raise Undecodable(str(exc)) from None


def json_body(value: Any) -> bytes:
    """A request's JSON as httpx wrote it (UTF-8, compact, no NaN), so a target sees the same bytes."""
    return _json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class Fetcher:
    """Sends one request of a target and reads its reply under the rules above.

    `headers` are the target's configured ones and `authorization` the Basic credentials of
    its URL (when no Authorization header is configured); they go only to its own origin.
    `redact` scrubs secrets from anything a message quotes of a server-chosen URL."""

    def __init__(self, urls: EndpointUrls, headers: dict[str, str], authorization: str | None,
                 follow_redirects: bool, max_bytes: int, redact: Callable[[str], str]):
        self.urls = urls
        named = {name.lower() for name in headers}
        self.headers = headers if "accept-encoding" in named else {**headers, "Accept-Encoding": accept_encoding()}
        if authorization:
            self.headers = {**self.headers, "Authorization": authorization}
        self._typed = "content-type" in named  # a configured Content-Type wins over JSON's, as in httpx
        self.follow_redirects = follow_redirects
        self.max_bytes = max_bytes
        self.size_label = f"{max_bytes / 2 ** 20:g} MB"
        self.redact = redact

    def shown(self, url: httpx.URL) -> str:
        """A URL as a message may show it: secret query values masked, other secrets scrubbed."""
        return self.redact(public_url(str(url)))

    async def fetch(self, connections: Connections, lane: int, method: str, path: str, *, json: Any = _NO_BODY,
                    params: dict[str, Any] | None = None, turn: Turn | None = None) -> Reply:
        aiohttp = aiohttp_module()
        url = self.urls(path, params)
        for _ in range(MAX_REDIRECTS + 1):
            home = self.urls.is_home(url)
            data = None if json is _NO_BODY else json_body(json)
            if home:
                session, headers = connections.home(lane), self.headers
                if data is not None and not self._typed:
                    headers = {**headers, "Content-Type": "application/json"}
            else:  # sent bare: no configured header, no cookie of the target's jar
                session = connections.away()
                headers = {"Accept": "*/*", "Accept-Encoding": accept_encoding(),
                           **({"Content-Type": "application/json"} if data is not None else {})}
            try:
                async with session.request(method, aiohttp_url(url), data=data, headers=headers,
                                           allow_redirects=False) as response:
                    got = httpx.Headers(list(response.raw_headers))
                    if _LOG.isEnabledFor(logging.INFO):
                        _LOG.info('HTTP Request: %s %s "HTTP/%s.%s %s"', method, self.shown(url),
                                  *response.version, response.status)
                    if response.status in REDIRECTS and got.get("location"):
                        method, url, json = self._next(method, url, json, response.status, got)
                        continue
                    try:
                        content = await read_capped(got, response.content.iter_any(), self.max_bytes,
                                                    self.size_label, turn)
                    except BaseException:
                        response.close()  # the rest of the body is not wanted, nor the connection
                        raise
                    return Reply(response.status, got, content, url)
            except asyncio.TimeoutError:  # a socket limit of transport.py (ServerTimeoutError is a ClientError too)
                raise
            except (aiohttp.ClientError, OSError) as exc:
                # some say the URL asked (a reply that is not HTTP): said with its secrets masked
                detail = str(exc).replace(str(url), self.shown(url))
                raise ConnectionFailed(f"{type(exc).__name__}: {detail}") from exc
        raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects, the last to {self.shown(url)}")

    def _next(self, method: str, url: httpx.URL, json: Any, status: int,
              headers: httpx.Headers) -> tuple[str, httpx.URL, Any]:
        """Where a redirect leads, or RedirectRefused saying why it is not followed."""
        try:
            target = url.join(headers["location"])
        except (httpx.InvalidURL, ValueError) as exc:
            raise RedirectRefused(f"HTTP {status} redirect with an invalid Location") from exc
        if target.scheme not in DEFAULT_PORTS:
            raise RedirectRefused(f"HTTP {status} redirect to a non-HTTP URL ({target.scheme}:)")
        if target.userinfo:  # credentials a server put in a Location are never sent, to anyone
            target = target.copy_with(userinfo=b"")
        if not self.urls.is_home(target):
            if not self.follow_redirects:
                raise RedirectRefused(f"HTTP {status} redirect to another origin, {self.redact(shown_origin(target))}; "
                                      "set the target URL to it, or pass --follow-redirects")
        else:
            target = self.urls.with_target_params(target)
        if status in (301, 302, 303) and method not in ("GET", "HEAD"):
            raise RedirectRefused(f"HTTP {status} redirect of {method} {self.shown(url.copy_with(query=None))} to "
                                  f"{self.shown(target.copy_with(query=None))}, which would be sent as a GET "
                                  "without the question; point the target's query_path (or url) at the new location")
        if status == 303:
            return "GET", target, _NO_BODY
        return method, target, json


def aiohttp_url(url: httpx.URL) -> Any:
    """`url` for aiohttp exactly as httpx built it: already encoded, so nothing is quoted twice."""
    from yarl import URL

    return URL(str(url), encoded=True)


class MaskUrlsInLogs(logging.Filter):
    """httpx logs every request's URL at INFO; a key in the target URL's query must not reach
    a log that way."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, httpx.URL) for a in record.args):
            record.args = tuple(public_url(str(a)) if isinstance(a, httpx.URL) else a for a in record.args)
        return True


_HTTPX_LOG = logging.getLogger("httpx")
if not any(isinstance(f, MaskUrlsInLogs) for f in _HTTPX_LOG.filters):
    _HTTPX_LOG.addFilter(MaskUrlsInLogs())
