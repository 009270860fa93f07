"""`phoenix://HOST:PORT/PROJECT`: read, checked whole, before anything is sent.

`phoenix://` names a Phoenix server reached over plain HTTP, `phoenixs://` over HTTPS. What
else a URL can hold is refused here, as a usage error of one line, instead of surfacing later as
an "unexpected" crash in the HTTP library (an IPv4 address such as 999.1.1.1, a project name of
70,000 characters, a byte that is not UTF-8 in the command line) or being silently dropped (a
query `?x=1`, a fragment, a second path segment `/p/` or `//p`):

- credentials in the URL (a key belongs in PHOENIX_API_KEY, never in a manifest or a log);
- a host that is neither an IP address nor a host name, a port that is not 1..65535;
- a project that is not one plain name: empty, `.` or `..`, holding `/`, a control character
  or a byte that is not UTF-8, or longer than MAX_PROJECT_CHARS. Percent-escapes are read as in any URL
  path (`my%20project` is the project "my project"), then the name is checked.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from evalcore.errors import EvalcoreError

SCHEMES = {"phoenix": "http", "phoenixs": "https"}
MAX_PROJECT_CHARS = 1000  # with its %-escapes, a request URL stays far below httpx's 65,536 bytes
USAGE = "expected phoenix://HOST:PORT/PROJECT, one project name after the port (phoenixs:// for HTTPS)"
_HOST_NAME = re.compile(rb"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")


@dataclass(frozen=True)
class PhoenixTarget:
    base_url: str
    project: str

    @property
    def label(self) -> str:
        return f"project {self.project!r} on {self.base_url}"

    @property
    def spans_path(self) -> str:
        """The project's span listing, relative to `base_url`."""
        return f"v1/projects/{quote(self.project, safe='')}/spans"


def is_phoenix_url(text: str) -> bool:
    return text.split("://", 1)[0].lower() in SCHEMES and "://" in text


def _shown(text: str) -> str:
    """The URL for a message, at most 120 characters; repr() escapes what cannot be printed
    (control characters, terminal escapes, the surrogate a byte that is not UTF-8 became)."""
    return repr(text if len(text) <= 120 else text[:117] + "...")


def _refuse(text: str, why: str) -> EvalcoreError:
    return EvalcoreError(f"{_shown(text)}: {why}; {USAGE}")


def _project(text: str, path: str) -> str:
    """The one plain project name `path` (the URL's path) holds, or a usage error saying why not."""
    if not path.startswith("/") or not path[1:]:
        raise _refuse(text, "no project name")
    try:
        project = unquote(path[1:], errors="strict")
    except UnicodeDecodeError:
        raise _refuse(text, "a %-escape that is not UTF-8 in the project name") from None
    if "/" in project:
        raise _refuse(text, "more than one path segment (a project name holds no '/')")
    if len(project) > MAX_PROJECT_CHARS:
        raise _refuse(text, f"a project name of {len(project):,} characters, past the bound of {MAX_PROJECT_CHARS:,}")
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in project):
        raise _refuse(text, "a control character or a byte that is not UTF-8 in the project name")
    if not project.strip():
        raise _refuse(text, "a project name of only spaces")
    if project in (".", ".."):  # the request path would resolve it: v1/projects/../spans
        raise _refuse(text, f"{project!r} is a path step, not a project name")
    return project


def _host(text: str, hostname: str) -> str:
    """The host as a URL writes it; a usage error for one that is no IP address or host name."""
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        address = None
    if address is not None:
        return f"[{address}]" if address.version == 6 else str(address)
    try:
        encoded = hostname.encode("idna")
    except UnicodeError:
        encoded = b""
    if not _HOST_NAME.fullmatch(encoded) or len(encoded) > 253 or encoded.replace(b".", b"").isdigit():
        raise _refuse(text, f"{hostname[:80]!r} is neither an IP address nor a host name")
    return hostname


def parse_url(text: str) -> PhoenixTarget:
    """phoenix://HOST:PORT/PROJECT -> (http://HOST:PORT, PROJECT); one usage error otherwise."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse(text, "a byte that is not UTF-8") from None
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise _refuse(text, "a control character")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _refuse(text, str(exc)) from None
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise _refuse(text, "not a phoenix:// URL")
    if parts.username is not None or parts.password is not None:
        raise EvalcoreError("a Phoenix URL must not hold credentials; set PHOENIX_API_KEY instead")
    if "?" in text or "#" in text:
        raise _refuse(text, "a query or fragment, which evalcore would not send")
    if not parts.hostname:
        raise _refuse(text, "no host")
    if port == 0:
        raise _refuse(text, "port 0")
    target = PhoenixTarget(f"{scheme}://{_host(text, parts.hostname)}{':' + str(port) if port else ''}",
                           _project(text, parts.path))
    import httpx

    try:  # what the requests will be built from: any other refusal of httpx's is caught here too
        httpx.URL(target.base_url).join(target.spans_path)
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise _refuse(text, str(exc)[:200]) from None
    return target
