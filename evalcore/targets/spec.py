"""How to talk to one RAG server: URL, headers, endpoints, request template, response map.

The defaults are evalcore's own contract (GET /health, GET /models/info, GET /index/stats,
POST /query with {"question", "method", "top_k"}), so `TargetSpec(url=...)` is enough for a
server that speaks it. Anything else is described, not coded:

* headers take values from the environment with `${ENV_NAME}`; the template is what gets
  stored in a run manifest, the resolved value never is (`public_dict`).
* the request body is a JSON template; a string that is exactly `{{name}}` is replaced by the
  variable with its type kept (top_k stays an int), `{{name}}` inside longer text is
  substituted as text. Variables: question, question_id, method, top_k and the method's params.
* the response map gives a field path (see paths.py) for every part of an EvalResponse.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalcore.errors import EvalcoreError
from evalcore.common.secret_urls import public_url
from evalcore.targets.paths import parse_path

__all__ = ["TargetSpec", "ResponseMap", "TargetConfigError", "public_url", "render_body"]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
SENSITIVE_HEADER = re.compile(r"auth|token|key|secret|cookie|password|session", re.I)


class TargetConfigError(EvalcoreError):
    """A target config that cannot work (unknown env var, bad path, bad template)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


DEFAULT_CHUNK_FIELDS = {"chunk_id": "chunk_id", "text": "text", "score": "score", "rank": "rank",
                        "rel_path": "rel_path", "heading_path": "heading_path", "section": "section"}
DEFAULT_CITATION_FIELDS = {"chunk_id": "chunk_id", "rel_path": "rel_path",
                           "heading_path": "heading_path", "section": "section"}


class ResponseMap(_Strict):
    """Field paths into the server's JSON. Chunk/citation fields are relative to each item;
    a citation item that is a plain string or number is taken as a chunk id."""

    answer: str = "answer"
    retrieved: str | None = "retrieved[*]"
    chunk_fields: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_CHUNK_FIELDS))
    citations: str | None = "citations[*]"
    citation_fields: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_CITATION_FIELDS))
    abstained: str | None = "abstained"
    scope: str | None = "scope"
    input_tokens: str | None = "token_usage.input_tokens"
    output_tokens: str | None = "token_usage.output_tokens"
    model: str | None = "token_usage.model"
    cost_usd: str | None = "token_usage.cost_usd"
    timings: str | None = "timings"

    @field_validator("answer", "retrieved", "citations", "abstained", "scope", "input_tokens",
                     "output_tokens", "model", "cost_usd", "timings")
    @classmethod
    def _valid_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_path(value)
        return value

    @field_validator("chunk_fields", "citation_fields")
    @classmethod
    def _valid_field_paths(cls, value: dict[str, str]) -> dict[str, str]:
        allowed = set(DEFAULT_CHUNK_FIELDS)
        for key, path in value.items():
            if key not in allowed:
                raise ValueError(f"unknown chunk/citation field {key!r}; use {sorted(allowed)}")
            parse_path(path)
        return value


DEFAULT_BODY: dict[str, Any] = {"question": "{{question}}", "method": "{{method}}", "top_k": "{{top_k}}"}


def _no_control_characters(value: str, what: str) -> None:
    """Refuse a URL or path holding a control character (C0, DEL, C1; tab and newline too): HTTP
    clients either refuse them mid-run or silently drop them (a tab vanishes from the URL asked),
    so the URL would not be the one configured. Said when the settings are read, with its place."""
    for i, ch in enumerate(value):
        if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F:
            raise ValueError(f"{what} has a control character (U+{ord(ch):04X}) at position {i}: {value!r}")


class TargetSpec(_Strict):
    """One RAG server. Paths set to null are not called (e.g. a server without /health)."""

    name: str = "default"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    health_path: str | None = "/health"
    info_path: str | None = "/models/info"
    stats_path: str | None = "/index/stats"
    query_path: str = "/query"
    query_http_method: str = "POST"
    body: Any = Field(default_factory=lambda: dict(DEFAULT_BODY))
    response: ResponseMap = Field(default_factory=ResponseMap)
    verify_tls: bool = True

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        _no_control_characters(value, "target url")
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"target url must start with http:// or https://, got {value!r}")
        try:
            httpx.URL(value)
            urlsplit(value).port  # a port outside 0-65535 raises here, not mid-run
        except (httpx.InvalidURL, ValueError) as exc:
            raise ValueError(f"target url {value!r} is not a valid URL: {exc}") from None
        return value.rstrip("/")

    @field_validator("health_path", "info_path", "stats_path", "query_path")
    @classmethod
    def _endpoint_is_a_path(cls, value: str | None) -> str | None:
        """An endpoint is a path (and query) on the target's URL: a full URL here would send the
        configured headers to another server."""
        if value is not None:
            _no_control_characters(value, "endpoint")
            parts = urlsplit(value)
            if parts.scheme or parts.netloc:
                raise ValueError(f"endpoint must be a path on the target url (like /health), not a URL: "
                                 f"{value!r}; to reach another server, set the target's url")
        return value

    @field_validator("query_http_method")
    @classmethod
    def _verb(cls, value: str) -> str:
        value = value.upper()
        if value not in {"POST", "GET", "PUT"}:
            raise ValueError("query_http_method must be POST, GET or PUT")
        return value

    def resolved_headers(self) -> dict[str, str]:
        """Headers with `${ENV}` references filled from the environment (never stored)."""
        out = {}
        for name, template in self.headers.items():
            def sub(match: re.Match[str]) -> str:
                env = match.group(1)
                if env not in os.environ:
                    raise TargetConfigError(f"target {self.name!r}: header {name!r} needs environment "
                                            f"variable {env} which is not set")
                return os.environ[env]
            out[name] = _ENV_REF.sub(sub, template)
        return out

    def public_dict(self) -> dict[str, Any]:
        """The spec as stored in a manifest: env references kept, literal secrets redacted, URL
    credentials and secret query values shown as `***`."""
        data = self.model_dump(mode="json")
        data["url"] = public_url(self.url)
        headers = {}
        for name, template in self.headers.items():
            if _ENV_REF.search(template) or not SENSITIVE_HEADER.search(name):
                headers[name] = template
            else:
                headers[name] = "<redacted: use ${ENV_NAME} so resume can re-read it>"
        data["headers"] = headers
        return data


def render_body(template: Any, variables: dict[str, Any]) -> Any:
    """Fill a JSON template: exact `{{var}}` keeps the value's type, embedded ones become text."""
    if isinstance(template, dict):
        return {render_body(k, variables) if isinstance(k, str) else k: render_body(v, variables)
                for k, v in template.items()}
    if isinstance(template, list):
        return [render_body(v, variables) for v in template]
    if not isinstance(template, str):
        return template
    whole = _VAR.fullmatch(template.strip())
    if whole:
        return _lookup(whole.group(1), variables)
    return _VAR.sub(lambda m: str(_lookup(m.group(1), variables)), template)


def _lookup(name: str, variables: dict[str, Any]) -> Any:
    if name not in variables:
        raise TargetConfigError(f"request template uses {{{{{name}}}}} but only "
                                f"{', '.join(sorted(variables))} are defined")
    return variables[name]
