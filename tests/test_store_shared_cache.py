"""The store's one API for shared caches (store/shared_cache.py), and the caches that use it.

The judge cache and the embedding caches keep their files in `_shared/` through
`RunStore.shared_cache(name)`: the layout they had before is kept, so replies and vectors
cached by an earlier evalcore stay valid (tests/fixtures/shared_caches_v1 was written by the
code before this API), and what they write now is what they wrote then. On a local store and
on object storage alike (the embedding caches live in this machine's folder for an s3:// store).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from evalcore.embeddings import Embedder, cache_area
from evalcore.embeddings.cache import ArrayCache, namespace, text_key
from evalcore.judges import make_judge
from evalcore.judges.cache import JudgeCache, request_key
from evalcore.store import RunStore
from evalcore.store.safe_paths import OutsideStore
from evalcore.store.shared_cache import SharedCache

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "shared_caches_v1" / "_shared"
EXPECTED = json.loads((FIXTURE.parents[1] / "shared_caches_v1.expected.json").read_text(encoding="utf-8"))
JUDGE = EXPECTED["judge"]
VECTORS = EXPECTED["vectors"]
BERT = EXPECTED["bertscore"]


class StandIn:
    """The fixture's stand-in model (tests/fixtures/make_shared_caches_v1.py); `refuse`: any
    text it is asked to encode fails the test, so every vector must come from the cache."""

    model_id, source = VECTORS["model_id"], "test"

    def __init__(self, refuse: bool = False):
        self.refuse = refuse

    def describe(self) -> str:
        return self.model_id

    def embed(self, texts: list[str]) -> np.ndarray:
        assert not self.refuse, f"encoded {texts}: the cached vectors were not read"
        return np.array([[len(t), t.count("a") + 1.0, t.count(" ") + 1.0] for t in texts], dtype=np.float32)


@pytest.fixture(params=["local", "s3"])
def any_store(request, tmp_path) -> RunStore:
    if request.param == "local":
        return RunStore(tmp_path / "runs")
    return request.getfixturevalue("s3_store")


def _judge_entry(store: RunStore) -> object:
    return store.shared_dir("judge_cache") / JUDGE["key"][:2] / f"{JUDGE['key']}.json"


def _embedding_files(store: RunStore) -> Path:
    return Path(store.local_shared_dir("embeddings"))


def _place_old_caches(store: RunStore) -> None:
    """Put the fixture's files where an old evalcore left them in this store."""
    _judge_entry(store).parent.mkdir(parents=True, exist_ok=True)
    _judge_entry(store).write_bytes((FIXTURE / "judge_cache" / JUDGE["key"][:2] / f"{JUDGE['key']}.json").read_bytes())
    shutil.copytree(FIXTURE / "embeddings", _embedding_files(store), dirs_exist_ok=True)


def _bert_cache(store: RunStore) -> ArrayCache:
    return ArrayCache(namespace(cache_area(store), "bertscore", BERT["identity"]), width=3,
                      meta={"kind": "bertscore-prf", "identity": BERT["identity"]})


def test_caches_written_before_the_store_api_are_read_as_they_are(any_store):
    _place_old_caches(any_store)
    assert request_key(JUDGE["request"]) == JUDGE["key"]  # the key of a request is what it was
    assert JudgeCache(any_store.shared_cache("judge_cache")).get(JUDGE["key"]) == JUDGE["entry"]
    assert make_judge("openai:m@http://127.0.0.1:9/v1", any_store).cache.get(JUDGE["key"]) == JUDGE["entry"]
    vectors = Embedder(StandIn(refuse=True), cache_area=cache_area(any_store)).encode(VECTORS["texts"])
    np.testing.assert_array_equal(vectors, np.array(VECTORS["rows"], dtype=np.float32))
    key = text_key(*BERT["pair"])
    assert key == BERT["key"]
    np.testing.assert_array_equal(_bert_cache(any_store).get([key])[key], np.array(BERT["row"], dtype=np.float32))


def _part_rows(folder: Path) -> list[tuple[list[bytes], list]]:
    out = []
    for part in sorted(folder.glob("part-*.npz")):
        with np.load(part, allow_pickle=False) as data:
            out.append((list(data["keys"]), data["rows"].tolist()))
    return out


def test_the_caches_write_the_files_they_wrote_before(any_store):
    """Same names, same bytes for a judge reply and the vectors' meta.json, same rows in one part."""
    JudgeCache(any_store.shared_cache("judge_cache")).put(JUDGE["key"], JUDGE["entry"])
    old_entry = FIXTURE / "judge_cache" / JUDGE["key"][:2] / f"{JUDGE['key']}.json"
    assert _judge_entry(any_store).read_bytes() == old_entry.read_bytes()
    Embedder(StandIn(), cache_area=cache_area(any_store)).encode(VECTORS["texts"])
    _bert_cache(any_store).put([BERT["key"]], np.array([BERT["row"]], dtype=np.float32))
    for kind in ("vectors", "bertscore"):
        (old,) = (FIXTURE / "embeddings" / kind).iterdir()
        new = _embedding_files(any_store) / kind / old.name  # the folder a namespace had
        assert (new / "meta.json").read_bytes() == (old / "meta.json").read_bytes()
        assert _part_rows(new) == _part_rows(old)
        assert not [p.name for p in new.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name", ["../x", "a/../../x", "", "a//b", "/etc/x", "x\x00y", "x" * 256])
def test_a_shared_cache_takes_plain_names_only(any_store, tmp_path, name):
    area = any_store.shared_cache("judge_cache")
    acts = [lambda: area.write(name, b"x"), lambda: area.remove(name), lambda: area.sub(name).write("e", b"x"),
            lambda: area.sub("vectors").append(name, ".npz", lambda fh: fh.write(b"x"))]
    for act in acts[:3] if name == "" else acts:  # an empty prefix still makes a plain part name
        with pytest.raises(OutsideStore):
            act()
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.name in ("x", "e")]


def test_an_entry_larger_than_its_bound_or_not_a_file_is_a_miss(tmp_path):
    area = SharedCache(tmp_path)
    area.write("ab/entry.json", b"0123456789")
    assert area.read("ab/entry.json") == b"0123456789"
    assert area.read("ab/entry.json", limit=9) is None
    assert area.read("ab") is None and area.read("missing.json") is None  # a folder, nothing


def test_housekeeping_is_one_process_at_a_time(tmp_path):
    area = SharedCache(tmp_path)
    with area.exclusive(".lock") as first:
        with area.exclusive(".lock") as second:  # another open file description: as another process
            assert first and not second
    with area.exclusive(".lock") as again:
        assert again
