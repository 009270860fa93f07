"""Making decoded text storable: lone UTF-16 surrogates become U+FFFD, and we count them.

JSON may spell a half of a surrogate pair on its own (`"\\ud800"`); Python decodes it into a
str that cannot be encoded as UTF-8, so Parquet, pydantic serialisation and every export
fail on it far from where it came in. Replacing it where text enters (an import, a target's
reply) keeps one bad character from failing a whole file or run; the count lets the caller
say that it happened instead of changing the text silently.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate in its strings (keys too) replaced, and how many were.

    Containers are rebuilt only when something inside them changed, so the common case
    (clean text) costs one regex scan per string and no copies.
    """
    if isinstance(value, str):
        fixed, n = _SURROGATE.subn(REPLACEMENT, value)
        return (fixed, n) if n else (value, 0)
    if isinstance(value, dict):
        total, out = 0, {}
        for k, v in value.items():
            k2, nk = replace_lone_surrogates(k)
            v2, nv = replace_lone_surrogates(v)
            total += nk + nv
            out[k2] = v2
        return (out, total) if total else (value, 0)
    if isinstance(value, (list, tuple)):
        total, items = 0, []
        for v in value:
            v2, n = replace_lone_surrogates(v)
            total += n
            items.append(v2)
        return (type(value)(items), total) if total else (value, 0)
    return value, 0
