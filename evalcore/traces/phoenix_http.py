"""Bounded exchanges with a Phoenix server: a total deadline per request and per import or
export, a byte cap on every reply and on all the replies an import keeps, and every failure
one `EvalcoreError` line.

Why not arize-phoenix-client's own calls (`spans.get_spans`, `spans.log_span_annotations`):
its timeouts are httpx's per-phase ones, so a server dripping one byte every 2 s held an
import for ever; it reads a reply whole, whatever its size; and a reply of another shape than
it expects ended as a KeyError or TypeError. Here every request runs under
`asyncio.wait_for` with the smaller of the request deadline and what is left of the whole
operation's, so no phase (connect, headers, body) can outlast it; a reply is read as raw bytes
(no decompression: `Accept-Encoding: identity` is asked and an encoded reply refused, so a
small compressed body cannot inflate past the cap) and refused past `MAX_REPLY_BYTES`, and
refused unparsed when it would build more than ten records' worth of JSON values
(`evalcore/common/value_budget.py`); its text is read as UTF-8/16/32, or ISO-8859-1 / windows-1252
when declared, any other declared charset refused, never decoded with a codec the server
names (`evalcore/common/reply_charset.py`); the deadline covers reading a reply, not only the
network. The
replies an import keeps (its span pages: every span is held until the traces are assembled)
share one byte budget, `Limits.max_mb`: a server handing out fresh pages for ever, each within
the per-reply cap, otherwise grew the process by gigabytes before any deadline passed. The
shape of what is read is checked by the caller (phoenix.py), which knows what it asked for.
The credentials are the client's settings (PHOENIX_API_KEY, PHOENIX_CLIENT_HEADERS).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

from evalcore.errors import EvalcoreError, InputError
from evalcore.common.reply_charset import CharsetRefused, json_source, preview
from evalcore.common.value_budget import TooManyValues, value_limit
from evalcore.common.value_budget import loads as bounded_loads

INSTALL_HINT = "Phoenix needs arize-phoenix-client: pip install 'evalcore[phoenix]'"
DEFAULT_TOTAL_S = 600.0  # a whole import or export (--phoenix-timeout)
DEFAULT_REQUEST_S = 60.0  # one request, from connecting to the reply's last byte (--phoenix-request-timeout)
MAX_DEADLINE_S = 1_000_000  # about 11 days: a bound the clock arithmetic of every layer takes
MAX_REPLY_BYTES = 64 * 2 ** 20  # one reply (a page of 100 spans, an annotation receipt)
DEFAULT_MAX_MB = 256.0  # all the span pages of one import, together (--phoenix-max-mb)
DEFAULT_MAX_SPANS = 200_000  # spans one import holds (--phoenix-max-spans)
MAX_MAX_MB = 1_000_000.0  # what --phoenix-max-mb takes at most (a terabyte)
MAX_MAX_SPANS = 10**9
PAGE_RECORDS = 10  # a reply may make the values of this many records (evalcore/common/value_budget.py)
_DETAIL_BYTES = 2000  # of an error reply, quoted in the message

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """What one import or export may take: seconds `total_s` for all of it and `request_s` for
    each request; the import also at most `max_mb` MB of span pages and `max_spans` spans."""

    total_s: float = DEFAULT_TOTAL_S
    request_s: float = DEFAULT_REQUEST_S
    max_mb: float = DEFAULT_MAX_MB
    max_spans: int = DEFAULT_MAX_SPANS

    def __post_init__(self) -> None:
        for flag, value in (("--phoenix-timeout", self.total_s), ("--phoenix-request-timeout", self.request_s)):
            if not _positive(value, MAX_DEADLINE_S):
                raise EvalcoreError(f"{flag} must be a positive number of seconds up to {MAX_DEADLINE_S:,}, "
                                    f"not {value!r}")
        if not _positive(self.max_mb, MAX_MAX_MB):
            raise EvalcoreError(f"--phoenix-max-mb must be a positive number of MB up to {MAX_MAX_MB:,.0f}, "
                                f"not {self.max_mb!r}")
        if not (_positive(self.max_spans, MAX_MAX_SPANS) and isinstance(self.max_spans, int)):
            raise EvalcoreError(f"--phoenix-max-spans must be a whole number from 1 to {MAX_MAX_SPANS:,}, "
                                f"not {self.max_spans!r}")

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 2 ** 20)


def _positive(value: object, most: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        0 < value <= most


class Refused(Exception):
    """The server answered with an HTTP error status; `detail` is the first line of its body."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}{': ' + detail if detail else ''}")
        self.status = status
        self.detail = detail


def _headers() -> dict[str, str]:
    """What the Phoenix client would send: PHOENIX_CLIENT_HEADERS, then PHOENIX_API_KEY as a
    bearer token (older clients' reader leaves the key out, so it is added here too)."""
    try:
        import phoenix.client  # noqa: F401  (the package itself: the extra evalcore[phoenix] installs it)
        from phoenix.client.utils.config import get_env_client_headers
    except ImportError:
        raise EvalcoreError(INSTALL_HINT) from None
    headers = dict(get_env_client_headers() or {})
    key = os.environ.get("PHOENIX_API_KEY", "").strip()
    if key and not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = f"Bearer {key}"
    return {**headers, "accept": "application/json", "accept-encoding": "identity"}


