"""The connections a target is asked on: aiohttp sessions, one per concurrency lane.

Why aiohttp here and httpx elsewhere: a live run is one event loop sending every question, so
what each request costs in CPU decides how close the run gets to the wire. 1,000 requests at
concurrency 16 against a server answering in 50 ms: httpx cost ~2 ms of CPU per request (its
client layers, httpcore's pool, h11's pure-Python parser, anyio) and the loop needed 1.23-1.34x
the wire time; aiohttp, whose HTTP parser is C, ~0.4 ms and 1.05x (measured side by side in one
process). httpx stays for URLs (fetch.py EndpointUrls, headers) and for the judges' SDKs.

What the sessions keep of the httpx clients they replace:
- one connection per lane (fetch.py: the lanes are the concurrency), TCP_NODELAY (aiohttp sets it);
- the body as sent (`auto_decompress=False`): evalcore/common/http_body.py undoes its
  Content-Encoding in bounded pieces;
- no redirect is followed by the client: fetch.py decides each one;
- a cookie a target sets goes back to it on the same lane (a jar that takes cookies of IP hosts,
  as httpx's did); a request to another origin goes through a session without any jar;
- no proxy or ~/.netrc from the environment (`trust_env=False`): httpx's clients, built on
  their own transport, took neither, and a proxy meant for the web must not get a local target;
- header lines up to 16 KB (h11's limit; aiohttp's own default is 8 KB).
aiohttp is imported when the first session is made: it builds its TLS contexts when imported
(~0.1 s), which a command that never asks a target does not pay.
"""

from __future__ import annotations

import asyncio
import ssl
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator

if TYPE_CHECKING:
    import aiohttp

MAX_HEADER_LINE = 16 * 1024


def aiohttp_module() -> Any:
    import aiohttp

    return aiohttp


class Connections:
    """The sessions of one target: `home(lane)` per lane (with its cookie jar), `away()` for a
    redirect to another origin (no jar: nothing the target set goes there). Lanes are taken
    from and given back to `free`."""

    def __init__(self, lanes: int, verify: bool | ssl.SSLContext, timeout_s: float):
        self._verify = verify
        self._timeout_s = timeout_s
        self._home: list[aiohttp.ClientSession | None] = [None] * max(lanes, 1)
        self._away: aiohttp.ClientSession | None = None
        self.free: asyncio.Queue[int] = asyncio.Queue()
        for lane in range(len(self._home)):
            self.free.put_nowait(lane)

    def _session(self, limit: int, jar: bool) -> aiohttp.ClientSession:
        aiohttp = aiohttp_module()
        connector = aiohttp.TCPConnector(limit=limit, ssl=self._verify)
        cookies = aiohttp.CookieJar(unsafe=True) if jar else aiohttp.DummyCookieJar()
        # the caller's deadline (client.py) is the one that counts; these only end a stuck socket
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout_s + 5.0, sock_read=self._timeout_s + 5.0)
        return aiohttp.ClientSession(connector=connector, cookie_jar=cookies, timeout=timeout,
                                     auto_decompress=False, trust_env=False,
                                     max_line_size=MAX_HEADER_LINE, max_field_size=MAX_HEADER_LINE)

    @asynccontextmanager
    async def lane(self) -> AsyncIterator[int]:
        """A free lane for one request, given back however the request ends."""
        lane = await self.free.get()
        try:
            yield lane
        finally:
            self.free.put_nowait(lane)

    def home(self, lane: int) -> aiohttp.ClientSession:
        session = self._home[lane]
        if session is None:
            session = self._home[lane] = self._session(limit=1, jar=True)
        return session

    def away(self) -> aiohttp.ClientSession:
        if self._away is None:
            self._away = self._session(limit=len(self._home), jar=False)
        return self._away

    async def aclose(self) -> None:
        for session in [*self._home, self._away]:
            if session is not None:
                await session.close()
        self._home = [None] * len(self._home)
        self._away = None
