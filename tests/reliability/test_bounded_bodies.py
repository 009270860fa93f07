"""No reply body exhausts memory, whatever its Content-Encoding (issue 34, item 2a).

A target's reply sent as `Content-Encoding: gzip, gzip` (2.7 KB inflating to 0.8 GB) took
`evalcore run --max-response-mb 32` past 1.3 GB: httpx inflated each layer whole before the
cap was looked at. Replies now go through evalcore/common/http_body.py, whose decoders hand on at
most PIECE bytes per call and count every layer against the cap. The memory test runs the
target client in a child process and reads its peak RSS (VmHWM); the bombs are a few KB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import httpx
import pytest

from evalcore.common import http_body
from tests.optional import requires
from evalcore.embeddings.openai_compat import EmbeddingServiceError, OpenAICompatibleBackend
from evalcore.common.http_body import PIECE, BodyReader, BodyTooLarge, BodyUndecodable, accept_encoding

from .servers import Fault, ScriptedServer, ok_json, rag_answer

BOMB_MB = 128


def _deflate(data: bytes, wbits: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return c.compress(data) + c.flush()


def _zeros(coding: str, megabytes: int) -> bytes:
    """`megabytes` of zeros in one coding, built from one compressed MB (never held whole):
    a deflate block after a full flush stands alone, so copies of it make a longer stream,
    and zstd frames may follow one another."""
    if coding == "br":
        brotli = requires("brotli")
        c = brotli.Compressor(quality=5)
        parts = [c.process(bytes(2 ** 20)) for _ in range(megabytes)]
        return b"".join(parts) + c.finish()
    if coding == "zstd":
        return requires("zstandard").ZstdCompressor().compress(bytes(2 ** 20)) * megabytes
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(2 ** 20)) + c.flush(zlib.Z_FULL_FLUSH)
    raw = block * megabytes + b"\x03\x00"  # + an empty final block
    crc, adler = 0, 1
    for _ in range(megabytes):
        crc, adler = zlib.crc32(bytes(2 ** 20), crc), zlib.adler32(bytes(2 ** 20), adler)
    if coding == "gzip":
        return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + raw + crc.to_bytes(4, "little")
                + (megabytes * 2 ** 20 % 2 ** 32).to_bytes(4, "little"))
    return b"\x78\xda" + raw + adler.to_bytes(4, "big")


ENCODE = {"gzip": lambda d: _deflate(d, 31), "x-gzip": lambda d: _deflate(d, 31), "deflate": lambda d: _deflate(d, 15),
          "raw-deflate": lambda d: _deflate(d, -15), "identity": lambda d: d, "x-unknown": lambda d: d}


def _encode(data: bytes, codings: list[str]) -> bytes:
    for coding in codings:  # in the order applied
        if coding == "br":
            data = requires("brotli").compress(data)
        elif coding == "zstd":
            data = requires("zstandard").ZstdCompressor().compress(data)
        else:
            data = ENCODE[coding.lower()](data)
    return data


def _header(codings: list[str]) -> list[str]:
    return ["deflate" if c == "raw-deflate" else c for c in codings]


def _bomb(codings: list[str]) -> bytes:
    """BOMB_MB of zeros under `codings` (the first applied first)."""
    return _encode(_zeros(codings[0], BOMB_MB), codings[1:])


def _read(codings: list[str], body: bytes, cap: int = 2 ** 20, piece: int = 4096) -> bytes:
    reader = BodyReader(_header(codings), cap, "1 MB")
    for i in range(0, len(body), piece):
        reader.feed(body[i:i + piece])
    return reader.finish()


STACKS = [["gzip"], ["deflate"], ["raw-deflate"], ["gzip", "gzip"], ["deflate", "gzip"], ["gzip", "deflate", "gzip"],
          ["identity", "gzip", "x-unknown", "gzip"], ["br"], ["zstd"], ["gzip", "br"], ["zstd", "deflate"],
          ["br", "zstd", "gzip"], ["x-gzip", "GZIP"], []]
PAYLOAD = json.dumps({"answer": "é ✓ " * 3000, "retrieved": [{"text": str(i)} for i in range(8000)]}).encode()


@pytest.mark.parametrize("piece", [1, 7, 65536])
@pytest.mark.parametrize("codings", STACKS, ids=lambda c: "+".join(c) or "none")
def test_every_stack_of_codings_decodes_whole(codings, piece):
    body = _encode(PAYLOAD, codings)
    assert _read(codings, body, cap=len(PAYLOAD), piece=piece) == PAYLOAD


@pytest.mark.parametrize("codings", [["gzip"], ["gzip", "gzip"], ["deflate", "gzip", "deflate"], ["br", "gzip"],
                                     ["zstd", "gzip"], ["gzip", "zstd"], ["gzip", "br"]], ids="+".join)
def test_a_bomb_is_cut_at_the_cap_in_pieces_of_at_most_piece_bytes(codings, monkeypatch):
    """No decoding call hands on more than PIECE bytes, at any layer, and the body stops at
    the cap (httpx handed on a whole layer: 64 MB from one call)."""
    sizes: list[int] = []
    real = BodyReader._counted

    def spying(self, sink):
        counted = real(self, sink)

        def spy(piece):
            sizes.append(len(piece))
            counted(piece)
        return spy

    monkeypatch.setattr(BodyReader, "_counted", spying)
    bomb = _encode(_zeros(codings[0], 64), codings[1:])
    with pytest.raises(BodyTooLarge, match=f"response larger than 1 MB \\(decoding {', '.join(codings)}\\)"):
        _read(codings, bomb, piece=65536)
    assert max(sizes) <= max(PIECE, 65536), max(sizes)


@pytest.mark.parametrize("backend", ["zstandard", "backports.zstd"])
def test_either_zstd_library_decodes_every_frame(monkeypatch, backend):
    module = requires(backend)
    monkeypatch.setattr(http_body, "_zstd_module", lambda: ("zstandard" if backend == "zstandard" else "stdlib", module))
    frames = _encode(PAYLOAD[:1000], ["zstd"]) + _encode(PAYLOAD[1000:], ["zstd"])
    assert _read(["zstd"], frames, cap=len(PAYLOAD), piece=5) == PAYLOAD
    with pytest.raises(BodyTooLarge):
        _read(["zstd"], _zeros("zstd", 8), piece=65536)


def test_more_than_five_codings_are_refused_by_name():
    with pytest.raises(BodyUndecodable, match="stacks 6 content codings"):
        BodyReader(["gzip"] * 6, 2 ** 20, "1 MB")
    assert _read(["identity"] * 20 + ["gzip"], _deflate(b"{}", 31)) == b"{}"  # identity is no layer


@pytest.mark.parametrize("codings, body, message", [
    (["gzip"], b"plainly not gzip", "invalid gzip data"),
    (["gzip"], _deflate(PAYLOAD, 31)[:40], "ends before its end marker"),
    (["deflate"], _deflate(PAYLOAD, 15)[:-10], "ends before its end marker"),
    (["gzip", "gzip"], _deflate(b"not gzip inside", 31), "invalid gzip data"),
])
def test_data_that_cannot_be_decoded_is_refused(codings, body, message):
    with pytest.raises(BodyUndecodable, match=message):
        _read(codings, body)


@pytest.mark.parametrize("coding, finder", [("br", "_brotli_module"), ("zstd", "_zstd_module")])
def test_a_coding_without_a_bounded_decoder_is_refused_by_name(monkeypatch, coding, finder):
    monkeypatch.setattr(http_body, finder, lambda: None)
    with pytest.raises(BodyUndecodable, match=f"{coding}-encoded"):
        BodyReader([coding], 2 ** 20, "1 MB")
    assert coding not in accept_encoding()


def test_a_zstd_frame_asking_for_a_window_over_8_mb_is_refused():
    zstandard = requires("zstandard")
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=27)
    c = zstandard.ZstdCompressor(compression_params=params).compressobj()  # streamed: no content size
    frame = c.compress(os.urandom(1024)) + c.flush()
    with pytest.raises(BodyUndecodable, match="invalid zstd data"):
        _read(["zstd"], frame)


def test_the_target_client_offers_only_what_it_decodes(tmp_path):
    from evalcore.targets.client import TargetClient
    from evalcore.targets.spec import TargetSpec
    import asyncio

    server = ScriptedServer(lambda r: rag_answer(r["body"].get("question", ""))).start()
    try:
        async def ask():
            async with TargetClient(TargetSpec(url=server.url), timeout_s=10, concurrency=1) as client:
                return await client.query("q?", "q1", "m", "m", 3)
        response = asyncio.run(ask())
    finally:
        server.stop()
    assert response.error is None
    assert server.requests[0]["headers"]["accept-encoding"] == accept_encoding()


def test_an_embedding_reply_bomb_is_cut_at_its_cap():
    bomb = _zeros("gzip", 8)

    class Sent(httpx.SyncByteStream):  # as from a socket: not read before the client reads it
        def __iter__(self):
            yield from (bomb[i:i + 4096] for i in range(0, len(bomb), 4096))

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-encoding": "gzip, identity"}, stream=Sent())

    backend = OpenAICompatibleBackend("m", "http://127.0.0.1:9/v1", transport=httpx.MockTransport(reply))
    backend.max_reply_bytes = 2 ** 20
    with pytest.raises(EmbeddingServiceError, match="response larger than 1 MB \\(decoding gzip\\)"):
        backend.embed(["a"])
    assert OpenAICompatibleBackend("m", "http://127.0.0.1:9/v1").max_reply_bytes == 64 * 2 ** 20


# ---- the target client in a child process: peak memory while refusing a bomb ------------------

CHILD = r"""
import asyncio, json, sys
from evalcore.targets.client import TargetClient
from evalcore.targets.spec import TargetSpec

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

