"""An HTTP reply's body read in bounded memory, whatever its Content-Encoding says.

Why not httpx's own decoding: httpx 0.28 hands each raw chunk to zlib's `decompress(data)`
without `max_length`, and with stacked codings its MultiDecoder passes the whole output of
one layer to the next. So 2.7 KB sent as `Content-Encoding: gzip, gzip` became 0.8 GB in
one call, before any size cap could look at it. Here the raw bytes (`iter_raw`) go through a
chain of our own decoders. Each hands on at most PIECE bytes at a time (zlib's `max_length`,
brotli's `output_buffer_limit`, zstd's `max_length` or a bounded writer), and what every
layer produces, the decoded body included, is counted against the cap as it comes. Memory is
then the body kept (at most the cap) plus a piece and a window per layer.

Which codings: gzip (also named x-gzip) and deflate always; br with the `brotli` (or `brotlicffi`) package at
1.2 or later (older ones cannot bound their output); zstd with Python 3.14's
`compression.zstd`, `backports.zstd` or `zstandard`, with the 8 MB window RFC 9659 sets for
HTTP (a frame asking for more is refused, not given the memory). `identity` and codings
nobody knows pass through unchanged, as httpx does; br or zstd without a library able to
decode them in bounded pieces is refused by name. At most MAX_CODINGS layers are decoded:
each costs time up to the cap, so a header stacking hundreds is refused, not worked through.
`accept_encoding()` is what a client should offer so a server sends only what we can read.
"""

from __future__ import annotations

import sys
import zlib
from functools import lru_cache
from typing import Any, AsyncIterable, Awaitable, Callable, Iterable

PIECE = 64 * 1024  # the most one decoder call hands on
MAX_CODINGS = 5
ZSTD_WINDOW_LOG = 23  # 8 MiB, RFC 9659

Sink = Callable[[bytes], None]


class BodyRefused(Exception):
    """The body was not read whole on purpose; the message says why, for the user."""


class BodyTooLarge(BodyRefused):
    """The body, sent or decoded, passed the cap."""


class BodyUndecodable(BodyRefused):
    """The Content-Encoding could not be undone (corrupt data, no bounded decoder, too many layers)."""


