"""What parsing builds is bounded, measured (issue 34, item 2, round 4; see test_parse_budget.py).

Each test runs the CLI, the target client or a reader in a child process on inputs of a few MB
that cost 0.6 to 1.5 GB (or an abort) before, and reads the child's peak RSS (VmHWM) around
the command after a warm-up on a small input, so only what the input costs is measured.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .servers import Fault, ScriptedServer
from .test_parse_budget import HEAD, _repeated

HAS_PROC = Path("/proc/self/status").exists()


READER = r"""
import json, sys
from evalcore.datasets.records import read_records

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

list(read_records(sys.argv[2]))  # warm-up: the same reader on a small file
base = peak()
n = sum(1 for _ in read_records(sys.argv[1]))
print(json.dumps({"n": n, "growth": peak() - base, "base": base}))
"""


@pytest.mark.skipif(not HAS_PROC, reason="needs Linux /proc for peak RSS")
def test_a_parquet_bomb_is_read_a_bounded_slice_at_a_time(tmp_path):
    """300 rows of one 1 MB dictionary value (2 KB of file; 1.5 GB and an ArrowMemoryError
    before): every row is read, and the reader's peak grows by a slice (16 MB) and some."""
    bomb, small = tmp_path / "b.parquet", tmp_path / "s.parquet"
    _repeated(bomb, 300, 2 ** 20, store_schema=False)
    _repeated(small, 3, 10)
    assert bomb.stat().st_size < 4096
    out = subprocess.run([sys.executable, "-c", READER, str(bomb), str(small)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip(), out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["n"] == 300 and result["base"] > 20 * 2 ** 20
    assert result["growth"] < 80 * 2 ** 20, f"peak RSS grew {result['growth'] / 2 ** 20:.0f} MB"


CLI = r"""
import json, sys
from evalcore.cli.main import main

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

def run(argv):
    sys.argv = ["evalcore", *argv]
    try:
        main()
    except SystemExit as exc:
        return exc.code
    return 0

warm, real = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for argv in warm:
    run(argv)
print("--", file=sys.stderr, flush=True)
results = []
for argv in real:
    base = peak()
    code = run(argv)
    print("--", file=sys.stderr, flush=True)
    results.append({"code": code, "growth": peak() - base, "base": base})
print(json.dumps(results))
"""


def _answers(path: Path, field: str, item: bytes, n: int, array: bool = False) -> Path:
    record = HEAD + f'"{field}": ['.encode() + item + (b", " + item) * (n - 1) + b"]}"
    path.write_bytes(b"[" + record + b"]" if array else record + b"\n")
    return path


@pytest.mark.skipif(not HAS_PROC, reason="needs Linux /proc for peak RSS")
def test_the_cli_refuses_what_would_build_too_much_in_one_line_and_bounded_memory(tmp_path):
    """Files of 1-4 MB whose records would make 300 000 to 1 000 000 values (1 GB and more of
    memory before, or an abort), a config of 25 000 keys, options of a million, a YAML question
    file of 600 000 nodes: each is one `error:` line naming the file (and record), exit 2,
    while the child's peak RSS grows by a few tens of MB."""
    cases = [
        (["import"], _answers(tmp_path / "retrieved.jsonl", "retrieved", b"{}", 300_000), "record 1"),
        (["import"], _answers(tmp_path / "contexts.json", "contexts", b'""', 300_000, array=True), "record 1"),
        (["import"], _answers(tmp_path / "gold.jsonl", "gold_chunk_ids", b'"c1"', 300_000), "record 1"),
        (["import", "--allow-extra"], _answers(tmp_path / "extra.jsonl", "zzz", b"[]", 1_000_000), "record 1"),
    ]
    cell = json.dumps([f"c{i}" for i in range(300_000)]).replace('"', '""')
    cells = tmp_path / "cells.csv"
    cells.write_text(f'question_id,question,answer,contexts\nq,x,a,"{cell}"\n', encoding="utf-8")
    cases.append((["import"], cells, "field 'contexts'"))
    config = tmp_path / "config.yaml"
    config.write_text("".join(f"k{i}: {{}}\n" for i in range(25_000)), encoding="utf-8")
    cases.append((["run", "-c"], config, "more than 20,000 YAML nodes"))
    options = tmp_path / "options.yaml"
    options.write_text("".join(f"k{i}: {{}}\n" for i in range(1_000_000)), encoding="utf-8")
    cases.append((["score", "no-such-run", "--options-file"], options, "may be at most 1 MB"))
    questions = tmp_path / "questions.yaml"
    questions.write_text("[" + ", ".join(["[]"] * 600_000) + "]", encoding="utf-8")
    answers = _answers(tmp_path / "small.jsonl", "contexts", b'"c"', 1)
    cases.append((["import", str(answers), "--dataset"], questions, "more than 500,000 YAML nodes"))
    store = ["--store", str(tmp_path / "runs")]
    warm = [store + ["import", str(answers)], store + ["import", str(_answers(tmp_path / "w.json", "retrieved",
                                                                                b"{}", 3, array=True))]]
    real = [store + command + [str(path)] for command, path, _ in cases]
    out = subprocess.run([sys.executable, "-c", CLI, json.dumps(warm), json.dumps(real)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "EVALCORE_STORE": str(tmp_path / "runs")})
    assert out.stdout.strip(), out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    said = out.stderr.split("--\n")[1:]
    for (command, path, expected), result, err in zip(cases, results, said):
        lines = err.strip().splitlines()
        assert result["code"] == 2 and len(lines) == 1, (path.name, err[:500])
        assert lines[0].startswith("error: ") and str(path) in lines[0] and expected in lines[0], lines[0][:500]
        assert result["base"] > 20 * 2 ** 20
        assert result["growth"] < 64 * 2 ** 20, f"{path.name}: peak RSS grew {result['growth'] / 2 ** 20:.0f} MB"


TARGET = r"""
import asyncio, json, sys
from evalcore.targets.client import TargetClient
from evalcore.targets.spec import TargetSpec

def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

async def ask(url, info=False):
    async with TargetClient(TargetSpec(url=url), timeout_s=60, concurrency=1, max_response_mb=32) as client:
        if info:
            return await client.optional_json("/models/info")
        return await client.query("q?", "q1", "m", "m", 3)

url, n = sys.argv[1], int(sys.argv[2])
asyncio.run(ask(url))  # a small reply first: every lazy module is loaded before measuring
results = []
for i in range(n + 1):
    base = peak()
    response = asyncio.run(ask(url, info=i == n))
    said = response if i == n else {"kind": response.error_kind, "error": response.error}
    results.append({"growth": peak() - base, "base": base, "said": said})
print(json.dumps(results))
"""


@pytest.mark.skipif(not HAS_PROC, reason="needs Linux /proc for peak RSS")
def test_a_reply_of_many_small_values_costs_its_cap_not_its_parse():
    """Replies under the 32 MB cap that would make 2 000 000 values: gzip of 6 KB, and 3 MB
    sent plain (614 MB and more before). Each answer is a `malformed` error saying so, and
    /models/info with the same reply is left out; the child grows by about the reply."""
    payload = b'{"answer": "x", "extra": [' + b"{}," * 1_999_999 + b"{}]}"
    packed = gzip.compress(payload, 9)
    assert len(packed) < 10_000
    bombs = [Fault("ok", 200, packed, {"Content-Encoding": "gzip"}),
             Fault("ok", 200, payload[:10] + b'"retrieved": [' + b"{}," * 999_999 + b"{}]}")]
    replies = iter([Fault("ok", 200, b'{"answer": "small"}'), *bombs])
    server = ScriptedServer(lambda r: next(replies), on_get=lambda r: bombs[0]).start()
    try:
        out = subprocess.run([sys.executable, "-c", TARGET, server.url, str(len(bombs))], capture_output=True,
                             text=True, timeout=120)
    finally:
        server.stop()
    assert out.stdout.strip(), out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    for result in results[:-1]:
        assert result["said"]["kind"] == "malformed", result
        assert "the reply holds more than 50,000 JSON values (the bound on one reply" in result["said"]["error"]
    assert results[-1]["said"] is None
    for result in results:
        assert result["base"] > 20 * 2 ** 20
        assert result["growth"] < 48 * 2 ** 20, f"peak RSS grew {result['growth'] / 2 ** 20:.0f} MB"


