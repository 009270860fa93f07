"""No user's file exhausts memory (issue 34, item 2b).

A 2 GB file of NUL bytes (what a crash can leave) given to `labels import` or `import` passed
1 GB of memory in seconds: NUL is valid UTF-8 and the file has no newline, so it was read as
one line. Every reader of a user's text file now refuses binary data at once, naming the file
and the byte offset, and holds at most one line or record of the bound (EVALCORE_MAX_RECORD_MB,
64 MB by default). The memory tests run the CLI in a child process and read its peak RSS
(VmHWM); the files are a few tens of MB (sparse where they are all NUL bytes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.datasets import json_stream
from evalcore.datasets.records import LIST_KEYS, read_records
from evalcore.datasets.registry import load_questions
from evalcore.datasets.trec import read_qrels_table, read_run_table, read_topics
from evalcore.errors import EvalcoreError, InputError
from evalcore.common.safe_yaml import read_yaml
from evalcore.common.text_input import LIMIT_ENV, iter_lines, record_limit

HEAD = b'{"question_id": "q1", "answer": "a"}\n'

# (file name, valid text before the binary data, reader)
READERS = [
    ("answers.jsonl", HEAD, lambda p: list(read_records(p))),
    ("labels.csv", b"run,method,question_id\nr,m,q\n", lambda p: list(read_records(p))),
    ("answers.json", b'[{"question_id": "q1"},\n', lambda p: list(read_records(p))),
    ("wrapped.json", b'{"version": 2, "data": [{"a": 1},\n', lambda p: list(read_records(p))),
    ("questions.yaml", b"- id: q1\n  question: Q?\n", read_yaml),
    ("run.txt", b"q1 Q0 d1 1 1.0 tag\n", read_run_table),
    ("qrels.txt", b"q1 0 d1 1\n", read_qrels_table),
    ("topics.txt", b"q1\twhat is it?\n", read_topics),
    ("questions.jsonl", b'{"id": "q1", "question": "Q?"}\n', lambda p: load_questions(p)),
]


@pytest.mark.parametrize("name, head, read", READERS, ids=[r[0] for r in READERS])
def test_a_nul_byte_is_binary_data_named_by_its_offset(tmp_path, name, head, read):
    path = tmp_path / name
    path.write_bytes(head + b"\0" * 5000)
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.file == str(path)
    assert f"NUL byte at byte offset {len(head):,}" in str(info.value), str(info.value)


@pytest.mark.parametrize("name, head, read", READERS, ids=[r[0] for r in READERS])
def test_bytes_that_are_not_utf8_are_named_by_their_offset(tmp_path, name, head, read):
    path = tmp_path / name
    path.write_bytes(head + b"abc \xff\xfe more\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.file == str(path)
    assert f"not valid UTF-8" in str(info.value) and f"at byte offset {len(head) + 4:,}" in str(info.value), \
        str(info.value)


# (file name, text of one record of ~3 MB, reader): each over a 1 MB bound
LONG = "x" * (3 * 2 ** 20)
LONG_RECORDS = [
    ("answers.jsonl", '{"a": 1}\n{"answer": "' + LONG + '"}\n', lambda p: list(read_records(p)), 2),
    ("no_newline.jsonl", LONG, lambda p: list(read_records(p)), 1),
    ("answers.csv", "question_id,answer\nq1,ok\nq2,\"" + "line\n" * 700_000 + "\"\n", lambda p: list(read_records(p)),
     None),
    ("answers.json", '[{"a": 1}, {"answer": "' + LONG + '"}]', lambda p: list(read_records(p)), 2),
    ("wrapped.json", '{"note": "' + LONG + '", "records": [{"a": 1}]}', lambda p: list(read_records(p)), None),
    ("digits.json", "[" + "1" * (3 * 2 ** 20) + "]", lambda p: list(read_records(p)), 1),
    ("run.txt", "q1 Q0 d1 1 1.0 tag\nq1 Q0 " + LONG + " 2 0.5 tag\n", read_run_table, None),
    ("topics.txt", "q1\t" + LONG + "\n", read_topics, 1),
]


@pytest.mark.parametrize("name, text, read, record", LONG_RECORDS, ids=[r[0] for r in LONG_RECORDS])
def test_a_record_over_the_bound_is_refused_naming_it(tmp_path, monkeypatch, name, text, read, record):
    monkeypatch.setenv(LIMIT_ENV, "1")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read(path)
    assert info.value.file == str(path)
    assert "longer than 1 MB" in str(info.value) and LIMIT_ENV in str(info.value), str(info.value)
    if record is not None:
        assert info.value.record == record


def test_a_yaml_file_over_the_document_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from evalcore.common import text_input

    monkeypatch.setattr(text_input, "MAX_DOCUMENT_MB", 1)
    monkeypatch.setenv(LIMIT_ENV, "1")
    path = tmp_path / "questions.yaml"
    path.write_text("- id: q1\n  question: Q?\n" * 100_000, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_yaml(path)
    assert info.value.file == str(path) and "at most 1 MB" in str(info.value)


@pytest.mark.parametrize("name, head, read", READERS[:5], ids=[r[0] for r in READERS[:5]])
def test_utf16_text_is_named_as_such(tmp_path, name, head, read):
    path = tmp_path / name
    path.write_bytes(head.decode().encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16 or UTF-32 text .* save it as UTF-8"):
        read(path)


def test_the_line_reader_holds_one_piece_of_a_nul_file(tmp_path):
    """A 64 MB NUL file: refused after the first piece read (offset 0), whatever the bound."""
    path = tmp_path / "crash.jsonl"
    with open(path, "wb") as fh:
        fh.truncate(64 * 2 ** 20)  # sparse: no disk used
    with pytest.raises(InputError, match="NUL byte at byte offset 0"):
        next(iter_lines(path))


def test_lines_within_the_bound_keep_their_offsets(tmp_path, monkeypatch):
    monkeypatch.setenv(LIMIT_ENV, "0.001")  # 1048 bytes
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbfab\r\n" + b"c" * 1000 + b"\n\nlast")
    got = list(iter_lines(path))
    assert got == [(1, 3, "ab\r\n"), (2, 7, "c" * 1000 + "\n"), (3, 1008, "\n"), (4, 1009, "last")]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "lots"])
def test_a_bad_bound_is_refused(monkeypatch, value):
    monkeypatch.setenv(LIMIT_ENV, value)
    with pytest.raises(EvalcoreError, match=LIMIT_ENV):
        record_limit()


@pytest.mark.parametrize("piece", [1, 3, 1 << 20])
@pytest.mark.parametrize("doc", [
    {"data": [{"a": 1}], "records": [{"b": 2}, {"c": 3}]},        # a later key is preferred
    {"records": [{"a": 1}], "records ": [], "x": {"records": [1]}},  # only top-level keys count
    {"version": 123456789, "meta": {"n": [1, 2.5e10, None]}, "questions": [{"q": "é ✓"}]},
    {"items": "not a list", "examples": [{"e": 1}]},
])
def test_a_wrapped_json_file_streams_what_json_loads_reads(tmp_path, monkeypatch, doc, piece):
    """The object wrapping the records is streamed (two passes); the records chosen are the
    ones the whole-file parse chose: the first of LIST_KEYS holding a list."""
    monkeypatch.setattr(json_stream, "TEXT_PIECE", piece)
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    expected = next(doc[k] for k in LIST_KEYS if isinstance(doc.get(k), list))
    assert [rec for _, rec in read_records(path)] == expected


def test_a_repeated_key_counts_by_its_last_value(tmp_path):
    path = tmp_path / "wrapped.json"
    path.write_text('{"records": [{"old": 1}], "records": [{"new": 2}]}', encoding="utf-8")
    assert [rec for _, rec in read_records(path)] == [{"new": 2}]


@pytest.mark.parametrize("text, message", [
    ('{"records": [{"a": 1}], }', "expected a key"),
    ('{"records": [{"a": 1}]} extra', "extra data"),
    ('{"records": [{"a": 1}]', "expected ',' or '}'"),
    ('{"other": [1]}', "expected a list of records"),
    ("", "holds no JSON"),
])
def test_a_broken_wrapper_is_refused_before_any_record(tmp_path, text, message):
    path = tmp_path / "wrapped.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        list(read_records(path))


# ---- the CLI in a child process: peak memory while refusing a file ---------------------------

CHILD = r"""
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
for argv in warm:  # the same commands on small files load every lazy module first
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