@lru_cache(maxsize=1)
def _brotli_module() -> Any:
    for name in ("brotli", "brotlicffi"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        if hasattr(module.Decompressor(), "can_accept_more_data"):  # 1.2+: output can be bounded
            return module
    return None


@lru_cache(maxsize=1)
def _zstd_module() -> tuple[str, Any] | None:
    candidates = [("stdlib", "compression.zstd")] if sys.version_info >= (3, 14) else []
    candidates += [("stdlib", "backports.zstd"), ("zstandard", "zstandard")]
    for kind, name in candidates:
        try:
            module = __import__(name, fromlist=["_"])
        except ImportError:
            continue
        return kind, module
    return None


class _Zlib:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it: told apart by the header)."""

    def __init__(self, coding: str, sink: Sink):
        self.coding, self.sink = coding, sink
        self.obj: Any = zlib.decompressobj(zlib.MAX_WBITS | 16) if coding == "gzip" else None
        self.head = b""  # deflate: bytes held until its first two show which kind it is
        self.seen = False

    def _choose(self, data: bytes) -> bytes:
        self.head += data
        if len(self.head) < 2:
            return b""
        first, second = self.head[0], self.head[1]
        wrapped = (first & 0x0F) == 8 and (first >> 4) <= 7 and ((first << 8) | second) % 31 == 0
        self.obj = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        data, self.head = self.head, b""
        return data

    def write(self, data: bytes) -> None:
        self.seen = self.seen or bool(data)
        if self.obj is None:
            data = self._choose(data)
        while data or self.obj is not None and not self.obj.eof:
            if self.obj.eof:  # data after the end: ignored (httpx does the same), never kept
                return
            try:
                out = self.obj.decompress(data, PIECE)
            except zlib.error as exc:
                raise BodyUndecodable(f"invalid {self.coding} data ({exc})") from None
            data = self.obj.unconsumed_tail
            if out:
                self.sink(out)
            if not data and len(out) < PIECE:  # input used up and nothing left inside zlib
                return

    def finish(self) -> None:
        if not self.seen:
            return
        if self.obj is None or not self.obj.eof:
            raise BodyUndecodable(f"the {self.coding} data ends before its end marker (a cut reply?)")


class _Brotli:
    # brotli's output_buffer_limit is where its buffer stops growing, not a ceiling: 1.2 hands
    # on up to three times the limit (at least 32 KB), so a third of PIECE keeps pieces within it
    LIMIT = PIECE // 3

    def __init__(self, module: Any, sink: Sink):
        self.obj = module.Decompressor()
        self.step = getattr(self.obj, "process", None) or self.obj.decompress
        self.error = module.error
        self.sink = sink
        self.seen = False

    def write(self, data: bytes) -> None:
        """Feed `data`, then drain with empty input until nothing more comes: brotli says it
        can take input again before it has handed on all the output it holds."""
        if not data:
            return
        self.seen = True
        try:
            out = self.step(data, output_buffer_limit=self.LIMIT)
            while out:
                self.sink(out)
                out = self.step(b"", output_buffer_limit=self.LIMIT)
        except self.error as exc:
            raise BodyUndecodable(f"invalid br data ({exc})") from None

    def finish(self) -> None:
        if self.seen and not self.obj.is_finished():
            raise BodyUndecodable("the br data ends before its end marker (a cut reply?)")


class _ZstdStdlib:
    """compression.zstd / backports.zstd: `decompress(data, max_length)`, one frame per object."""

    def __init__(self, module: Any, sink: Sink):
        self.module, self.sink = module, sink
        self.options = {module.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG}
        self.obj = module.ZstdDecompressor(options=self.options)
        self.fed = False  # the current frame has started

    def write(self, data: bytes) -> None:
        try:
            while True:
                if self.obj.eof:  # a frame ended: what follows it starts the next one
                    data, self.fed = self.obj.unused_data + data, False
                    self.obj = self.module.ZstdDecompressor(options=self.options)
                if not data and (not self.fed or self.obj.needs_input):
                    return
                self.fed = True
                out = self.obj.decompress(data, PIECE)
                data = b""
                if out:
                    self.sink(out)
        except self.module.ZstdError as exc:
            raise BodyUndecodable(f"invalid zstd data ({exc})") from None

    def finish(self) -> None:
        if self.fed and not self.obj.eof:
            raise BodyUndecodable("the zstd data ends before its frame does (a cut reply?)")


class _ZstdWriter:
    """`zstandard` (no max_length): its stream writer hands output on in PIECE-sized writes.
    A cut frame is not detected here; the reply's parser sees the missing end."""

    class _Forward:
        def __init__(self, sink: Sink):
            self.sink = sink

        def write(self, data: bytes) -> int:
            self.sink(bytes(data))
            return len(data)

    def __init__(self, module: Any, sink: Sink):
        decompressor = module.ZstdDecompressor(max_window_size=1 << ZSTD_WINDOW_LOG)
        self.writer = decompressor.stream_writer(self._Forward(sink), write_size=PIECE, write_return_read=True)
        self.error = module.ZstdError

    def write(self, data: bytes) -> None:
        try:
            if data:
                self.writer.write(data)
        except self.error as exc:
            raise BodyUndecodable(f"invalid zstd data ({exc})") from None

    def finish(self) -> None:
        return


def _decoder(coding: str, sink: Sink) -> Any:
    if coding in ("gzip", "deflate"):
        return _Zlib(coding, sink)
    if coding == "br":
        module = _brotli_module()
        if module is None:
            raise BodyUndecodable("the reply is br-encoded, and no brotli package at 1.2 or later (the "
                                  "first to bound its output) is installed; pip install 'brotli>=1.2'")
        return _Brotli(module, sink)
    found = _zstd_module()
    if found is None:
        raise BodyUndecodable("the reply is zstd-encoded, and no zstd decoder is installed; "
                              "pip install zstandard")
    kind, module = found
    return _ZstdStdlib(module, sink) if kind == "stdlib" else _ZstdWriter(module, sink)


DECODABLE = ("gzip", "deflate", "br", "zstd")
ALIASES = {"x-gzip": "gzip"}  # RFC 9110: a recipient should take x-gzip for gzip


