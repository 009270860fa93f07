"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, TEI...).

Selected with a model string `MODEL@BASE_URL`, e.g. `text-embedding-3-small@https://api.openai.com/v1`
or `nomic-embed-text@http://127.0.0.1:11434`. The base URL may end in `/v1` or not; `/embeddings`
is appended accordingly. The API key is read from the environment at request time
(EVALCORE_EMBEDDING_API_KEY, else OPENAI_API_KEY) and never stored, logged or put in a model id;
local servers need none.

A reply is read in bounded memory (evalcore/common/http_body.py): at most `max_reply_bytes` (64 MB,
or 256 KB per text of a larger batch), sent or once decoded, whatever its Content-Encoding.
Its text is read as UTF-8/16/32, or ISO-8859-1 / windows-1252 when declared; a reply declaring
another charset is refused, never decoded with a codec the server names (evalcore/common/reply_charset.py).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx
import numpy as np

from evalcore.errors import EvalcoreError
from evalcore.common.http_body import BodyRefused, accept_encoding, read_body
from evalcore.common.reply_charset import CharsetRefused, json_source, preview
from evalcore.common.secret_urls import public_url, split_url, url_secrets

KEY_ENV_VARS = ("EVALCORE_EMBEDDING_API_KEY", "OPENAI_API_KEY")
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MIN_REPLY_BYTES = 64 * 2 ** 20
REPLY_BYTES_PER_TEXT = 256 * 2 ** 10  # a 4096-dimension vector as JSON text is about 80 KB


class EmbeddingServiceError(EvalcoreError):
    """The embedding endpoint failed or answered something that is not an embeddings response."""


def parse_model_at_url(spec: str) -> tuple[str, str] | None:
    """Split `model@http(s)://...` into (model, base_url); None if `spec` is not of that form."""
    model, sep, url = spec.rpartition("@")
    if not sep or not model or not url.startswith(("http://", "https://")):
        return None
    return model, url.rstrip("/")


def embeddings_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return base + "/embeddings"
    return base + "/v1/embeddings"


class OpenAICompatibleBackend:
    """Posts batches of texts; retries 429/5xx/timeouts with exponential backoff."""

    source = "openai-compatible"

    def __init__(self, model: str, base_url: str, batch_size: int = 128, timeout: float = 60.0,
                 max_retries: int = 3, backoff: float = 0.5, transport: httpx.BaseTransport | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        # the model id is stored with every embedding-based score: credentials and secret
        # query values in the URL are masked there, and sent separately (see secret_urls)
        self.model_id = f"{model}@{public_url(self.base_url)}"
        bare, self._params, creds = split_url(self.base_url)
        self._auth = httpx.BasicAuth(*creds) if creds else None
        self._secrets = sorted((v for v in url_secrets(self.base_url) if len(v) >= 6), key=len, reverse=True)
        self.url = embeddings_url(bare)
        self.batch_size = max(1, int(batch_size))
        self.max_reply_bytes = max(MIN_REPLY_BYTES, self.batch_size * REPLY_BYTES_PER_TEXT)
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff
        self._client = httpx.Client(timeout=timeout, transport=transport)

    def describe(self) -> str:
        return f"{self.model} via OpenAI-compatible endpoint {self.url}"

    def close(self) -> None:
        self._client.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept-Encoding": accept_encoding()}
        for name in KEY_ENV_VARS:
            key = os.environ.get(name)
            if key:
                headers["Authorization"] = f"Bearer {key}"
                break
        return headers

    def _scrub(self, text: str) -> str:
        """An error body without the secrets this backend sends (a server may echo them)."""
        for secret in self._secrets + [v for v in (os.environ.get(n) for n in KEY_ENV_VARS) if v and len(v) >= 6]:
            text = text.replace(secret, "[redacted]")
        return text

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for `texts` in order (not yet normalised), one request per `batch_size` texts."""
        chunks = [self._request(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(chunks, axis=0) if chunks else np.zeros((0, 0), dtype=np.float32)

    def _request(self, batch: list[str]) -> np.ndarray:
        payload = {"model": self.model, "input": batch, "encoding_format": "float"}
        last: str = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                status, body, headers = self._post(payload)
            except httpx.TimeoutException as exc:
                last = f"timeout ({exc.__class__.__name__})"
                continue
            except httpx.HTTPError as exc:
                raise EmbeddingServiceError(f"cannot reach embedding endpoint {self.url}: {exc}") from exc
            except BodyRefused as exc:  # the same reply would come again
                raise EmbeddingServiceError(f"embedding endpoint {self.url}: {exc}") from exc
            if status in _RETRY_STATUS:
                last = f"HTTP {status}: {self._scrub(preview(body, headers))[:200]}"
                continue
            if not 200 <= status < 300:  # a 1xx or 3xx final reply is no answer either
                raise EmbeddingServiceError(f"embedding endpoint {self.url} answered HTTP "
                                            f"{status}: {self._scrub(preview(body, headers))[:300]}")
            try:
                source = json_source(body, headers)
            except CharsetRefused as exc:  # the same reply would come again
                raise EmbeddingServiceError(f"embedding endpoint {self.url}: {exc}") from None
            return self._parse(source, len(batch))
        raise EmbeddingServiceError(
            f"embedding endpoint {self.url} failed after {self.max_retries + 1} attempts: {last}")

    def _post(self, payload: dict[str, Any]) -> tuple[int, bytes, httpx.Headers]:
        """(status, decoded body, headers) of one request, the body read under `max_reply_bytes`."""
        headers = self._headers()
        auth = self._auth if "Authorization" not in headers else None
        with self._client.stream("POST", self.url, json=payload, headers=headers,
                                 params=self._params or None, auth=auth) as response:
            label = f"{self.max_reply_bytes / 2 ** 20:g} MB"
            return response.status_code, read_body(response, self.max_reply_bytes, label), response.headers

    def _parse(self, content: bytes | str, expected: int) -> np.ndarray:
        try:
            body: Any = json.loads(content)
            items = body["data"]
            ordered = sorted(items, key=lambda item: int(item.get("index", 0)))
            vectors = np.asarray([item["embedding"] for item in ordered], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise EmbeddingServiceError(
                f"embedding endpoint {self.url} returned a malformed response ({exc.__class__.__name__}: {exc})"
            ) from exc
        if vectors.ndim != 2 or len(vectors) != expected:
            raise EmbeddingServiceError(
                f"embedding endpoint {self.url} returned {len(vectors)} vectors for {expected} texts")
        if not np.isfinite(vectors).all():
            raise EmbeddingServiceError(f"embedding endpoint {self.url} returned non-finite values")
        return vectors
