"""Secrets inside URLs: `user:password@` and query parameters such as `?api_key=...`.

A target or judge URL is stored (run manifests, judge ids, the judge cache's requests) and
printed (errors, logs), so whatever secret it carries would land there verbatim. Both kinds
are found here once: `public_url` masks them as `***` for anything stored or shown, and
`url_secrets` lists the values so replies that echo them can be scrubbed. Which query
parameters count as secret is decided by name (key, token, secret, password, sig, ...): the
value of `?top_k=5` is harmless and useful to keep, the value of `?api_key=` never is.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential|session|cookie|jwt", re.I)


def _netloc_without_userinfo(netloc: str) -> str:
    return netloc.rpartition("@")[2]


def split_url(url: str) -> tuple[str, list[tuple[str, str]], tuple[str, str] | None]:
    """(URL without userinfo and query, the query's parameters, (user, password) or None)."""
    parts = urlsplit(url)
    creds = None
    if parts.username is not None or parts.password is not None:
        creds = (unquote(parts.username or ""), unquote(parts.password or ""))
    bare = urlunsplit((parts.scheme, _netloc_without_userinfo(parts.netloc), parts.path, "", ""))
    return bare, parse_qsl(parts.query, keep_blank_values=True), creds


def public_url(url: str) -> str:
    """The URL as it may be stored or printed: credentials and secret-looking query values
    replaced by `***` (the names stay, so a reader sees that a key was configured)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{_netloc_without_userinfo(netloc)}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if SECRET_PARAM.search(k) and v else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def basic_token(user: str, password: str) -> str:
    """The token of a Basic Authorization header (`Basic <token>`) for these credentials, UTF-8
    as httpx encoded them: what the targets' client sends, and so a secret to scrub."""
    return base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")


def url_secrets(url: str | None) -> set[str]:
    """Every secret value in `url`, raw and percent-decoded, plus the Basic-auth token its
    credentials would produce (servers that print request headers echo that form)."""
    if not url:
        return set()
    parts = urlsplit(url)
    out: set[str] = set()
    for cred in (parts.username, parts.password):
        if cred:
            out.update({cred, unquote(cred)})
    if parts.password:
        out.add(basic_token(unquote(parts.username or ""), unquote(parts.password)))
    for raw in parts.query.split("&") if parts.query else []:
        name, _, value = raw.partition("=")
        if value and SECRET_PARAM.search(unquote(name)):
            out.update({value, unquote(value.replace("+", " "))})
    return {v for v in out if v}
