"""Transports to LLM providers through their official SDKs (async), with errors classified.

The SDKs' own retries are switched off (max_retries=0): retrying lives in one place, the judge
client, so 429/5xx/timeout handling and Retry-After are the same for every provider and
testable. A backend returns the reply text and token usage, or raises TransientError (worth
retrying, with the server's Retry-After if it sent one) or FatalError.

Secrets: API keys are read from the environment by the SDK clients at call time and never
appear in the request dict we store (that dict is built by us and has no headers).

Replies: each SDK client reads through evalcore's own HTTP client (judges/http_client.py), so
a reply is decoded under a 4 MB cap whatever its Content-Encoding; one past it is a FatalError.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from evalcore.judges.call_errors import FatalError, TransientError, classify, read_reply, within
from evalcore.judges.http_client import judge_http_client
from evalcore.common.reply_charset import with_text_pinned
from evalcore.common.secret_urls import split_url, url_secrets

log = logging.getLogger(__name__)

# the errors live in call_errors.py; named here too for the modules that import them from here
__all__ = ["AnthropicBackend", "FatalError", "OpenAIBackend", "Reply", "SAMPLING_TEMPERATURE", "TransientError"]

# The temperature a judge asked for K > 1 independent verdicts sends (`score --repeats K`): the
# providers' own default (Anthropic's and OpenAI's is 1.0), so a repeated verdict varies as the
# model's verdicts vary when nobody pins them. At temperature 0 most servers return copies, and
# the repeats would measure nothing.
SAMPLING_TEMPERATURE = 1.0


def _split_base(base_url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """A base URL's query (e.g. `?api-version=...&api_key=...`) as the SDK's default query:
    the SDKs append paths to the base URL, which would land after a query left inside it."""
    if not base_url:
        return base_url, None
    bare, params, _ = split_url(base_url)
    return (bare, dict(params)) if params else (base_url, None)


@dataclass
class Reply:
    """A completion. `sent_params` is set when the backend sent other parameters than it was
    given (see OpenAIBackend: a server that rejects one), so the judge client can store the
    request that really went out; `adapted` says how they differ and `rejections` lists the
    requests the server refused on the way (each a 400 that cost no tokens). The token counts
    are what the reply's usage said, unchecked (None: not reported); the judge client checks
    them (judges/usage.py)."""

    text: str
    input_tokens: Any
    output_tokens: Any
    stop_reason: str | None
    model: str | None
    sent_params: dict[str, Any] | None = None
    adapted: list[str] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)


def _http_client(sdk: Any) -> Any:
    """The judge's HTTP client (judges/http_client.py: replies bounded as they are decoded), whose
    reply text (an error body the SDK quotes) is decoded with a codec evalcore allows, never one
    the server names in its charset (evalcore/common/reply_charset.py: `punycode` took minutes)."""
    return with_text_pinned(judge_http_client(sdk))


class AnthropicBackend:
    """Anthropic Messages API. Honours ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.

    No temperature is sent: the API version used by the 2.x SDK rejects sampling parameters
    (determinism comes from the pinned model id and our cache). The stored request says so, and
    the judge id records temperature None: the provider's default, 1.0, applies, so this judge
    samples already and repeated verdicts (`score --repeats K`) need no change of request.
    """

    provider = "anthropic"

    def __init__(self, model: str, timeout: float = 60.0):
        self.model = model
        self.timeout = timeout
        self.base_url = os.environ.get("ANTHROPIC_BASE_URL") or None
        self.temperature: float | None = None
        self.rejected: set[str] = set()  # "output_config" once the model refuses a schema

    def sample(self) -> None:
        """Nothing to change: no temperature is sent, and the provider's default (1.0) samples."""

    def params(self, system: str, messages: list[dict], max_tokens: int,
               schema: dict[str, Any] | None = None, name: str = "reply") -> dict[str, Any]:
        """The request; with `schema`, the reply is constrained to it (structured outputs)."""
        params: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "system": system,
                                  "messages": messages}
        if schema is not None:
            params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        return params

    def wire_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """`params` without the output schema once this model has refused one."""
        if "output_config" in self.rejected and "output_config" in params:
            return {k: v for k, v in params.items() if k != "output_config"}
        return params

    def secrets(self) -> set[str]:
        """Key values this backend sends; the judge client scrubs them from stored replies."""
        return {os.environ.get("ANTHROPIC_API_KEY", ""), os.environ.get("ANTHROPIC_AUTH_TOKEN", "")} \
            | url_secrets(self.base_url)

    def open(self) -> Any:
        import anthropic

        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            from evalcore.errors import EvalcoreError

            raise EvalcoreError("the anthropic judge needs ANTHROPIC_API_KEY in the environment "
                                "(or choose --judge heuristic / openai:MODEL@URL)")
        base, query = _split_base(self.base_url)
        return anthropic.AsyncAnthropic(base_url=base, default_query=query, max_retries=0, timeout=self.timeout,
                                        http_client=_http_client(anthropic))

    async def complete(self, client: Any, params: dict[str, Any]) -> Reply:
        """Send `params`; a 400 refusing the output schema is learnt once and the request
        resent without it (the judge client then parses free text, with its repair path)."""
        import anthropic

        sent, rejections = self.wire_params(params), []
        while True:
            try:
                msg = await within(self.timeout, client.messages.create(**sent))
                break
            except TransientError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                message = _schema_rejection(exc, "output_config")
                if message is None or "output_config" not in sent:
                    raise classify(exc, anthropic) from None
                _learn_schema(self, "output_config")
                rejections.append(f"HTTP 400 rejected output_config: {message[:300]}")
                sent = self.wire_params(params)
        adapted = [SCHEMA_REFUSED] if "output_config" in params and "output_config" not in sent else []
        return read_reply(lambda: self._reply(msg, sent if sent != params else None, adapted, rejections))

    @staticmethod
    def _reply(msg: Any, sent: dict[str, Any] | None, adapted: list[str], rejections: list[str]) -> Reply:
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "") == "text")
        usage = getattr(msg, "usage", None)  # the SDK builds replies unvalidated: it may be absent
        return Reply(text=text, input_tokens=getattr(usage, "input_tokens", None),
                     output_tokens=getattr(usage, "output_tokens", None), stop_reason=msg.stop_reason, model=msg.model,
                     sent_params=sent, adapted=adapted, rejections=rejections)


