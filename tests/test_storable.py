"""evalcore.schemas.storable: the one helper that makes untrusted text storable (UTF-8)."""

from __future__ import annotations

import json

from evalcore.schemas.storable import MAX_PATHS, make_storable, storable_note, storable_text


def test_text_keeps_everything_but_lone_surrogates():
    assert storable_text("plain ascii") == ("plain ascii", 0)
    assert storable_text("한국어 😀 ok") == ("한국어 😀 ok", 0)
    assert storable_text("a\ud800b\udfff") == ("a\ufffdb\ufffd", 2)


def test_nested_values_keys_and_paths():
    value = json.loads('{"a": ["x", "\\ud800"], "k\\udc00": {"b": "\\udbff"}, "n": 1}')
    fixed, paths = make_storable(value)
    assert fixed is value
    assert fixed == {"a": ["x", "\ufffd"], "k\ufffd": {"b": "\ufffd"}, "n": 1}
    assert list(fixed) == ["a", "k\ufffd", "n"]  # key order kept
    assert sorted(paths) == ["a[1]", "k\ufffd (key)", "k\ufffd.b"]
    json.dumps(fixed, ensure_ascii=False).encode("utf-8")  # now encodable


def test_deep_nesting_has_no_recursion_limit():
    value: list = ["\ud800"]
    for _ in range(50_000):
        value = [value]
    _, paths = make_storable(value)
    assert len(paths) == 1 and paths[0].endswith("[0]")


def test_note_is_bounded():
    note = storable_note([f"f{i}" for i in range(MAX_PATHS + 5)])
    assert f"{MAX_PATHS + 5} field(s)" in note and "and 5 more" in note
