"""A file whose name is not UTF-8 imports, and its name is stored in a safe spelling (issue 34 round
4, item 15).

Linux file names are bytes; Python hands a name that is not UTF-8 to evalcore with each bad byte as
a surrogate escape (`a\\udcff.jsonl`), which no UTF-8 file can hold, so writing run.json ended in
"unexpected PydanticSerializationError ... surrogates not allowed", exit 1. Now every place a path
goes into a manifest (import and its --dataset, run --dataset, trace files) stores it with each
such byte spelled `\\xff` (evalcore.schemas.storable.storable_path), and the manifest's serializer
spells any surrogate it still meets the same way. The tests pass real bytes on the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.optional import requires

from evalcore.schemas.storable import storable_path
from evalcore.store import RunStore

NAMES = [b"a\xff.jsonl", b"\xe9t\xe9.jsonl", b"x\xc3(.jsonl", b"\xed\xa0\x80.jsonl"]  # Latin-1, bad UTF-8, CESU


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalcore", *args], capture_output=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=300)


def _bytes_path(folder: Path, name: bytes) -> bytes:
    return os.fsencode(folder) + b"/" + name


def _answers(path: bytes) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"question_id": "q1", "method": "m", "question": "Q?", "answer": "a"}) + "\n")


def _in_process(console, *args: bytes) -> subprocess.CompletedProcess:
    """The same command through the console entry point in this process, its arguments decoded
    as Python decodes a child's command line (os.fsdecode: each undecodable byte a surrogate)."""
    res = console(*map(os.fsdecode, args))
    return subprocess.CompletedProcess(args, res.returncode, res.stdout.encode("utf-8", "surrogateescape"),
                                       res.stderr.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("name", NAMES)
def test_import_of_a_file_named_in_bytes_stores_a_safe_spelling(tmp_path, console, name):
    """The first name's imports get real bytes on a child's command line; the others go through
    the same entry point here with the arguments Python makes of those bytes (a child per import
    cost 2-5 s)."""
    path = _bytes_path(tmp_path, name)
    _answers(path)
    root = tmp_path / "runs"
    for extra in ([], [b"-n", b"named"]):
        args = (b"--store", os.fsencode(root), b"import", path, *extra)
        res = _cli(*args) if name == NAMES[0] else _in_process(console, *args)
        assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
        run_id = res.stdout.decode().strip()
        manifest = json.loads((root / run_id / "run.json").read_text(encoding="utf-8"))
        spelled = storable_path(os.fsdecode(name))
        assert manifest["source"]["file"] == spelled and "\\x" in spelled
        if not extra:
            assert manifest["name"] == storable_path(os.fsdecode(name[:-len(b".jsonl")]))
    assert len(RunStore(root).run_ids()) == 2


def test_import_with_a_dataset_named_in_bytes(tmp_path):
    answers, dataset = _bytes_path(tmp_path, b"ans\xff.jsonl"), _bytes_path(tmp_path, b"q\xfe.jsonl")
    _answers(answers)
    with open(dataset, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "q1", "question": "Q?", "ground_truth": "a"}) + "\n")
    root = tmp_path / "runs"
    res = _cli(b"--store", os.fsencode(root), b"import", answers, b"--dataset", dataset)
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    info = RunStore(root).manifest(res.stdout.decode().strip()).dataset
    assert info["path"].endswith("/q\\xfe.jsonl") and info["name"] == "q\\xfe"


def test_run_with_a_dataset_named_in_bytes(tmp_path):
    from evalcore.demo.server import start_in_thread

    dataset = _bytes_path(tmp_path, b"questions\xff.jsonl")
    with open(dataset, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "q1", "question": "What is evalcore?", "ground_truth": "x"}) + "\n")
    server = start_in_thread(0)
    try:
        root = tmp_path / "runs"
        res = _cli(b"--store", os.fsencode(root), b"run", b"--target", server.url.encode(), b"--dataset", dataset,
                   b"--methods", b"basic_search", b"--no-progress")
    finally:
        server.shutdown()
        server.server_close()
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    store = RunStore(root)
    (run_id,) = store.run_ids()
    manifest = store.manifest(run_id)
    assert manifest.dataset["path"].endswith("/questions\\xff.jsonl"), manifest.dataset
    assert "\\udcff" not in (root / run_id / "run.json").read_text(encoding="utf-8")


def test_trace_file_named_in_bytes(tmp_path):
    requires("pandas")
    from tests.traces.test_trace_files import _write, dataframe_rows

    spans = tmp_path / "spans.jsonl"
    _write(dataframe_rows(), spans)
    named = _bytes_path(tmp_path, b"sp\xffans.jsonl")
    os.rename(spans, named)
    root = tmp_path / "runs"
    res = _cli(b"--store", os.fsencode(root), b"import", named, b"--method-from", b"metadata.method")
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    manifest = RunStore(root).manifest(res.stdout.decode().strip())
    assert manifest.source["file"] == "sp\\xffans.jsonl" and manifest.name == "sp\\xffans"


def test_the_manifest_spells_any_surrogate_it_meets():
    """The serializer's guard: a path that reached the manifest another way (a config, a note)."""
    from evalcore.schemas import RunManifest

    manifest = RunManifest(format_version=2, run_id="r", name="r", evalcore_version="0",
                           config={"dataset": "/d/q\udcff.yaml", "list": ["\ud800", "nul\x00"], "key\udcfe": 1},
                           notes=["read /d/a\udcff.jsonl"])
    text = manifest.model_dump_json()
    data = json.loads(text)
    assert text.encode("utf-8") and len(data["config"]) == 3   # a key too is written (pydantic spells it)
    assert data["config"]["dataset"] == "/d/q\\xff.yaml" and data["config"]["list"] == ["\ufffd", "nul\ufffd"]
    assert data["notes"] == ["read /d/a\\xff.jsonl"]
