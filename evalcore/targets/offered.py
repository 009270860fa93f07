"""The methods a RAG server says it offers, read from its /models/info, for the Launch page.

Why: a run needs the method names the server knows; a run with none used to ask the server for
`default` and every answer failed (issue 23). Typing names from memory is where that starts, so
the page offers what the server itself lists. Why here: a network call belongs with the targets,
and this is one read-only question put to a target, through the same client a run uses
(client.py: secrets redacted, size capped, redirects kept to the target's origin). It is the one
module of evalcore/targets the dashboard may import (tests/test_layers.py, docs/architecture.md):
the dashboard otherwise reads through analysis, which makes no network call.

Bounded: the whole exchange (connect, send, read) must finish within `timeout_s` seconds, so a
silent server costs the page a few seconds, never a hang. Nothing is written anywhere.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from evalcore.common.secret_urls import public_url

ASK_TIMEOUT_S = 5.0
MAX_METHODS = 50
METHOD_KEYS = ("methods", "available_methods", "search_methods", "modes")


@dataclass(frozen=True)
class OfferedMethods:
    """What the server offered: method names (maybe none) and one line saying how it went."""

    methods: list[str] = field(default_factory=list)
    note: str = ""


def methods_in_info(info: Any) -> list[str]:
    """Method names in a /models/info reply: the keys of a `methods` mapping (the demo server's
    shape), or a list of names, or of objects with a `name`; also under `available_methods`,
    `search_methods` or `modes`. Only short plain names are kept, in the server's order."""
    if not isinstance(info, dict):
        return []
    for key in METHOD_KEYS:
        value = info.get(key)
        if isinstance(value, dict):
            names = list(value)
        elif isinstance(value, list):
            names = [v.get("name") if isinstance(v, dict) else v for v in value]
        else:
            continue
        kept = [n.strip() for n in names if isinstance(n, str) and 0 < len(n.strip()) <= 100
                and "," not in n and n.strip().isprintable()]
        if kept:
            return list(dict.fromkeys(kept))[:MAX_METHODS]
    return []


async def _fetch_info(url: str, timeout_s: float) -> dict[str, Any] | None:
    from evalcore.targets.client import TargetClient
    from evalcore.targets.spec import TargetSpec

    spec = TargetSpec(url=url)
    async with TargetClient(spec, timeout_s=timeout_s, concurrency=1) as client:
        return await asyncio.wait_for(client.optional_json(spec.info_path), timeout_s)


def offered_methods(url: str, timeout_s: float = ASK_TIMEOUT_S) -> OfferedMethods:
    """Ask the server at `url` for /models/info and return the methods it lists, or none with a
    one-line note why (bad URL, unreachable or silent within `timeout_s`, no methods listed)."""
    url = (url or "").strip()
    try:
        info = asyncio.run(asyncio.wait_for(_fetch_info(url, timeout_s), timeout_s + 1.0))
    except ValidationError:
        return OfferedMethods(note="The server URL must start with http:// or https://.")
    except (asyncio.TimeoutError, TimeoutError):
        return OfferedMethods(note=f"{public_url(url)} did not answer /models/info within {timeout_s:g} s.")
    except OSError as exc:
        return OfferedMethods(note=f"{public_url(url)} could not be reached ({type(exc).__name__}).")
    if info is None:
        return OfferedMethods(note=f"{public_url(url)} has no readable /models/info: name the methods yourself.")
    if "_not_kept" in info:
        return OfferedMethods(note=str(info["_not_kept"]))
    methods = methods_in_info(info)
    if not methods:
        return OfferedMethods(note=f"{public_url(url)}'s /models/info lists no methods: name them yourself "
                                   "(for a server that takes no method, type: default).")
    return OfferedMethods(methods=methods, note=f"{public_url(url)} offers {len(methods)} method"
                                                f"{'s' if len(methods) != 1 else ''}.")