async def ask(url):
    async with TargetClient(TargetSpec(url=url), timeout_s=60, concurrency=1, max_response_mb=1) as client:
        return await client.query("q?", "q1", "m", "m", 3)

url, n = sys.argv[1], int(sys.argv[2])
asyncio.run(ask(url))  # a small reply first: every lazy module is loaded before measuring
results = []
for _ in range(n):
    base = peak()
    response = asyncio.run(ask(url))
    results.append({"growth": peak() - base, "base": base, "kind": response.error_kind, "error": response.error})
print(json.dumps(results))
"""

BOMBS = [["gzip"], ["gzip", "gzip"], ["deflate", "gzip"], ["gzip", "deflate", "gzip"], ["br", "gzip"], ["zstd"]]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for peak RSS")
def test_a_compressed_bomb_costs_the_cap_not_its_inflated_size():
    """A child process asks a target whose replies are 128 MB of zeros under stacked codings
    (a few KB sent): each is a `malformed` answer saying the cap was passed, and the child's
    peak RSS grows by about the 1 MB cap, never by the inflated size."""
    stacks = []
    for codings in BOMBS:
        try:
            stacks.append((codings, _bomb(codings)))
        except pytest.skip.Exception:
            continue  # br / zstd: only where their packages are installed
    replies = iter([Fault("ok", 200, b'{"answer": "small"}')] + [
        Fault("ok", 200, bomb, {"Content-Encoding": ", ".join(codings)}) for codings, bomb in stacks])
    server = ScriptedServer(lambda r: next(replies)).start()
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, server.url, str(len(stacks))], capture_output=True,
                             text=True, timeout=300)
    finally:
        server.stop()
    assert out.stdout.strip(), out.stderr
    for (codings, bomb), result in zip(stacks, json.loads(out.stdout.strip().splitlines()[-1])):
        assert len(bomb) < 300_000
        assert result["kind"] == "malformed" and "response larger than 1 MB" in result["error"], result
        assert result["base"] > 20 * 2 ** 20  # a real measurement
        assert result["growth"] < 16 * 2 ** 20, f"{codings}: peak RSS grew {result['growth'] / 2 ** 20:.0f} MB"
