"""BERTScore (Zhang et al., 2020), computed so that it equals the `bert-score` library.

For a candidate x (the answer) and a reference y (the ground truth), both tokenised with the
model's special tokens and embedded by the chosen hidden layer, with unit token vectors:

    P = sum_i w(x_i) * max_j cos(x_i, y_j) / sum_i w(x_i)      (each candidate token finds a match)
    R = sum_j w(y_j) * max_i cos(x_i, y_j) / sum_j w(y_j)      (each reference token is covered)
    F = 2PR / (P + R)

w = 1 (or idf(t) = log((N+1)/(df(t)+1)) over N reference texts when idf is on; unseen tokens get
log(N+1)); the [CLS]/[SEP] tokens weigh 0 but can still be the best match of another token,
exactly as in the library. Baseline rescaling maps s -> (s - b) / (1 - b) with the per-layer
baseline b for P, R and F. An empty side scores 0 (the metric layer turns that into NaN).

Known, deliberate difference: the library floors each max at 0 whenever its batch had padding;
we take the true max. Contextual embeddings practically never have an all-negative row, and
the parity tests check the two agree to 1e-4 on real data.

Speed comes from: encoding each distinct text once (deduplicated across all pairs), sorting by
token length so padded batches waste little, a token budget per batch, and a pair cache in the
store so a re-score skips the model entirely (it is not even loaded).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from evalcore.embeddings import cache_area
from evalcore.embeddings.cache import ArrayCache, namespace, text_key
from evalcore.embeddings.embedder import progress_bar
from evalcore.embeddings.models import ModelRef, read_config, resolve_model
from evalcore.embeddings.tokens import TokenStates, get_token_encoder
from evalcore.errors import EvalcoreError
from evalcore.common.text_input import read_document

# Layers the bert-score authors chose (best correlation with human judgements); others: last layer.
KNOWN_LAYERS = {"microsoft/deberta-xlarge-mnli": 40, "roberta-large": 17, "bert-base-uncased": 9}
FORMULA_VERSION = "1"


class BertScorer:
    """BERTScore for one (model, layer, idf, rescale) setting; model weights load on first miss."""

    def __init__(self, model: str | None = None, layer: int | None = None, idf: bool = False,
                 rescale: bool = False, baseline_path: str | None = None, store: Any = None,
                 progress: bool | None = None):
        self.ref: ModelRef = resolve_model(model)
        self.model_id = self.ref.model_id
        n_layers = _layer_count(read_config(self.ref))
        self.layer = int(layer) if layer is not None else KNOWN_LAYERS.get(self.model_id, n_layers)
        if not 0 <= self.layer <= n_layers:
            raise EvalcoreError(f"BERTScore layer {self.layer} out of range for {self.model_id} (0..{n_layers})")
        self.idf = bool(idf)
        self.baseline = _load_baseline(self.model_id, self.layer, baseline_path) if rescale else None
        self.progress = progress
        self._area = cache_area(store)
        self.encoder = get_token_encoder(self.ref, self.layer)  # shared per process; loads lazily
        self._caches: dict[str, ArrayCache] = {}
        self._idf_weights: dict[str, dict[int, float]] = {}

    @property
    def label(self) -> str:
        parts = [self.ref.describe(), f"layer {self.layer}", "idf" if self.idf else "no idf"]
        if self.baseline is not None:
            parts.append("rescaled with baseline")
        return "BERTScore " + ", ".join(parts)

    # ---- public --------------------------------------------------------------------------
    def score(self, cands: list[str], refs: list[str], idf_corpus: list[str] | None = None) -> np.ndarray:
        """(n, 3) array of P, R, F for the pairs (cands[i], refs[i]); idf from `idf_corpus` (default refs)."""
        if len(cands) != len(refs):
            raise ValueError("cands and refs differ in length")
        cands = [c.strip() for c in cands]
        refs = [r.strip() for r in refs]
        corpus = [t.strip() for t in (idf_corpus if idf_corpus is not None else refs)]
        cache = self._pair_cache(corpus)
        keys = [text_key(c, r) for c, r in zip(cands, refs)]
        found = cache.get(dict.fromkeys(keys))
        todo = [i for i, k in enumerate(keys) if k not in found and cands[i] and refs[i]]
        if todo:
            weights = self._weights(corpus) if self.idf else None
            pending = list(dict.fromkeys(keys[i] for i in todo))
            first = {keys[i]: i for i in reversed(todo)}
            texts = [cands[first[k]] for k in pending] + [refs[first[k]] for k in pending]
            with progress_bar(len(set(texts)), self.progress, f"BERTScore {self.model_id}") as advance:
                states = self.encoder.states(texts, advance)
            specials = list(self.encoder.special_ids())
            rows = np.array([_pair(states[cands[first[k]]], states[refs[first[k]]], weights, specials)
                             for k in pending], dtype=np.float32)
            cache.put(pending, rows)
            found.update(zip(pending, rows))
        out = np.array([found[k] if k in found else np.zeros(3, np.float32) for k in keys], dtype=np.float64)
        if self.baseline is not None:
            out = (out - self.baseline) / (1.0 - self.baseline)
        return out

    # ---- pieces --------------------------------------------------------------------------
    def idf_tag(self, corpus: list[str]) -> str:
        """A short name of the idf weights: "none" without idf, else a hash of the corpus as a
        multiset (idf does not depend on the order of the references)."""
        return text_key(*sorted(t.strip() for t in corpus))[:16] if self.idf else "none"

    def _pair_cache(self, corpus: list[str]) -> ArrayCache:
        identity = f"{self.model_id}|layer={self.layer}|idf={self.idf_tag(corpus)}|v{FORMULA_VERSION}"
        if identity not in self._caches:
            self._caches[identity] = ArrayCache(namespace(self._area, "bertscore", identity), width=3,
                                                meta={"kind": "bertscore-prf", "identity": identity})
        return self._caches[identity]

    def _weights(self, corpus: list[str]) -> dict[int, float]:
        """idf over the reference corpus (document frequency; duplicates count as documents).
        Kept per corpus: scoring asks again for every chunk of a run with the same corpus."""
        if not corpus:  # every weight would be log(1) = 0 and every score 0/0
            raise ValueError("BERTScore idf needs at least one reference text")
        tag = self.idf_tag(corpus)
        if tag not in self._idf_weights:
            self._idf_weights[tag] = self._count_idf(corpus)
        return self._idf_weights[tag]

    def _count_idf(self, corpus: list[str]) -> dict[int, float]:
        df: Counter[int] = Counter()
        for ids in self.encoder.ids(corpus):
            df.update(set(ids))
        n = len(corpus)
        weights = {tok: math.log((n + 1) / (c + 1)) for tok, c in df.items()}
        weights[-1] = math.log(n + 1)  # default for tokens never seen in the corpus
        return weights

    @property
    def forward_passes(self) -> int:
        return self.encoder.forward_passes


def _pair(cand: TokenStates, ref: TokenStates, weights: dict[int, float] | None,
          specials: list[int]) -> tuple[float, float, float]:
    """Greedy matching of one pair (see the module docstring for the formula)."""
    sim = cand.unit @ ref.unit.T
    wc, wr = _token_weights(cand.ids, weights, specials), _token_weights(ref.ids, weights, specials)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = float((sim.max(axis=1) * wc).sum() / wc.sum())
        r = float((sim.max(axis=0) * wr).sum() / wr.sum())
        f = 2 * p * r / (p + r)
    return (p if math.isfinite(p) else 0.0, r if math.isfinite(r) else 0.0, f if math.isfinite(f) else 0.0)


def _token_weights(ids: np.ndarray, weights: dict[int, float] | None, specials: list[int]) -> np.ndarray:
    if weights is None:
        w = np.ones(len(ids), dtype=np.float64)
    else:
        default = weights[-1]
        w = np.array([weights.get(int(t), default) for t in ids], dtype=np.float64)
    w[np.isin(ids, specials)] = 0.0
    return w


def _layer_count(config: dict[str, Any]) -> int:
    for name in ("num_hidden_layers", "n_layers", "num_layers", "n_layer"):
        if isinstance(config.get(name), int):
            return int(config[name])
    raise EvalcoreError("cannot tell how many layers the BERTScore model has (no num_hidden_layers in config)")


def _load_baseline(model_id: str, layer: int, path: str | None) -> np.ndarray:
    """Baseline (P, R, F) for `layer` from a LAYER,P,R,F csv: `path`, or the file bert-score ships
    for this model name (English) when the library is installed."""
    if path is None:
        import importlib.util

        spec = importlib.util.find_spec("bert_score")
        candidate = Path(spec.origin).parent / "rescale_baseline" / "en" / f"{model_id}.tsv" if spec and spec.origin \
            else None
        if candidate is None or not candidate.is_file():
            raise EvalcoreError(f"no BERTScore rescale baseline for {model_id}: pass a baseline file "
                                "(CSV with columns LAYER,P,R,F) or turn rescaling off")
        path = str(candidate)
    try:
        lines = [ln.strip() for ln in read_document(path).splitlines() if ln.strip()]  # bounded, text only
        header = [h.strip().upper() for h in lines[0].split(",")]
        rows = [dict(zip(header, ln.split(","))) for ln in lines[1:]]
        row = next(r for r in rows if int(float(r["LAYER"])) == layer)
        return np.array([float(row["P"]), float(row["R"]), float(row["F"])], dtype=np.float64)
    except (OSError, KeyError, ValueError, StopIteration, IndexError) as exc:
        raise EvalcoreError(f"BERTScore baseline {path}: no usable row for layer {layer} ({exc})") from exc