class Session:
    """The requests of one import or export against one server, sharing its total deadline."""

    def __init__(self, base_url: str, source: str, limits: Limits, client: Any, ends_at: float):
        self.base_url = base_url
        self.source = source  # names the server and project in messages about a reply's content
        self.limits = limits
        self.kept_bytes = 0  # of the replies kept (`call(..., kept=True)`), against limits.max_mb
        self._client = client
        self._ends_at = ends_at

    async def call(self, method: str, path: str, doing: str, where: str, kept: bool = False, **kwargs: Any) -> Any:
        """The reply's JSON value; EvalcoreError (one line) on a deadline, an unreachable
        server or a body too large; `Refused` on an HTTP error status; InputError naming the
        source and `where` (the page, the batch) when the body is not JSON or declares a charset
        evalcore does not read (reply_charset.py). A `kept` reply
        (what the caller holds until it is done) counts against the byte budget of them all."""
        import asyncio

        import httpx

        cap = MAX_REPLY_BYTES
        too_large = f"Phoenix at {self.base_url} sent a reply larger than {cap / 2 ** 20:g} MB: refused"
        if kept and self.limits.max_bytes - self.kept_bytes < cap:
            cap = max(0, self.limits.max_bytes - self.kept_bytes)
            too_large = (f"Phoenix at {self.base_url}: the span pages of this import passed {self.limits.max_mb:g} MB "
                         "together (--phoenix-max-mb; every span is held in memory until the traces are "
                         f"assembled) while {doing}: refused")
        loop = asyncio.get_running_loop()
        left = self._ends_at - loop.time()
        budget = min(self.limits.request_s, left)
        late_at = loop.time() + budget
        try:
            if budget <= 0:
                raise asyncio.TimeoutError
            body = await asyncio.wait_for(self._exchange(method, path, cap, too_large, **kwargs), budget)
        except asyncio.TimeoutError:
            raise self._late(budget, doing) from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError, UnicodeError) as exc:
            raise EvalcoreError(f"cannot reach Phoenix at {self.base_url} ({doing}): "
                                f"{type(exc).__name__}: {str(exc)[:300]}") from None
        except CharsetRefused as exc:
            raise InputError(self.source, str(exc), record=where) from None
        if kept:
            self.kept_bytes += len(body)
        value = self._parsed(body, where)
        if loop.time() > late_at:  # the deadline covers reading the reply, not only the network
            raise self._late(budget, doing)
        return value

    def _late(self, budget: float, doing: str) -> EvalcoreError:
        if budget < self.limits.request_s:
            return EvalcoreError(f"Phoenix at {self.base_url}: not done within {self.limits.total_s:g} s "
                                 f"(--phoenix-timeout), stopped while {doing}")
        return EvalcoreError(f"Phoenix at {self.base_url}: no complete reply within {self.limits.request_s:g} s "
                             f"(--phoenix-request-timeout) while {doing}")

    def _parsed(self, body: bytes | str, where: str) -> Any:
        try:  # a page holds up to 100 spans: ten records' worth of values, counted before json.loads
            return bounded_loads(body, PAGE_RECORDS * value_limit(), scope="Phoenix page")
        except TooManyValues as exc:
            raise InputError(self.source, f"the reply holds {exc}", record=where) from None
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            raise InputError(self.source, f"the reply is not JSON ({reason})", record=where) from None

    async def _exchange(self, method: str, path: str, cap: int, too_large: str, **kwargs: Any) -> bytes | str:
        """The reply as json.loads should read it (its bytes, or their text in a declared
        single-byte charset: reply_charset.py); CharsetRefused for a charset not read."""
        async with self._client.stream(method, path, **kwargs) as response:
            if response.status_code >= 300:
                detail = await _read_capped(response, _DETAIL_BYTES, self.base_url, truncate=True)
                lines = preview(detail, response.headers).strip().splitlines()
                raise Refused(response.status_code, lines[0][:200] if lines else "")
            body = await _read_capped(response, cap, self.base_url, too_large=too_large)
            return json_source(body, response.headers)


async def _read_capped(response: Any, cap: int, base_url: str, truncate: bool = False,
                       too_large: str = "") -> bytes:
    """The raw body, refused with `too_large` (or with `truncate`, cut) once it passes `cap` bytes."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise EvalcoreError(f"Phoenix at {base_url} sent a reply with Content-Encoding {encoding[:40]!r}, though "
                            "evalcore asks for none (identity): refused unread")
    declared = response.headers.get("content-length", "").strip()
    if not truncate and declared.isdigit() and int(declared) > cap:
        raise EvalcoreError(f"{too_large} unread (it announced {int(declared):,} bytes)")
    body = bytearray()
    async for piece in response.aiter_raw():
        body += piece
        if len(body) > cap:
            if truncate:
                return bytes(body[:cap])
            raise EvalcoreError(too_large)
    return bytes(body)


def run_session(base_url: str, source: str, limits: Limits, work: Callable[[Session], Awaitable[T]]) -> T:
    """Run `work` with a Session on a fresh client; the client is closed whatever happens.
    (asyncio and httpx are imported here: `evalcore runs` imports this module for its flags' defaults.)"""
    import asyncio

    import httpx

    headers = _headers()

    async def main() -> T:
        ends_at = asyncio.get_running_loop().time() + limits.total_s
        # httpx's own timeout is a backstop per phase; the deadlines above bound the whole
        async with httpx.AsyncClient(base_url=base_url, headers=headers, follow_redirects=False,
                                     timeout=httpx.Timeout(limits.request_s)) as client:
            return await work(Session(base_url, source, limits, client, ends_at))

    return asyncio.run(main())
