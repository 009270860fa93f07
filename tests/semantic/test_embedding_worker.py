"""The embedding model loaded in a child process (embeddings/worker.py) gives this process's
vectors, and a child that cannot load hands the work (and the real error) back to this process."""

import numpy as np
import pytest

from evalcore.embeddings import ModelUnavailableError
from evalcore.embeddings.embedder import SentenceTransformerBackend
from evalcore.embeddings.models import ModelRef, resolve_model
from evalcore.embeddings.worker import EmbeddingWorker, WorkerError


def test_child_vectors_are_the_in_process_vectors(minilm_path):
    texts = ["What is the capital of France?", "Paris is the capital.", " padded ", "word " * 300, "x"]
    worker = EmbeddingWorker(resolve_model(None))
    try:
        theirs = worker.embed(texts)
    finally:
        worker.close()
    ours = SentenceTransformerBackend(resolve_model(None)).embed(texts)
    assert theirs.dtype == np.float32 and theirs.shape == ours.shape
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-6)


def test_a_child_that_cannot_load_falls_back_to_this_process(tmp_path, monkeypatch):
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    ref = ModelRef(str(folder), str(folder), "local")
    worker = EmbeddingWorker(ref)
    with pytest.raises(WorkerError):
        worker.embed(["a"])
    worker.close()
    backend = SentenceTransformerBackend(ref)
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)  # as in a fresh process
    assert backend.start_worker()
    with pytest.raises(ModelUnavailableError):  # the in-process load's own error, not the child's
        backend.embed(["a"])
    assert backend._worker is None
