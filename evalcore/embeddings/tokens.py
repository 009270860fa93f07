"""Contextual token states of a Hugging Face encoder: one forward pass per distinct text.

Why a shared module: BERTScore needs the token vectors of a layer, and a mean-pooling
sentence-transformers model's sentence vector is just the mean of the last layer's token
vectors. When both metrics use the same model (the default), running the transformer once per
text and deriving both halves the work. `get_token_encoder` keeps one encoder per (model
folder, layer) per process; each remembers recent texts (bounded memory) so whichever metric
runs second finds the states ready.

Thread-safe: a scoring pass's warm-up thread and its main thread (BERTScore) may use one
encoder at once; each encoder loads once and runs one batch at a time under its own lock (a
Hugging Face fast tokenizer must not be used from two threads at once either).

Tokenisation follows the bert-score library: stripped text, the model's special tokens,
truncation at the tokenizer's maximum length (512 for BERT-like models); an empty text is just
the special tokens. Batches go longest first under a token budget, so padding wastes little.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from evalcore.embeddings.models import ModelRef, load_transformer

MAX_CACHED_BYTES = 384 * 2**20
_ENCODERS: dict[tuple[str, int], "TokenEncoder"] = {}
_ENCODERS_LOCK = threading.Lock()


class TokenStates:
    """One text's token ids, unit token vectors (for BERTScore) and mean of raw vectors (pooling)."""

    __slots__ = ("ids", "unit", "mean")

    def __init__(self, ids: np.ndarray, unit: np.ndarray, mean: np.ndarray):
        self.ids, self.unit, self.mean = ids, unit, mean


def get_token_encoder(ref: ModelRef, layer: int) -> "TokenEncoder":
    key = (ref.location, int(layer))
    with _ENCODERS_LOCK:  # one encoder per key, also when two threads ask at once
        if key not in _ENCODERS:
            _ENCODERS[key] = TokenEncoder(ref, layer)
        return _ENCODERS[key]


class TokenEncoder:
    """Loads the model lazily (a fully cached re-score never needs it)."""

    def __init__(self, ref: ModelRef, layer: int, token_budget: int = 4096):
        self.ref = ref
        self.layer = int(layer)
        self.token_budget = max(512, int(token_budget))
        self.forward_passes = 0
        self._tokenizer: Any = None
        self._model: Any = None
        self._use_hidden_states = False
        self.max_len = 512
        self._states: OrderedDict[str, TokenStates] = OrderedDict()
        self._bytes = 0
        self._lock = threading.RLock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def tokenizer(self) -> Any:
        self._load()
        return self._tokenizer

    def _load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:  # loaded by another thread while this one waited
                return
            tokenizer, model = load_transformer(self.ref)
            if type(tokenizer).__name__.startswith(("Roberta", "GPT2", "Bart", "Longformer")):
                tokenizer, model = load_transformer(self.ref, add_prefix_space=True)  # as bert-score does
            self._tokenizer = tokenizer
            limit = int(getattr(tokenizer, "model_max_length", 512) or 512)
            positions = int(getattr(model.config, "max_position_embeddings", 512) or 512)
            self.max_len = limit if limit < 1_000_000 else positions
            model, self._use_hidden_states = truncate_layers(model, self.layer)
            self._model = model  # last: `loaded` is true only once everything is set

    def special_ids(self) -> set[int]:
        ids = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        return {i for i in ids if i is not None}

    def ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of the stripped texts, with special tokens, truncated at `max_len`."""
        with self._lock:
            return self._ids(texts)

    def _ids(self, texts: list[str]) -> list[list[int]]:
        self._load()
        stripped = [t.strip() for t in texts]
        out: list[list[int]] = [[] for _ in texts]
        filled = [i for i, t in enumerate(stripped) if t]
        if len(filled) < len(texts):  # an empty text is only the special tokens ([CLS] [SEP])
            empty = list(self._tokenizer("", add_special_tokens=True)["input_ids"])
            for i, t in enumerate(stripped):
                if not t:
                    out[i] = list(empty)
        if filled:
            enc = self._tokenizer([stripped[i] for i in filled], add_special_tokens=True, truncation=True,
                                  max_length=self.max_len)["input_ids"]
            for i, seq in zip(filled, enc):
                out[i] = list(seq)
        return out

    def states(self, texts: list[str], progress: Any = None) -> dict[str, TokenStates]:
        """States for each distinct stripped text (keys are the stripped texts)."""
        with self._lock:
            return self._states_of(texts, progress)

    def _states_of(self, texts: list[str], progress: Any) -> dict[str, TokenStates]:
        wanted = list(dict.fromkeys(t.strip() for t in texts))
        todo = [t for t in wanted if t not in self._states]
        if todo:
            self._forward(todo, progress or (lambda n: None))
        out = {}
        for t in wanted:
            self._states.move_to_end(t)
            out[t] = self._states[t]
        self._evict()
        return out

    def _forward(self, todo: list[str], advance: Any) -> None:
        import torch

        ids = dict(zip(todo, self._ids(todo)))
        todo = sorted(todo, key=lambda t: len(ids[t]), reverse=True)
        pad = self._tokenizer.pad_token_id or 0
        with torch.inference_mode():
            start = 0
            while start < len(todo):
                width = len(ids[todo[start]])
                batch = todo[start:start + max(1, min(128, self.token_budget // width))]
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, text in enumerate(batch):
                    input_ids[row, :len(ids[text])] = torch.tensor(ids[text], dtype=torch.long)
                    mask[row, :len(ids[text])] = 1
                out = self._model(input_ids=input_ids, attention_mask=mask,
                                  output_hidden_states=self._use_hidden_states)
                hidden = (out.hidden_states[self.layer] if self._use_hidden_states else out[0]).float()
                self.forward_passes += 1
                for row, text in enumerate(batch):
                    raw = hidden[row, :len(ids[text])]
                    unit = raw / raw.norm(dim=-1, keepdim=True)
                    state = TokenStates(np.asarray(ids[text], dtype=np.int64), unit.numpy().copy(),
                                        raw.mean(dim=0).numpy().copy())
                    self._states[text] = state
                    self._bytes += state.unit.nbytes + state.mean.nbytes
                advance(len(batch))
                start += len(batch)

    def _evict(self) -> None:
        while self._bytes > MAX_CACHED_BYTES and len(self._states) > 1:
            _, old = self._states.popitem(last=False)
            self._bytes -= old.unit.nbytes + old.mean.nbytes


def truncate_layers(model: Any, layer: int) -> tuple[Any, bool]:
    """Keep only the first `layer` transformer blocks so the last hidden state is that layer's
    output (what bert-score does); returns (model, False). When the blocks are not where BERT-like
    models keep them, leave the model whole and read hidden_states[layer]: (model, True)."""
    import torch

    for owner_name in ("encoder", "transformer", None):
        owner = getattr(model, owner_name, None) if owner_name else model
        blocks = getattr(owner, "layer", None) if owner is not None else None
        if isinstance(blocks, torch.nn.ModuleList):
            owner.layer = torch.nn.ModuleList(list(blocks)[:layer])
            return model, False
    return model, True
