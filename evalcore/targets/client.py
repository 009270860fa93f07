"""Async HTTP client for one RAG target: health, info, index stats, and query with retries.

Why the care: a live run talks to servers that fail in every way a network can. Each query
ends as exactly one EvalResponse, either parsed or carrying `error` + `error_kind`:

  timeout    no complete answer within the per-request timeout (a total deadline, not a client library's
             per-phase timeouts, so a server that trickles bytes cannot stall a run; it
             covers decoding and parsing the reply too, not only the network)
  http       a non-2xx status (5xx and 429 are retried first; other 4xx are not). A
             Retry-After header (seconds or an HTTP date) on 429/503 is honoured: the
             next attempt waits at least that long, capped at `max_retry_after_s`
  malformed  2xx with a body that is not JSON or does not fit the response map (retried);
             also a body larger than `max_response_mb`, sent or once decoded, one whose
             Content-Encoding cannot be undone, one that would make more JSON values than
             a record may (evalcore/common/value_budget.py: counted before json.loads builds any),
             or one declaring a charset evalcore does not read (evalcore/common/reply_charset.py:
             only linear-time codecs; not retried: each would come again)
  empty      a valid response whose answer is blank while not declaring `abstained`
  error      connection refused/reset and anything else unexpected (connection faults retried)

A redirect is followed only within the target's origin; one to another origin, or one that
would turn the POST into a GET, is an `http` error saying so (not retried), and configured
headers never cross origins, even with `follow_redirects` (fetch.py says why).

Retries back off exponentially with jitter. Secrets in headers are resolved once, held in
memory only, and never put into an error message. What the server says about itself
(/health, /models/info, /index/stats) is capped before it is stored (snapshot.py).
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
from dataclasses import dataclass
from typing import Any

from evalcore.errors import EvalcoreError
from evalcore.common.reply_charset import CharsetRefused, json_source, preview
from evalcore.schemas import EvalResponse
from evalcore.common.secret_urls import basic_token, public_url
from evalcore.targets.fetch import (ConnectionFailed, EndpointUrls, Fetcher, LargeReplies, RedirectRefused, Refused, Reply,
                                    TooLarge, Turn, Undecodable, shown_origin)
from evalcore.targets.parse import MalformedResponse, parse_response
from evalcore.targets.secrets import Redactor, secret_values
from evalcore.targets.snapshot import cap_snapshot
from evalcore.targets.transport import Connections
from evalcore.targets.spec import SENSITIVE_HEADER, TargetSpec, render_body
from evalcore.common.value_budget import TooManyValues
from evalcore.common.value_budget import loads as bounded_loads

DEFAULT_MAX_RESPONSE_MB = 32.0


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 30.0  # a server asking for longer gets the error instead

    def delay(self, attempt: int) -> float:
        """Full-jitter exponential backoff for the given (1-based) failed attempt."""
        ceiling = min(self.max_backoff_s, self.backoff_s * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)


class TargetUnavailable(EvalcoreError):
    """The target failed its health check or could not be reached before the run started
    (an expected failure: the CLI says it in one line)."""


class _Attempt(Exception):
    def __init__(self, kind: str, message: str, retry: bool, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry = retry
        self.retry_after = retry_after


def retry_after_s(value: str | None) -> float | None:
    """Seconds asked for by a Retry-After header (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from datetime import datetime, timezone
        from email.utils import parsedate_to_datetime
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds()
        except (TypeError, ValueError, OverflowError):  # a year past what a date holds, too
            return None
    return max(0.0, seconds) if seconds == seconds else None


def _success(status: int) -> bool:
    """A 2xx status: anything else (1xx or 3xx as a final reply, 000) is not an answer."""
    return 200 <= status < 300


def _now() -> float:
    """The clock of a request's deadline (a name of its own, so a test can move it)."""
    return time.monotonic()


def _keep(deadline: float) -> None:
    """TimeoutError once `deadline` has passed: reading a reply counts against its request's
    timeout, not only the network (a reply read after it is not one that came in time)."""
    if _now() > deadline:
        raise asyncio.TimeoutError


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text[:4 * limit].split())  # only the start is shown: never split a 32 MB body into words
    return text if len(text) <= limit else text[:limit] + "..."


