"""Transports to LLM providers through their official SDKs (async), with errors classified.

The SDKs' own retries are switched off (max_retries=0): retrying lives in one place, the judge
client, so 429/5xx/timeout handling and Retry-After are the same for every provider and
testable. A backend returns the reply text and token usage, or raises TransientError (worth
retrying, with the server's Retry-After if it sent one) or FatalError.

Secrets: API keys are read from the environment by the SDK clients at call time and never
appear in the request dict we store (that dict is built by us and has no headers).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    text: str
    input_tokens: int
    output_tokens: int
    stop_reason: str | None
    model: str | None


class TransientError(Exception):
    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class FatalError(Exception):
    pass


async def _within(seconds: float, call: Any) -> Any:
    """Await `call` under a total deadline. The SDKs' `timeout` is httpx's per-phase timeout:
    a server that drips its body a few bytes at a time resets the read timer on every chunk
    and could hold a judge call for ever. This bounds the whole request."""
    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError:
        raise TransientError(f"no complete reply within {seconds:g}s (total deadline)") from None


def _retry_after(headers: Any) -> float | None:
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
            except (TypeError, ValueError):
                return None
    return None


def _classify(exc: Exception, sdk: Any) -> Exception:
    """Map an SDK exception to TransientError / FatalError, without any header or key text."""
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
            return TransientError(msg, status, _retry_after(exc.response.headers))
        return FatalError(msg)
    return exc


class AnthropicBackend:
    """Anthropic Messages API. Honours ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.

    No temperature is sent: the API version used by the 2.x SDK rejects sampling parameters
    (determinism comes from the pinned model id and our cache). The stored request says so.
    """

    provider = "anthropic"

    def __init__(self, model: str, timeout: float = 60.0):
        self.model = model
        self.timeout = timeout
        self.base_url = os.environ.get("ANTHROPIC_BASE_URL") or None
        self.temperature: float | None = None

    def params(self, system: str, messages: list[dict], max_tokens: int) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": max_tokens, "system": system, "messages": messages}

    def secrets(self) -> set[str]:
        """Key values this backend sends; the judge client scrubs them from stored replies."""
        return {os.environ.get("ANTHROPIC_API_KEY", ""), os.environ.get("ANTHROPIC_AUTH_TOKEN", "")}

    def open(self) -> Any:
        import anthropic

        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            from evalcore.errors import EvalcoreError

            raise EvalcoreError("the anthropic judge needs ANTHROPIC_API_KEY in the environment "
                                "(or choose --judge heuristic / openai:MODEL@URL)")
        return anthropic.AsyncAnthropic(base_url=self.base_url, max_retries=0, timeout=self.timeout)

    async def complete(self, client: Any, params: dict[str, Any]) -> Reply:
        import anthropic

        try:
            msg = await _within(self.timeout, client.messages.create(**params))
        except TransientError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below
            raise _classify(exc, anthropic) from None
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
        return Reply(text=text, input_tokens=msg.usage.input_tokens or 0,
                     output_tokens=msg.usage.output_tokens or 0, stop_reason=msg.stop_reason, model=msg.model)


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama...).

    The key comes from OPENAI_API_KEY; local servers that need none get a placeholder.
    """

    provider = "openai"

    def __init__(self, model: str, base_url: str | None = None, timeout: float = 60.0):
        self.model = model
        self.timeout = timeout
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.temperature: float | None = 0.0

    def params(self, system: str, messages: list[dict], max_tokens: int) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": max_tokens, "temperature": 0.0,
                "messages": [{"role": "system", "content": system}, *messages]}

    def secrets(self) -> set[str]:
        return {os.environ.get("OPENAI_API_KEY", "")}

    def open(self) -> Any:
        import openai

        key = os.environ.get("OPENAI_API_KEY")
        if not key and not self.base_url:
            from evalcore.errors import EvalcoreError

            raise EvalcoreError("the openai judge needs OPENAI_API_KEY (or a local server: openai:MODEL@URL)")
        key = key or "no-key"  # local OpenAI-compatible servers usually accept any key
        return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout)

    async def complete(self, client: Any, params: dict[str, Any]) -> Reply:
        import openai

        try:
            resp = await _within(self.timeout, client.chat.completions.create(**params))
        except TransientError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise _classify(exc, openai) from None
        if not resp.choices:
            raise TransientError("reply without choices")
        choice = resp.choices[0]
        usage = resp.usage
        return Reply(text=choice.message.content or "", input_tokens=(usage.prompt_tokens if usage else 0) or 0,
                     output_tokens=(usage.completion_tokens if usage else 0) or 0,
                     stop_reason=choice.finish_reason, model=resp.model)
