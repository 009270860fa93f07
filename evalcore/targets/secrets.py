r"""Secret values a target client holds, and scrubbing them out of what it stores.

Header secrets never go into a manifest (spec.public_dict keeps the `${ENV}` template), but a
server can still send them back: an error page or a debugging proxy that echoes the request
headers, an answer that quotes its own auth context. Whatever the client stores (answers,
raw payloads, error messages) comes from the server's bytes, so the client removes every
secret it sent from those bytes before parsing them, and again from every string after JSON
decoding: JSON may spell a secret with escapes (`\/`, `\u0041`) that no byte search sees.
Values shorter than 6 characters are not treated as secrets (replacing "1" or "yes"
everywhere would corrupt answers). URL credentials and secret-looking query parameters are
secrets too (`evalcore.common.secret_urls`).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from evalcore.common.secret_urls import url_secrets

REDACTED = "[redacted]"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MIN_LEN = 6


class Redactor:
    def __init__(self, values: set[str]):
        # longest first, so a secret containing another is replaced whole
        self.values = sorted((v for v in values if len(v) >= MIN_LEN), key=len, reverse=True)
        forms: list[bytes] = []
        for v in self.values:  # the secret as sent, and as a JSON encoder may spell it
            escaped = json.dumps(v)[1:-1]
            for form in (v, escaped, escaped.replace("/", "\\/"), json.dumps(v, ensure_ascii=False)[1:-1]):
                b = form.encode("utf-8")
                if b not in forms:
                    forms.append(b)
        self._bytes = sorted(forms, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.values:
            value = value.replace(secret, REDACTED)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            value = value.replace(secret, REDACTED.encode())
        return value

    def deep(self, value: Any) -> Any:
        """`value` (decoded JSON) with every secret removed from every string, keys included."""
        if not self.values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        return value


def secret_values(url: str, headers: dict[str, str], sensitive: re.Pattern[str]) -> set[str]:
    """Environment values used by header templates, literal values of sensitive headers (and
    their token after a scheme like `Bearer `), URL credentials and secret query values."""
    out: set[str] = set()
    for name, template in headers.items():
        for env in _ENV_REF.findall(template):
            out.add(os.environ.get(env, ""))
        if sensitive.search(name):
            literal = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), template)
            out.add(literal)
            out.add(literal.split(" ", 1)[-1])
    out.update(url_secrets(url))
    return out