class TargetClient:
    """Talks to one target with up to `concurrency` requests in flight. Use as `async with`."""

    def __init__(self, spec: TargetSpec, timeout_s: float = 30.0, concurrency: int = 8,
                 retry: RetryPolicy | None = None, follow_redirects: bool = False,
                 max_response_mb: float = DEFAULT_MAX_RESPONSE_MB):
        self.spec = spec
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        # One single-connection session per concurrency lane (transport.py says why aiohttp)
        verify: bool | ssl.SSLContext = False  # plain http: building a TLS context costs ~0.2 s
        if spec.url.startswith("https://"):
            verify = ssl.create_default_context() if spec.verify_tls else False
        headers = spec.resolved_headers()
        # what the server may echo back must not be stored: see secrets.py
        self._redact = Redactor(secret_values(spec.url, spec.headers, SENSITIVE_HEADER))
        # user:password@ in the URL must not silently replace a configured Authorization header,
        # and a base URL's query must not be dropped; so both are taken out of the URL:
        # credentials become Basic auth only when no Authorization header is configured, and
        # query parameters (e.g. ?api_key=) go with every endpoint (fetch.py).
        self._urls = EndpointUrls(spec.url)
        creds = self._urls.credentials
        has_auth_header = any(name.lower() == "authorization" for name in headers)
        authorization = "Basic " + basic_token(*creds) if creds and not has_auth_header else None
        self._fetch = Fetcher(self._urls, headers, authorization, follow_redirects,
                              max_bytes=int(max_response_mb * 2 ** 20), redact=self._redact.text)
        self._connections = Connections(concurrency, verify, timeout_s)
        self._large = LargeReplies()

    async def __aenter__(self) -> "TargetClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._connections.aclose()

    # ---- metadata endpoints --------------------------------------------------------
    async def _get(self, path: str) -> tuple[Reply, float]:
        """The reply to GET `path`, and the deadline its reading must also keep."""
        deadline = _now() + self.timeout_s
        async with self._connections.lane() as lane:
            return await asyncio.wait_for(self._fetch.fetch(self._connections, lane, "GET", path),
                                          self.timeout_s), deadline

    def _snapshot(self, reply: Reply, path: str, deadline: float) -> Any:
        """The reply's JSON as the manifest may store it: secrets scrubbed, size capped.
        TimeoutError when reading it would pass (or passed) the request's deadline;
        CharsetRefused for a charset evalcore does not read (reply_charset.py)."""
        _keep(deadline)
        source = json_source(self._redact.data(reply.content), reply.headers)
        body = self._redact.deep(bounded_loads(source, scope="reply"))
        _keep(deadline)
        body = body if isinstance(body, dict) else {"body": body}
        return cap_snapshot(body, f"GET {public_url(path)}")

    async def health(self) -> dict[str, Any]:
        """GET /health; raises TargetUnavailable with the reason when the server is not ready."""
        path = self.spec.health_path
        if not path:
            return {"skipped": True}
        try:
            reply, deadline = await self._get(path)
        except (ConnectionFailed, asyncio.TimeoutError) as exc:
            detail = self._redact.text(_short(str(exc))) or "no detail"
            if not isinstance(exc, ConnectionFailed):  # which names what failed itself
                detail = f"{type(exc).__name__}: {detail}"
            raise TargetUnavailable(f"target {self.spec.name!r} at {public_url(self.spec.url)} is not "
                                    f"reachable ({detail})") from exc
        except Refused as exc:
            raise TargetUnavailable(f"target {self.spec.name!r}: GET {public_url(path)}: {exc}") from exc
        if not _success(reply.status):
            hint = ("; the target URL's query parameters go with every endpoint" if self._urls.params else "")
            raise TargetUnavailable(f"target {self.spec.name!r}: GET {self._fetch.shown(reply.url)} returned "
                                    f"HTTP {reply.status}{hint}")
        try:
            return self._snapshot(reply, path, deadline)
        except asyncio.TimeoutError:
            raise TargetUnavailable(f"target {self.spec.name!r}: GET {public_url(path)}: no complete reply "
                                    f"within {self.timeout_s:g}s") from None
        except CharsetRefused as exc:  # it answered: ready, but what it said is not kept
            return {"status_code": reply.status, "_not_kept": f"GET {public_url(path)}: {exc}"}
        except (ValueError, RecursionError):
            return {"status_code": reply.status}

    async def optional_json(self, path: str | None) -> dict[str, Any] | None:
        """GET an optional endpoint (/models/info, /index/stats); None when absent or broken,
        a note when it is refused (too large, redirected away, a charset not read)."""
        if not path:
            return None
        try:
            reply, deadline = await self._get(path)
            if not _success(reply.status):
                return None
            return self._snapshot(reply, path, deadline)
        except (Refused, CharsetRefused) as exc:
            return {"_not_kept": f"GET {public_url(path)}: {exc}"}
        except (ConnectionFailed, asyncio.TimeoutError, ValueError, RecursionError):
            return None

    # ---- query ---------------------------------------------------------------------
    def _request_kwargs(self, variables: dict[str, Any]) -> dict[str, Any]:
        body = render_body(self.spec.body, variables)
        if self.spec.query_http_method == "GET":
            params = body if isinstance(body, dict) else {"q": body}
            return {"params": {k: v for k, v in params.items() if v is not None}}
        return {"json": body}

    async def _attempt(self, kwargs: dict[str, Any], question_id: str, method: str) -> EvalResponse:
        """One request and its reading, under one deadline: a reply read (decoded, parsed) past
        it is a timeout like one that came late, however little of it the network took."""
        turn = self._large.turn()  # a large reply holds its target's turn until it is parsed
        try:
            resp, deadline = await self._send(kwargs, turn)
            try:
                _keep(deadline)
                response = self._answer(resp, question_id, method)
                _keep(deadline)
            except (asyncio.TimeoutError, _Attempt) as exc:
                if isinstance(exc, _Attempt) and _now() <= deadline:
                    raise
                raise _Attempt("timeout", f"no answer within {self.timeout_s:g}s (reading the reply included)",
                               retry=True) from None
        finally:
            turn.release()
        return response

    async def _send(self, kwargs: dict[str, Any], turn: Turn) -> tuple[Reply, float]:
        """The reply on a free lane, and the deadline its reading must also keep."""
        async with self._connections.lane() as lane:
            deadline = _now() + self.timeout_s
            try:
                async with asyncio.timeout(self.timeout_s):  # no task per request, as wait_for made
                    reply = await self._fetch.fetch(self._connections, lane, self.spec.query_http_method,
                                                    self.spec.query_path, turn=turn, **kwargs)
                return reply, deadline
            except asyncio.TimeoutError as exc:
                raise _Attempt("timeout", f"no answer within {self.timeout_s:g}s", retry=True) from exc
            except ConnectionFailed as exc:  # "<what failed>: <detail>"
                detail = self._redact.text(_short(str(exc))) or "connection failed"
                raise _Attempt("error", detail, retry=True) from exc
            except (TooLarge, Undecodable) as exc:  # the same body would come again
                raise _Attempt("malformed", str(exc), retry=False) from exc
            except RedirectRefused as exc:  # so would the same redirect
                raise _Attempt("http", str(exc), retry=False) from exc

    def _answer(self, resp: Reply, question_id: str, method: str) -> EvalResponse:
        """The reply as an EvalResponse, or _Attempt saying what is wrong with it. Its text is
        read only in a charset evalcore knows to decode in linear time (reply_charset.py)."""
        content = self._redact.data(resp.content)
        text = self._redact.text(preview(content, resp.headers))  # only for messages
        try:
            source = json_source(content, resp.headers)
        except CharsetRefused as exc:
            if _success(resp.status):  # the same reply would come again: not retried
                raise _Attempt("malformed", str(exc), retry=False) from None
            source = content  # an error's body only makes the message, which names the status
        try:
            payload = self._redact.deep(bounded_loads(source, scope="reply"))
            decode_error = None
            if not _success(resp.status):  # the message quotes the body: quote the scrubbed decoding
                text = json.dumps(payload, ensure_ascii=False)
        except TooManyValues as exc:
            if _success(resp.status):  # the same reply would come again: not retried
                raise _Attempt("malformed", f"the reply holds {exc}", retry=False) from None
            payload, decode_error = None, exc
        except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deeply
            payload, decode_error = None, exc if isinstance(exc, ValueError) else ValueError("nested too deeply")
        if not _success(resp.status):  # 1xx/3xx as a final reply too (a redirect without Location, 304)
            retry = resp.status >= 500 or resp.status == 429
            after = retry_after_s(resp.headers.get("retry-after")) if resp.status in (429, 503) else None
            if after is not None and after > self.retry.max_retry_after_s:
                retry = False  # waiting that long would stall the run; report it instead
            raise _Attempt("http", f"HTTP {resp.status}: {_short(text, 200)}", retry=retry,
                           retry_after=after)
        if decode_error is not None:
            raise _Attempt("malformed", f"body is not valid JSON ({decode_error}); starts with "
                           f"{_short(text, 80)!r}", retry=True) from decode_error
        try:
            response = parse_response(payload, self.spec.response, question_id, method)
        except MalformedResponse as exc:
            raise _Attempt("malformed", str(exc), retry=True) from exc
        if not self._urls.is_home(resp.url):  # followed with follow_redirects: say who answered
            response.raw["answered_by"] = self._redact.text(shown_origin(resp.url))
        return response

    async def query(self, question: str, question_id: str, method: str, send_method: str,
                    top_k: int, params: dict[str, Any] | None = None) -> EvalResponse:
        """Ask one question; always returns an EvalResponse (with error fields on failure)."""
        variables = {"top_k": top_k, **(params or {}), "question": question,
                     "question_id": question_id, "method": send_method}
        kwargs = self._request_kwargs(variables)
        attempts = 0
        waits: list[float] = []
        started = time.perf_counter()
        while True:
            attempts += 1
            t0 = time.perf_counter()
            try:
                response = await self._attempt(kwargs, question_id, method)
            except _Attempt as failure:
                if failure.retry and attempts <= self.retry.retries:
                    wait = max(self.retry.delay(attempts), failure.retry_after or 0.0)
                    waits.append(round(wait, 3))
                    await asyncio.sleep(wait)
                    continue
                return EvalResponse(
                    question_id=question_id, method=method, error=str(failure), error_kind=failure.kind,
                    latency_ms=(time.perf_counter() - t0) * 1000.0,
                    raw={"attempts": attempts, "retry_waits": waits,
                         "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 3)})
            latency_ms = (time.perf_counter() - t0) * 1000.0
            update: dict[str, Any] = {"latency_ms": latency_ms,
                                      "raw": {**response.raw, "attempts": attempts,
                                              **({"retry_waits": waits} if waits else {})}}
            if not response.answer.strip() and response.abstained is not True:
                update.update(error="empty answer", error_kind="empty")
            return response.model_copy(update=update)
