"""The questions of a live run: a dataset file and/or public sets by name, optionally sampled.

Sampling is a seeded random sample kept in the file's order, so `--samples 20` picks the
same questions on every machine and a resumed run asks about the same ones. With several
datasets, ids are prefixed with the dataset name (ids only need to be unique per dataset)
and the name is added to each question's tags.

With `on_duplicate: keep_first`, the records a loader dropped for a repeated id are listed in
the dataset entry as `duplicates_dropped` (id, record, kept_record), so the manifest says
exactly which questions the run left out; the loader's warnings are then passed on unchanged.
"""

from __future__ import annotations

import inspect
import random
from pathlib import Path
from typing import Any

from evalcore.runner.config import EvalConfig
from evalcore.datasets import load_questions
from evalcore.datasets.native import noting_dropped
from evalcore.errors import EvalcoreError
from evalcore.common.fingerprint import file_fingerprint
from evalcore.schemas import EvalQuestion
from evalcore.schemas.storable import storable_path


def _sample(questions: list[EvalQuestion], n: int | None, seed: int) -> list[EvalQuestion]:
    if n is None or n >= len(questions):
        return questions
    keep = set(random.Random(seed).sample(range(len(questions)), n))
    return [q for i, q in enumerate(questions) if i in keep]


def _public(name: str, samples: int | None, seed: int, on_duplicate: str = "error") -> list[EvalQuestion]:
    from evalcore.datasets.registry import PUBLIC_SETS

    if name not in PUBLIC_SETS:
        known = ", ".join(sorted(PUBLIC_SETS)) or "none installed"
        raise EvalcoreError(f"dataset {name!r} is neither a file nor a known public set ({known}); "
                            "see `evalcore datasets`")
    load = PUBLIC_SETS[name].load
    params = inspect.signature(load).parameters
    kwargs: dict[str, Any] = {}
    for key in ("samples", "limit", "n"):
        if key in params and samples is not None:
            kwargs[key] = samples
            break
    if "seed" in params:
        kwargs["seed"] = seed
    if "on_duplicate" in params:
        kwargs["on_duplicate"] = on_duplicate
    return list(load(**kwargs))


def _one(ref: str, config: EvalConfig) -> tuple[list[EvalQuestion], dict[str, Any]]:
    path = Path(ref)
    with noting_dropped() as dropped:  # catch_warnings(record=True), then re-issued for the caller
        if path.exists():
            questions = load_questions(path, on_duplicate=config.on_duplicate)
            info = {"name": storable_path(path.stem), "path": storable_path(path),
                    "fingerprint": file_fingerprint(path)}
        else:
            questions = _public(ref, config.samples, config.seed, config.on_duplicate)
            info = {"name": ref, "source": "public"}
    if config.on_duplicate == "keep_first":
        info["duplicates_dropped"] = [d.as_dict() for d in dropped]
    info["n_total"] = len(questions)
    questions = _sample(questions, config.samples, config.seed)
    info["n_questions"] = len(questions)
    return questions, info


def collect_questions(config: EvalConfig) -> tuple[list[EvalQuestion], dict[str, Any]]:
    """All questions of the run and the manifest's `dataset` entry describing where they came from."""
    refs = ([config.dataset] if config.dataset else []) + list(config.datasets)
    if len(refs) == 1:
        questions, info = _one(refs[0], config)
        info.update(samples=config.samples, seed=config.seed)
        return questions, info
    out: list[EvalQuestion] = []
    parts = []
    for ref in refs:
        questions, info = _one(ref, config)
        prefix = info["name"]
        for q in questions:
            out.append(q.model_copy(update={
                "id": f"{prefix}:{q.id}", "tags": list(dict.fromkeys([*q.tags, prefix])),
                "metadata": {**q.metadata, "dataset": prefix, "source_id": q.id}}))
        parts.append(info)
    seen: set[str] = set()
    for q in out:
        if q.id in seen:
            raise EvalcoreError(f"question id {q.id!r} occurs twice across datasets (same dataset given twice?)")
        seen.add(q.id)
    return out, {"name": "+".join(p["name"] for p in parts), "parts": parts,
                 "samples": config.samples, "seed": config.seed, "n_questions": len(out)}