# o1, o3, o4-mini, o3-pro-2025-06-10, gpt-5, gpt-5-mini, gpt-5.1 ... but not gpt-50 or olmo.
_REASONING_NAME = re.compile(r"(o[1-9][0-9]*|gpt-5)(?![0-9a-z])", re.IGNORECASE)

# Hidden reasoning tokens count against max_completion_tokens; without room for them a reasoning
# model stops with finish_reason "length" and an empty reply. Only tokens used are billed, so a
# generous cap costs nothing when unused. EVALCORE_REASONING_TOKENS overrides it.
REASONING_ALLOWANCE = 16_000


def reasoning_allowance() -> int:
    raw = os.environ.get("EVALCORE_REASONING_TOKENS", "")
    try:
        return max(0, int(raw)) if raw.strip() else REASONING_ALLOWANCE
    except ValueError:
        from evalcore.errors import EvalcoreError

        raise EvalcoreError(f"EVALCORE_REASONING_TOKENS must be a whole number of tokens, got {raw!r}") from None


# Parameters a server may refuse that the judge can do without: the value says what to do.
_ADAPTABLE = {"max_tokens": "max_completion_tokens is sent instead",
              "temperature": "no temperature is sent (the provider's default applies)"}
_UNSUPPORTED_IN_MESSAGE = re.compile(r"unsupported (?:parameter|value):\s*'([a-z_]+)'", re.IGNORECASE)
_UNSUPPORTED_WORDS = re.compile(r"\bunsupported\b|\bnot supported\b", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether `model` names one of OpenAI's reasoning families (o1, o3, o4..., gpt-5...).

    Why by name: those models refuse `max_tokens` (they want `max_completion_tokens`, which
    also bounds their hidden reasoning) and any temperature but their default, so sending the
    right parameters from the first request saves a rejected request per judge. The rule:
    the name after the last "/" (routers write "openai/o3") starts with "o" + a digit, or with
    "gpt-5", followed by the end of the name or a non-alphanumeric character. Names the rule
    cannot know (Azure deployment names, proxies) are handled by OpenAIBackend's fallback.
    """
    return bool(_REASONING_NAME.match(model.rsplit("/", 1)[-1]))


def _rejection(exc: Exception) -> tuple[str, str] | None:
    """(parameter, server message) when a 400 says this model does not support an adaptable
    parameter, else None.

    OpenAI names it in the error body (`param` "max_tokens" with code "unsupported_parameter",
    `param` "temperature" with code "unsupported_value"); some proxies only say it in the
    message ("Unsupported parameter: 'max_tokens' ..."). A 400 about the parameter's value
    being out of range ("max_tokens is too large ... supports at most ...") is not a rejection
    of the parameter: dropping it would change nothing the server objects to.
    """
    if getattr(exc, "status_code", None) != 400:
        return None
    body = getattr(exc, "body", None)
    body = body if isinstance(body, dict) else {}
    message = str(body.get("message") or "")
    param, code = body.get("param"), str(body.get("code") or "")
    if param in _ADAPTABLE and (code.startswith("unsupported") or _UNSUPPORTED_WORDS.search(message)):
        return param, message
    named = _UNSUPPORTED_IN_MESSAGE.search(message)
    return (named.group(1), message) if named and named.group(1) in _ADAPTABLE else None


SCHEMA_REFUSED = "the model refuses an output schema: the reply is parsed from free text"
_SCHEMA_WORDS = re.compile(r"output_config|output_format|response_format|json_schema|structured output|"
                           r"schema", re.IGNORECASE)


def _schema_rejection(exc: Exception, key: str) -> str | None:
    """The server's message when a 400 refuses the output schema (`key` is the request field
    carrying it), else None. Providers say so in the error's `param` or its message."""
    if getattr(exc, "status_code", None) != 400:
        return None
    body = getattr(exc, "body", None)
    body = body if isinstance(body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    message = str(inner.get("message") or body.get("message") or "")
    if inner.get("param") == key or str(inner.get("param") or "").startswith(key):
        return message or f"{key} refused"
    return message if _SCHEMA_WORDS.search(message) else None


def _learn_schema(backend: Any, key: str) -> None:
    """Remember, once per backend, that this model takes no output schema (and say so)."""
    if key not in backend.rejected:
        backend.rejected.add(key)
        log.warning("%s judge %s: the model refuses an output schema; replies are parsed from free text",
                    backend.provider, backend.model)


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama...).

    The key comes from OPENAI_API_KEY; local servers that need none get a placeholder.

    Parameters: `max_tokens` and `temperature: 0` (SAMPLING_TEMPERATURE once `sample()` was
    called, for repeated verdicts), except for reasoning models (see
    is_reasoning_model), which get `max_completion_tokens` and no temperature from the start
    (their recorded temperature is then None, like Anthropic's). For any other name the
    server has the last word: when it answers 400 saying `max_tokens` or `temperature` is
    unsupported, the same request is resent once without it and this instance remembers
    (see complete), so later requests go out right the first time.
    """

    provider = "openai"

    def __init__(self, model: str, base_url: str | None = None, timeout: float = 60.0):
        self.model = model
        self.timeout = timeout
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.reasoning = is_reasoning_model(model)
        self.temperature: float | None = None if self.reasoning else 0.0
        self.asked_temperature = 0.0  # what params() asks for (sample() raises it)
        self.rejected: set[str] = set()  # parameters this server refused for this model

    def sample(self) -> None:
        """Ask for SAMPLING_TEMPERATURE from now on (`score --repeats K`, K > 1), so repeated
        verdicts are independent samples; the judge id records it. A reasoning model, or a
        server that refused a temperature, samples at its own default and records None."""
        self.asked_temperature = SAMPLING_TEMPERATURE
        if not self.reasoning and "temperature" not in self.rejected:
            self.temperature = SAMPLING_TEMPERATURE

    def params(self, system: str, messages: list[dict], max_tokens: int,
               schema: dict[str, Any] | None = None, name: str = "reply") -> dict[str, Any]:
        """The request the judge asks for, which is also what the cache key hashes. With
        `schema`, the reply is constrained to it (`response_format` json_schema, strict).

        It depends on the model name (and on whether the judge samples, `sample`) only, never
        on what this instance has learnt from the server: the adaptation is the same for every request to one server and model, so a
        re-run by a fresh judge still finds its replies in the cache without asking again.
        """
        params: dict[str, Any] = {"model": self.model,
                                  "messages": [{"role": "system", "content": system}, *messages]}
        if self.reasoning:  # the reply's limit plus room for the hidden reasoning
            params["max_completion_tokens"] = max_tokens + reasoning_allowance()
        else:
            params.update(max_tokens=max_tokens, temperature=self.asked_temperature)
        if schema is not None:
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": name, "strict": True, "schema": schema}}
        return params

    def wire_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """`params` as this server accepts them, given the parameters it has refused so far."""
        sent = dict(params)
        if "max_tokens" in self.rejected and "max_tokens" in sent:
            # A server refusing max_tokens is serving a reasoning model: leave room for it.
            sent["max_completion_tokens"] = sent.pop("max_tokens") + reasoning_allowance()
        if "temperature" in self.rejected:
            sent.pop("temperature", None)
        if "response_format" in self.rejected:
            sent.pop("response_format", None)
        return sent

    def _learn(self, param: str) -> None:
        """Remember that the server refuses `param`, once per instance, and say so in the log
        (without the server's message: the judge client scrubs keys from it, the log cannot)."""
        if param in self.rejected:
            return
        self.rejected.add(param)
        if param == "temperature":
            self.temperature = None  # judge ids from now on record that no temperature is sent
        log.warning("openai judge %s: the server rejects %s for this model; from now on %s",
                    self.model, param, _ADAPTABLE[param])

    def secrets(self) -> set[str]:
        return {os.environ.get("OPENAI_API_KEY", "")} | url_secrets(self.base_url)

    def open(self) -> Any:
        import openai

        key = os.environ.get("OPENAI_API_KEY")
        if not key and not self.base_url:
            from evalcore.errors import EvalcoreError

            raise EvalcoreError("the openai judge needs OPENAI_API_KEY (or a local server: openai:MODEL@URL)")
        key = key or "no-key"  # local OpenAI-compatible servers usually accept any key
        base, query = _split_base(self.base_url)
        return openai.AsyncOpenAI(api_key=key, base_url=base, default_query=query, max_retries=0,
                                  timeout=self.timeout, http_client=_http_client(openai))

    async def complete(self, client: Any, params: dict[str, Any]) -> Reply:
        """Send `params` (as wire_params adapts them) and return the reply.

        A 400 that rejects an adaptable parameter the request carried is not a failure of the
        judge call: the server is learnt from and the request resent at once, inside this one
        attempt, so the judge client's retry budget and error count never see it. Each
        parameter can be dropped only once, so this ends after at most three requests; any
        other 400 (or a rejection of something already adapted) is a FatalError as before.
        """
        import openai

        sent, rejections = self.wire_params(params), []
        while True:
            try:
                resp = await within(self.timeout, client.chat.completions.create(**sent))
                break
            except TransientError:
                raise
            except Exception as exc:  # noqa: BLE001
                refused = _schema_rejection(exc, "response_format")
                if refused is not None and "response_format" in sent:
                    _learn_schema(self, "response_format")
                    rejections.append(f"HTTP 400 rejected response_format: {refused[:300]}")
                    sent = self.wire_params(params)
                    continue
                rejection = _rejection(exc)
                if rejection is None or rejection[0] not in sent:
                    raise classify(exc, openai) from None
                param, message = rejection
                self._learn(param)
                rejections.append(f"HTTP 400 rejected {param}: {message[:300]}")
                sent = self.wire_params(params)
        return read_reply(lambda: self._reply(resp, params, sent, rejections))

    @staticmethod
    def _reply(resp: Any, params: dict[str, Any], sent: dict[str, Any], rejections: list[str]) -> Reply:
        if not resp.choices:
            raise TransientError("reply without choices")
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        adapted = [f"the server rejects {name} for this model: {_ADAPTABLE[name]}"
                   for name in _ADAPTABLE if name in params and name not in sent]
        if "response_format" in params and "response_format" not in sent:
            adapted.append(SCHEMA_REFUSED)
        text = choice.message.content or ""
        if not isinstance(text, str):
            raise TypeError(f"the message content is {type(text).__name__}, not text")
        return Reply(text=text, input_tokens=getattr(usage, "prompt_tokens", None),
                     output_tokens=getattr(usage, "completion_tokens", None),
                     stop_reason=choice.finish_reason, model=resp.model,
                     sent_params=sent if sent != params else None, adapted=adapted, rejections=rejections)
