"""The Embedder's cache and dedup: what is encoded once is never encoded again."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from evalcore.embeddings import Embedder, cache_area, get_embedder, reset_embedders
from evalcore.embeddings.cache import ArrayCache
from evalcore.store.shared_cache import SharedCache

PROJECT = Path(__file__).resolve().parents[2]


def test_dedup_within_one_call(counting_backend):
    emb = Embedder(counting_backend)
    out = emb.encode(["a cat", "a dog", "a cat", "a cat"])
    assert out.shape == (4, 16) and out.dtype == np.float32
    assert sorted(counting_backend.texts) == ["a cat", "a dog"]
    assert emb.encoded == 2
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_second_encode_does_not_call_the_model(counting_backend, store):
    emb = Embedder(counting_backend, cache_area=cache_area(store))
    first = emb.encode(["one", "two", "three"])
    assert counting_backend.calls == 1
    again = emb.encode(["three", "one"])
    assert counting_backend.calls == 1  # memory hit
    np.testing.assert_array_equal(again, first[[2, 0]])
    # a new Embedder on the same store (think: a later process) reads the part files instead
    fresh = Embedder(counting_backend, cache_area=cache_area(store))
    np.testing.assert_array_equal(fresh.encode(["two", "one", "three"]), first[[1, 0, 2]])
    assert counting_backend.calls == 1
    # only the new text goes to the model
    fresh.encode(["one", "four"])
    assert counting_backend.calls == 2 and counting_backend.texts[-1] == "four"


def test_cache_is_per_model(counting_backend, store):
    other = type(counting_backend)(model_id="test/other-model", dim=8)
    Embedder(counting_backend, cache_area=cache_area(store)).encode(["same text"])
    out = Embedder(other, cache_area=cache_area(store)).encode(["same text"])
    assert other.calls == 1 and out.shape == (1, 8)  # no hit on the first model's vector


def test_cache_files_are_atomic_parts(counting_backend, store):
    emb = Embedder(counting_backend, cache_area=cache_area(store))
    emb.encode(["x y", "y z"])
    emb.encode(["z w"])
    folder = emb.cache.directory
    parts = sorted(p.name for p in folder.glob("part-*.npz"))
    assert len(parts) == 2
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert (folder / "meta.json").is_file()
    assert counting_backend.model_id in (folder / "meta.json").read_text()


def test_damaged_part_is_skipped_and_recomputed(counting_backend, store):
    emb = Embedder(counting_backend, cache_area=cache_area(store))
    emb.encode(["alpha"])
    part = next(emb.cache.directory.glob("part-*.npz"))
    part.write_bytes(b"not a numpy file")
    with pytest.warns(UserWarning, match="unreadable cache part"):
        fresh = Embedder(counting_backend, cache_area=cache_area(store))
    fresh.encode(["alpha"])
    assert counting_backend.calls == 2


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from evalcore.embeddings import Embedder
    from evalcore.embeddings.cache import text_key
    from evalcore.store.shared_cache import SharedCache

    class Backend:
        model_id, source = "test/concurrent", "test"
        def describe(self): return self.model_id
        def embed(self, texts):
            return np.array([[len(t), t.count("a") + 1.0, 1.0] for t in texts], dtype=np.float32)

    root, start = sys.argv[1], int(sys.argv[2])
    emb = Embedder(Backend(), cache_area=SharedCache(root), chunk_size=7)
    emb.encode([f"text {i} " + "a" * (i % 5) for i in range(start, start + 60)])
    print(emb.encoded)
""")


def test_two_processes_write_the_same_cache(tmp_path):
    root = tmp_path / "embeddings"
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(start)], cwd=PROJECT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for start in (0, 30)]  # overlapping texts 30..59
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    cache = ArrayCache(SharedCache(next((root / "vectors").iterdir())))
    assert len(cache) == 90  # the union, duplicates harmless
    assert not list(root.rglob("*.tmp"))


def test_get_embedder_shares_per_model_and_store(store):
    a = get_embedder(None, store)
    b = get_embedder("default", store)
    c = get_embedder(None, None)
    assert a is b and a is not c and a.backend is c.backend  # one loaded model per process
    assert a.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    reset_embedders(keep_models=True)
    assert get_embedder(None, store) is not a


def test_real_model_vectors_equal_sentence_transformers(minilm_path, halueval_rows):
    """The default embedder takes mean-pooled vectors from the shared forward pass (so BERTScore
    can reuse it); they must equal sentence-transformers' own output, long texts included."""
    from sentence_transformers import SentenceTransformer

    texts = [r["knowledge"] for r in halueval_rows[:8]] + [r["right_answer"] for r in halueval_rows[:8]]
    texts += [" surrounded by spaces ", "word " * 400, "x"]  # whitespace and >256 tokens: fallback path
    ours = get_embedder(None, None).encode(texts)
    reference = SentenceTransformer(minilm_path, device="cpu", local_files_only=True).encode(
        texts, normalize_embeddings=True)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, reference, atol=1e-5)
