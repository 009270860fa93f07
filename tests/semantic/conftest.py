"""Fixtures for the semantic tests: the packaged MiniLM is loaded at most once per session
(get_embedder and BertScorer share loaded models per process), plus small real-data samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.optional import requires


@pytest.fixture(scope="session")
def minilm_path() -> str:
    requires("sentence_transformers", "the 'semantic' extra")
    requires("bert_score", "the parity tests compare with bert-score")
    from evalcore.embeddings.models import packaged_model_path

    return str(packaged_model_path())


@pytest.fixture(scope="session")
def halueval_rows(shared_data) -> list[dict]:
    path = shared_data / "halueval" / "qa_one-turn_data.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def squad_questions(shared_data) -> list[dict]:
    """SQuAD 2.0 'Normans' answerable questions with their (several) gold answer strings."""
    data = json.loads((shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json").read_text(encoding="utf-8"))
    out = []
    for article in data["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                answers = list(dict.fromkeys(a["text"] for a in qa["answers"]))
                if answers:
                    out.append({"id": qa["id"], "question": qa["question"], "answers": answers})
    return out


class CountingBackend:
    """A deterministic stand-in model (hashes words into a vector) that counts what it encodes."""

    source = "test"

    def __init__(self, model_id: str = "test/counting", dim: int = 16):
        self.model_id = model_id
        self.dim = dim
        self.calls = 0
        self.texts: list[str] = []

    def describe(self) -> str:
        return f"{self.model_id} (test backend)"

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, hash_word(word) % self.dim] += 1.0
            out[i, -1] += 0.5  # never all-zero
        return out * 3.0  # deliberately not unit length: the Embedder must normalise


def hash_word(word: str) -> int:
    import hashlib

    return int(hashlib.md5(word.encode()).hexdigest()[:8], 16)


@pytest.fixture
def counting_backend() -> CountingBackend:
    return CountingBackend()
