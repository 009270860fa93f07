"""A Phoenix server: its project's spans in, span annotations out, through Phoenix's REST API.

`phoenix://HOST:PORT/PROJECT` names a project on a Phoenix server reached over plain HTTP
(`phoenixs://` for HTTPS), checked whole before anything is sent (phoenix_url.py). An API key,
when the server needs one, comes from PHOENIX_API_KEY (or PHOENIX_CLIENT_HEADERS, read as
arize-phoenix-client reads them); a URL with credentials in it is refused, so no key reaches a
manifest or a log.

The requests are evalcore's own (phoenix_http.py says why): each under a total deadline, each
reply capped in bytes and checked for its shape here, the span pages of an import bounded
together in bytes and spans, and the span listing's cursors watched (bounded in length too), so
a server that drips, repeats a cursor, hands out fresh pages for ever or answers in another
shape ends the command in one line instead of hanging, looping, exhausting memory or crashing.

Scores go back (evalcore/outputs/phoenix_scores.py) as span annotations on each answer's root span, named `evalcore.<metric>`,
with the identifier `evalcore:<run id>`: Phoenix upserts on (name, span, identifier), so
exporting a run twice updates its annotations instead of adding copies, and two runs over the
same traces (two judges, say) stay side by side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalcoreError, InputError
from evalcore.traces.phoenix_http import Limits, Refused, Session, run_session
from evalcore.traces.phoenix_url import PhoenixTarget, is_phoenix_url, parse_url  # noqa: F401 (the CLI's)

if TYPE_CHECKING:
    from evalcore.traces.spans import Span

PAGE_SIZE = 100  # spans per page, as Phoenix's own client asks
MAX_CURSOR_CHARS = 2048  # Phoenix's cursors are a few dozen characters; each one is sent back in a URL


def refused(target: PhoenixTarget, exc: Refused, doing: str) -> EvalcoreError:
    if exc.status == 404 and doing.startswith("reading spans"):
        return EvalcoreError(f"no project {target.project!r} on the Phoenix server at {target.base_url} ({exc})")
    return EvalcoreError(f"Phoenix at {target.base_url} refused ({doing}): {exc}")


def kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def page_items(reply: Any, source: str, page: int) -> tuple[list[dict[str, Any]], str | None]:
    """A page of Phoenix's span listing -> (its span objects, the next cursor or None); an
    InputError naming the page and field when the reply is of another shape."""
    where = f"page {page}"
    if not isinstance(reply, dict):
        raise InputError(source, f"expected an object with 'data' and 'next_cursor', got {kind(reply)}", record=where)
    data = reply.get("data")
    if not isinstance(data, list):
        raise InputError(source, f"expected a list of spans, got {kind(data)}", record=where, field="data")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputError(source, f"expected a span object, got {kind(item)}", record=where, field=f"data.{i}")
    return data, _cursor(reply.get("next_cursor"), source, where)


def _cursor(cursor: Any, source: str, where: str) -> str | None:
    """The next page's cursor, or None at the end; InputError for one that cannot be sent back:
    not text, longer than MAX_CURSOR_CHARS (a 70,000-character cursor made the next URL too long
    for httpx, and shorter long ones were all held by the loop check), or text no URL can
    carry (a lone surrogate, which JSON can spell)."""
    if cursor is not None and not isinstance(cursor, str):
        raise InputError(source, f"expected the next page's cursor as text or null, got {kind(cursor)}: "
                         "stopping", record=where, field="next_cursor")
    if cursor and len(cursor) > MAX_CURSOR_CHARS:
        raise InputError(source, f"a cursor of {len(cursor):,} characters, past the bound of {MAX_CURSOR_CHARS:,}: "
                         "stopping", record=where, field="next_cursor")
    try:
        (cursor or "").encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(source, "a cursor that is not valid text (a lone surrogate): stopping", record=where,
                         field="next_cursor") from None
    return cursor or None


def page_spans(items: list[dict[str, Any]], source: str, page: int, project: str) -> list[Span]:
    from evalcore.traces.spans import from_rest_span

    out = []
    for i, item in enumerate(items, 1):
        try:
            out.append(from_rest_span(item, source, f"page {page}, span {i}", project=project))
        except RecursionError:
            raise InputError(source, "nested too deeply", record=f"page {page}, span {i}") from None
    return out


class _Paging:
    """What a span listing gave so far, to tell progress from a loop: a server that repeats a
    cursor (the last page's or any earlier one's), or hands out new cursors for pages holding
    only spans earlier pages gave, would be read for ever, memory growing."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.cursors: dict[str, int] = {}  # cursor -> the page that gave it
        self.keys: set[tuple[str, str]] = set()  # (trace id, span id) of every span read

    def check(self, page: int, spans: list[Span], cursor: str) -> None:
        """Raise when page `page` (which gave `spans` and a next `cursor`) goes round in a loop."""
        fresh = {(s.trace_id, s.span_id) for s in spans} - self.keys
        stop = "its paging goes round in a loop, so the import stops here and stores nothing"
        if cursor in self.cursors:
            raise EvalcoreError(f"Phoenix at {self.base_url} gave page {page} the same next cursor as page "
                                f"{self.cursors[cursor]} ({cursor[:60]!r}): {stop}")
        if spans and not fresh:
            raise EvalcoreError(f"Phoenix at {self.base_url} gave page {page} only spans earlier pages gave, "
                                f"and yet another cursor: {stop}")
        self.cursors[cursor] = page
        self.keys |= fresh


async def _read_spans(session: Session, target: PhoenixTarget) -> list[Span]:
    """Every page of the project's spans, following `next_cursor` until the server gives none
    (or an empty page); a page that goes round in a loop stops the import (`_Paging`), and so do
    pages past the import's bytes (`Session.call(kept=True)`) or spans (`Limits.max_spans`)."""
    path = target.spans_path
    spans: list[Span] = []
    paging = _Paging(target.base_url)
    cursor: str | None = None
    page = 0
    while True:
        page += 1
        doing = f"reading spans, page {page}"
        try:
            reply = await session.call("GET", path, doing, f"page {page}", kept=True,
                                       params={"limit": PAGE_SIZE, **({"cursor": cursor} if cursor else {})})
        except Refused as exc:
            raise refused(target, exc, doing) from None
        items, cursor = page_items(reply, session.source, page)
        most = session.limits.max_spans
        if len(spans) + len(items) > most:  # counted before the page's spans are built
            raise EvalcoreError(f"{target.label} has more than {most:,} spans (--phoenix-max-spans; every span is "
                                f"held in memory until the traces are assembled): stopped at page {page}, "
                                "nothing stored")
        got = page_spans(items, session.source, page, target.project)
        spans += got
        if cursor is None or not items:
            return spans
        paging.check(page, got, cursor)


def server_spans(target: PhoenixTarget, limits: Limits | None = None) -> list[Span]:
    """Every span of the project, through Phoenix's paged REST listing, within `limits`."""
    source = f"phoenix {target.project}"
    return run_session(target.base_url, source, limits or Limits(), lambda s: _read_spans(s, target))