def accept_encoding() -> str:
    """The Accept-Encoding value naming what this installation decodes in bounded memory."""
    offered = ["gzip", "deflate"] + (["br"] if _brotli_module() else []) + (["zstd"] if _zstd_module() else [])
    return ", ".join(offered)


class BodyReader:
    """Collects one body: feed it the raw bytes, then `finish()` returns the decoded body.

    `codings` is the Content-Encoding list in the order the server applied them; `label`
    names the cap in messages ("32 MB"). Raises BodyTooLarge as soon as the raw bytes, or
    the output of any decoding layer, pass `max_bytes`; BodyUndecodable for a coding that
    cannot be undone."""

    def __init__(self, codings: Iterable[str], max_bytes: int, label: str):
        names = [ALIASES.get(c.strip().lower(), c.strip().lower()) for c in codings]
        self.applied = [c for c in names if c in DECODABLE]
        if len(self.applied) > MAX_CODINGS:
            raise BodyUndecodable(f"the reply stacks {len(self.applied)} content codings "
                                  f"({', '.join(self.applied)}); at most {MAX_CODINGS} are decoded")
        self.max_bytes, self.label = max_bytes, label
        self.body = bytearray()
        self.layers: list[Any] = []
        sink: Sink = self._keep
        for coding in self.applied:  # the first applied is undone last: build from the body outwards
            layer = _decoder(coding, self._counted(sink))
            self.layers.insert(0, layer)
            sink = layer.write
        self.entry = self._counted(sink)

    def _too_large(self) -> BodyTooLarge:
        how = f" (decoding {', '.join(self.applied)})" if self.applied else ""
        return BodyTooLarge(f"response larger than {self.label}{how}")

    def _counted(self, sink: Sink) -> Sink:
        total = 0

        def counted(piece: bytes) -> None:
            nonlocal total
            total += len(piece)
            if total > self.max_bytes:
                raise self._too_large()
            sink(piece)

        return counted

    def _keep(self, piece: bytes) -> None:
        self.body += piece

    def feed(self, raw: bytes) -> None:
        if raw:
            self.entry(raw)

    def finish(self) -> bytes:
        for layer in self.layers:  # outermost first: each one's end may still push pieces inwards
            layer.finish()
        return bytes(self.body)


def codings_of(headers: Any) -> list[str]:
    """The Content-Encoding list of httpx headers, split on commas, in the order applied."""
    return [c for c in headers.get_list("content-encoding", split_commas=True) if c.strip()]


def declared_too_large(headers: Any, reader: BodyReader) -> None:
    """Refuse before reading when the server announces more raw bytes than the cap."""
    declared = (headers.get("content-length") or "").strip()
    if declared.isdigit() and int(declared) > reader.max_bytes:
        raise BodyTooLarge(f"response larger than {reader.label} (it announced {int(declared):,} bytes)")


async def read_body_async(response: Any, max_bytes: int, label: str) -> bytes:
    """The decoded body of an httpx response opened with `stream=True`, bounded as above."""
    return await read_raw_async(response.headers, response.aiter_raw(), max_bytes, label)


async def read_raw_async(headers: Any, raw: AsyncIterable[bytes], max_bytes: int, label: str,
                         pace: Callable[[int], Awaitable[None]] | None = None) -> bytes:
    """The decoded body from any client's raw (still encoded) chunks and its httpx-style
    headers, bounded as above: the targets' client reads aiohttp's stream through it.
    `pace(bytes kept so far)` is awaited after each chunk: a caller may hold the reading there
    (the targets' client lets one large reply at a time grow: evalcore/targets/fetch.py)."""
    reader = BodyReader(codings_of(headers), max_bytes, label)
    declared_too_large(headers, reader)
    async for chunk in raw:
        reader.feed(chunk)
        if pace is not None:
            await pace(len(reader.body))
    return reader.finish()


def read_body(response: Any, max_bytes: int, label: str) -> bytes:
    """The same for a synchronous httpx response opened with `stream=True`."""
    reader = BodyReader(codings_of(response.headers), max_bytes, label)
    declared_too_large(response.headers, reader)
    for raw in response.iter_raw():
        reader.feed(raw)
    return reader.finish()
