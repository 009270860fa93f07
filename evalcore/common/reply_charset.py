"""Which text a server's reply bytes stand for, whatever its `Content-Type: ...; charset=` says.

Why not decode with the charset the server names (what `httpx.Response.text` does): the
server then picks the codec, and Python ships codecs that are far from linear. `punycode`
took about a minute for a 600 KB reply, days for one at the 32 MB cap, all of it inside the
event loop where no `--timeout` could stop it; an unknown name (`charset=foo`) ended as an
"unexpected failure: LookupError". So evalcore reads only what it knows to take linear time:

* JSON is UTF-8 (RFC 8259; UTF-16 and UTF-32 are told apart by a byte-order mark or by the
  zero bytes around the first ASCII characters, as `json.loads` does with bytes). With no
  charset, or one of the Unicode family (utf-8, utf-16, utf-32 and their byte orders,
  us-ascii, a subset of UTF-8), the bytes themselves are parsed: what they are decides.
* ISO-8859-1 (latin-1) and windows-1252, which older servers still declare and send, are
  decoded as declared: one table look-up per byte.
* Any other charset (another codec, an unknown name, two different ones, a name that is not
  plain ASCII) is refused unread with `CharsetRefused`, naming it, rather than guessed: a
  body in Shift-JIS or UTF-7 may well be valid UTF-8 that means something else.

`preview` is the start of a body for a message (an HTTP error, a reply that is not JSON):
decoded with an allowed codec, or as UTF-8, errors replaced, never with the declared codec
otherwise. `text_codec` is the same choice for a library that decodes `.text` itself (the
judges' SDKs): an httpx response hook sets it before the library reads the text.

The Content-Type is parsed here, not by httpx (`charset_encoding` hands the header to the
email package, which ignores a non-ASCII name instead of refusing it).
"""

from __future__ import annotations

import json
import re
from typing import Any

PREVIEW_BYTES = 4096  # of a body, decoded for a message: messages show a few hundred characters
SHOWN_CHARS = 40  # of a refused charset's name, in the message

# charset label (lower case, `_` read as `-`) -> how the body is read
UNICODE = {"utf-8", "utf8", "us-ascii", "ascii", "utf-16", "utf-16le", "utf-16be", "utf-32", "utf-32le",
           "utf-32be"}
SINGLE_BYTE = {"iso-8859-1": "latin-1", "iso8859-1": "latin-1", "latin-1": "latin-1", "latin1": "latin-1",
               "l1": "latin-1", "cp819": "latin-1", "windows-1252": "cp1252", "cp1252": "cp1252"}
ALLOWED_NAMES = "UTF-8, UTF-16, UTF-32, US-ASCII, ISO-8859-1 or windows-1252"

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_PARAM = re.compile(r";\s*(" + _TOKEN + r")\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;,\s]*)")
_QUOTED_PAIR = re.compile(r"\\(.)")


class CharsetRefused(ValueError):
    """The reply declares a charset evalcore does not decode; the message names it, for the user."""


def declared_charsets(content_type: str | None) -> list[str]:
    """Every `charset` parameter of a Content-Type value (several headers arrive joined by
    commas), unquoted, as sent; `charset*` (RFC 2231) is kept under its raw value, so it is
    refused rather than decoded with a codec it names."""
    found = []
    for name, value in _PARAM.findall(content_type or ""):
        if name.lower() in ("charset", "charset*"):
            if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                value = _QUOTED_PAIR.sub(r"\1", value[1:-1])
            found.append(value.strip())
    return [value for value in found if value]


def _label(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _shown(name: str) -> str:
    name = name if len(name) <= SHOWN_CHARS else name[:SHOWN_CHARS] + "..."
    return ascii(name)


def declared(headers: Any) -> str | None:
    """The one charset a reply's headers declare (None: none); CharsetRefused when they
    declare one evalcore does not read, or two different ones."""
    names = declared_charsets(headers.get("content-type"))
    labels = list(dict.fromkeys(_label(name) for name in names))
    if not labels:
        return None
    if len(labels) > 1:
        raise CharsetRefused(f"the reply declares {len(labels)} different charsets "
                             f"({', '.join(_shown(n) for n in labels[:3])}); refused unread")
    label = labels[0]
    if label in UNICODE or label in SINGLE_BYTE:
        return label
    raise CharsetRefused(f"the reply declares charset {_shown(names[0])}, which evalcore does not decode "
                         f"(it reads JSON as {ALLOWED_NAMES}); refused unread")


def json_source(content: bytes, headers: Any) -> bytes | str:
    """What `json.loads` should read of a reply: its bytes (Unicode, detected as RFC 8259 says)
    or their text in a declared single-byte charset; CharsetRefused for any other charset."""
    label = declared(headers)
    if label in SINGLE_BYTE:
        return content.decode(SINGLE_BYTE[label], errors="replace")  # cp1252 leaves five bytes undefined
    return content


def text_codec(headers: Any) -> str:
    """The codec to decode a reply's text with: the declared one when it is allowed, else UTF-8."""
    try:
        label = declared(headers)
    except CharsetRefused:
        return "utf-8"
    if label in SINGLE_BYTE:
        return SINGLE_BYTE[label]
    return label if label and label.startswith("utf-") else "utf-8"


def preview(content: bytes, headers: Any, limit: int = PREVIEW_BYTES) -> str:
    """The start of a body as text for a message, in linear time: the allowed declared codec,
    else UTF-8 (or the UTF-16/32 its first bytes show), errors replaced."""
    head = content[:limit]
    codec = text_codec(headers)
    if codec not in SINGLE_BYTE.values():
        codec = json.detect_encoding(head) if head else "utf-8"
    return head.decode(codec, errors="replace")


async def pin_text_codec(response: Any) -> None:
    """An httpx response hook (`event_hooks={"response": [pin_text_codec]}`): the library's
    `response.text` (an SDK quoting an error body) then decodes with `text_codec`, not with
    whatever codec the server names. Set before the body is read, so before any `.text`."""
    response.encoding = text_codec(response.headers)


def with_text_pinned(client: Any) -> Any:
    """`client` (an httpx or httpx2 AsyncClient handed to an SDK) with `pin_text_codec` added to
    its response hooks, whatever hooks or transport it already has."""
    hooks = client.event_hooks
    client.event_hooks = {"request": list(hooks.get("request", [])),
                          "response": [*hooks.get("response", []), pin_text_codec]}
    return client
