"""Secret values a target client holds, and scrubbing them out of what it stores.

Header secrets never go into a manifest (spec.public_dict keeps the `${ENV}` template), but a
server can still send them back: an error page or a debugging proxy that echoes the request
headers, an answer that quotes its own auth context. Whatever the client stores (answers,
raw payloads, error messages) comes from the server's bytes, so the client removes every
secret it sent from those bytes before parsing them. Values shorter than 6 characters are
not treated as secrets (replacing "1" or "yes" everywhere would corrupt answers).
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

REDACTED = "[redacted]"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MIN_LEN = 6


class Redactor:
    def __init__(self, values: set[str]):
        # longest first, so a secret containing another is replaced whole
        self.values = sorted((v for v in values if len(v) >= MIN_LEN), key=len, reverse=True)
        self._bytes = [v.encode("utf-8") for v in self.values]

    def text(self, value: str) -> str:
        for secret in self.values:
            value = value.replace(secret, REDACTED)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            value = value.replace(secret, REDACTED.encode())
        return value


def secret_values(url: str, headers: dict[str, str], sensitive: re.Pattern[str]) -> set[str]:
    """Environment values used by header templates, literal values of sensitive headers (and
    their token after a scheme like `Bearer `), and URL credentials."""
    out: set[str] = set()
    for name, template in headers.items():
        for env in _ENV_REF.findall(template):
            out.add(os.environ.get(env, ""))
        if sensitive.search(name):
            literal = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), template)
            out.add(literal)
            out.add(literal.split(" ", 1)[-1])
    parts = urlsplit(url)
    for cred in (parts.password, parts.username):
        if cred:
            out.update({cred, unquote(cred)})
    return out
