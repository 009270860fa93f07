"""How a judge call failed: worth retrying (TransientError) or not (FatalError), from what the
provider SDK raised or handed back.

Why a module of its own: both backends (judges/backends.py) classify the same way, and the
judge client (judges/client.py) retries on exactly this split, so it is written once. Every
message is free of headers and keys; the judge client also scrubs key values from it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, TypeVar

from evalcore.common.http_body import BodyRefused

T = TypeVar("T")


class TransientError(Exception):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class FatalError(Exception):
    pass


async def within(seconds: float, call: Any) -> Any:
    """Await `call` under a total deadline. The SDKs' `timeout` is httpx's per-phase timeout:
    a server that drips its body a few bytes at a time resets the read timer on every chunk
    and could hold a judge call for ever. This bounds the whole request."""
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        raise TransientError(f"no complete reply within {seconds:g}s (total deadline)") from None


def retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return max(0.0, float(raw) * scale)
        except ValueError:
            from email.utils import parsedate_to_datetime
            from datetime import datetime, timezone
            try:
                when = parsedate_to_datetime(raw)
                return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
            except (TypeError, ValueError, OverflowError):  # a year past what a date holds, too
                return None
    return None


def refusal(exc: BaseException) -> BodyRefused | None:
    """The BodyRefused behind `exc`: the SDKs wrap what their HTTP client raised in their
    connection error (`raise APIConnectionError(...) from err`)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, BodyRefused):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def classify(exc: Exception, sdk: Any) -> Exception:
    """Map an SDK exception to TransientError / FatalError, without any header or key text.
    A reply refused by its bound (judges/http_client.py) is fatal: it would come again."""
    refused = refusal(exc)
    if refused is not None:
        return FatalError(f"judge reply refused: {refused}")
    if isinstance(exc, (sdk.APITimeoutError, sdk.APIConnectionError)):
        return TransientError(f"{type(exc).__name__}: connection problem or timeout")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        body = ""
        try:
            body = exc.response.text[:4000]  # the judge client scrubs secrets, then shortens
        except Exception:  # noqa: BLE001 - the body is only informative
            pass
        msg = f"HTTP {status}: {body}"
        if status in (408, 409, 429) or status >= 500:
            return TransientError(msg, status, retry_after(exc.response.headers))
        return FatalError(msg)
    if isinstance(exc, (ValueError, RecursionError)):  # the SDK parsing a reply: JSON, in UTF-8 (RFC 8259)
        return FatalError(f"malformed judge reply: the judge reply is not JSON in UTF-8 ({type(exc).__name__}: "
                          f"{str(exc)[:200]}); the same reply would come again")
    # anything else is the SDK failing to read a 2xx reply (not JSON, undecodable bytes, a
    # coding nobody knows passed through): that item's error, not a crash of the whole pass
    return FatalError(f"malformed judge reply: the SDK could not read it ({type(exc).__name__}: {str(exc)[:200]})")


def read_reply(build: Callable[[], T]) -> T:
    """`build()`, with a reply of another shape than the SDK's model as a FatalError: the SDKs
    build replies unvalidated, so a server's `[1]` or `{"choices": 5}` arrives as a list or
    a number, and reading it would raise in the middle of a scoring pass."""
    try:
        return build()
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise FatalError(f"malformed judge reply: not the shape of a completion ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