SIZE = 48 * 2 ** 20
COMMANDS = [(["labels", "import"], "labels.csv"), (["labels", "import"], "labels.jsonl"), (["import"], "answers.jsonl"),
            (["import"], "answers.csv"), (["import"], "answers.json")]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for peak RSS")
def test_the_cli_refuses_a_crash_left_file_in_one_line_without_reading_it(tmp_path):
    """One child process runs `labels import` and `import` on 48 MB files of NUL bytes (sparse,
    as a crash leaves them) and of one endless line (over a 2 MB bound): each is one `error:`
    line naming the file (and the offset of the NUL byte), exit 2, and the child's peak RSS
    (VmHWM) grows by a few MB, not by the file."""
    import os

    cases = []
    for command, name in COMMANDS:
        nul = tmp_path / f"nul-{name}"
        with open(nul, "wb") as fh:
            fh.truncate(SIZE)
        cases.append((command, nul, "NUL byte at byte offset 0"))
    for command, name in COMMANDS[:3]:
        endless = tmp_path / f"endless-{name}"
        endless.write_bytes(b"a" * SIZE)
        cases.append((command, endless, "longer than 2 MB"))
    small = tmp_path / "small.csv"
    small.write_bytes(b"\0" * 100)
    store = ["--store", str(tmp_path / "runs")]
    warm = [store + command + [str(small)] for command in (["labels", "import"], ["import"])]
    real = [store + command + [str(path)] for command, path, _ in cases]
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(warm), json.dumps(real)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, LIMIT_ENV: "2"})
    assert out.stdout.strip(), out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    said = out.stderr.split("--\n")[1:]  # what each command printed (after the warm-up's)
    for (command, path, expected), result, err in zip(cases, results, said):
        lines = err.strip().splitlines()
        assert result["code"] == 2 and len(lines) == 1, (path.name, err)
        assert lines[0].startswith("error: ") and str(path) in lines[0] and expected in lines[0], lines[0]
        assert result["base"] > 20 * 2 ** 20  # a real measurement: the interpreter alone is larger
        assert result["growth"] < 10 * 2 ** 20, f"{path.name}: peak RSS grew {result['growth'] / 2 ** 20:.0f} MB"
