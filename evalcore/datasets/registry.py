"""Explicit registry of question formats: name -> (loader, sniffer, description).

`load_questions(path, fmt=None, on_duplicate="error")` picks the format by name or by
sniffing the file, so `--dataset FILE` works for any supported file without the user naming
its format. Every loader takes `on_duplicate` (see `evalcore.datasets.native.check_unique`).

Sniffers are cheap on purpose: they read the first 64 KiB (or a Parquet footer) and look for
the keys that only that format uses; they never raise. They are tried in registration order
and the first match wins; `native` is the fallback and always stays last, whatever registers
later (`register` moves it back to the end). The sniffers live here, side by side, so a new
format can be checked against the others' keys in one place.

TREC topics (with the qrels file named alike beside them) come after `ragchecker`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evalcore.datasets import public
from evalcore.datasets.graphrag_bench import load_graphrag_bench
from evalcore.datasets.hotpotqa import load_hotpotqa
from evalcore.datasets.korean_plan import load_korean_plan, looks_like_plan
from evalcore.datasets.native import OnDuplicate, check_on_duplicate, load_native
from evalcore.datasets.trec import load_trec_topics, sniff_trec_topics
from evalcore.datasets.ragchecker import load_ragchecker
from evalcore.datasets.squad_v2 import load_squad_v2
from evalcore.errors import InputError
from evalcore.schemas import EvalQuestion

HEAD_BYTES = 65536


@dataclass(frozen=True)
class DatasetFormat:
    name: str
    load: Callable[..., list[EvalQuestion]]  # (path) or (path, on_duplicate="error")
    sniff: Callable[[Path], bool]
    description: str


def _always(_: Path) -> bool:
    return True


FORMATS: dict[str, DatasetFormat] = {}


def register(fmt: DatasetFormat) -> None:
    """Add (or replace) a format; `native`, the fallback, is kept last."""
    FORMATS[fmt.name] = fmt
    if "native" in FORMATS and fmt.name != "native":
        FORMATS["native"] = FORMATS.pop("native")


def load_questions(path: str | Path, fmt: str | None = None,
                   on_duplicate: OnDuplicate = "error") -> list[EvalQuestion]:
    """The questions of a file in any registered format (named by `fmt` or detected).

    A repeated question id is an error unless `on_duplicate="keep_first"`, which keeps the
    first copy and emits a DuplicateIdsDropped warning for the rest.
    """
    check_on_duplicate(on_duplicate)
    path = Path(path)
    if not path.exists():
        raise InputError(str(path), "no such file")
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(str(path), f"unknown dataset format {fmt!r}; known: {', '.join(FORMATS)}")
        return _load(FORMATS[fmt], path, on_duplicate)
    return _load(FORMATS[detect_format(path)], path, on_duplicate)


def _load(fmt: DatasetFormat, path: Path, on_duplicate: str) -> list[EvalQuestion]:
    """Call a format's loader. `on_duplicate` is passed only when it is not the default, so a
    format registered elsewhere with a one-argument loader keeps working as before."""
    if on_duplicate == "error":
        return fmt.load(path)
    if "on_duplicate" not in inspect.signature(fmt.load).parameters:
        raise InputError(str(path), f"the {fmt.name} loader cannot keep the first copy of a repeated id "
                                    f"(on_duplicate={on_duplicate!r})")
    return fmt.load(path, on_duplicate=on_duplicate)


def detect_format(path: str | Path) -> str:
    """Name of the first format whose sniffer accepts the file (`native` when none does)."""
    path = Path(path)
    for candidate in FORMATS.values():
        if candidate.name != "native" and _safe(candidate.sniff, path):
            return candidate.name
    return "native"


# ---- sniffers ---------------------------------------------------------------------------

def _safe(sniff: Callable[[Path], bool], path: Path) -> bool:
    try:
        return bool(sniff(path))
    except Exception:  # an unreadable file is the loader's to report, with a precise message
        return False


def _head(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(HEAD_BYTES).decode("utf-8", errors="ignore")


def _columns(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_schema(path).names)


def _json_keys(path: Path, *keys: str) -> bool:
    """A .json/.jsonl file whose head names every one of `keys` as a JSON key."""
    if path.suffix.lower() not in {".json", ".jsonl", ".ndjson"}:
        return False
    head = _head(path)
    return all(f'"{key}"' in head for key in keys)


def sniff_korean_plan(path: Path) -> bool:
    return path.suffix.lower() in {".yaml", ".yml"} and looks_like_plan(_head(path))


def sniff_graphrag_bench(path: Path) -> bool:
    keys = ("question", "answer", "evidence", "question_type", "source")
    if path.suffix.lower() == ".parquet":
        return set(keys) <= _columns(path)
    return _json_keys(path, *keys)


def sniff_hotpotqa(path: Path) -> bool:
    return _json_keys(path, "question", "supporting_facts", "context")


def sniff_squad_v2(path: Path) -> bool:
    return _json_keys(path, "data", "paragraphs", "qas")


def sniff_ragchecker(path: Path) -> bool:
    return _json_keys(path, "query_id", "query", "gt_answer")


# ---- the registry, in sniffing order ----------------------------------------------------

register(DatasetFormat("korean_plan", load_korean_plan, sniff_korean_plan,
                       "the Korean plan's eval_questions.yaml: categories -> questions (YAML)"))
register(DatasetFormat("graphrag_bench", load_graphrag_bench, sniff_graphrag_bench,
                       "GraphRAG-Bench questions (novel_questions.json / .parquet)"))
register(DatasetFormat("hotpotqa", load_hotpotqa, sniff_hotpotqa,
                       "HotpotQA JSON (e.g. hotpot_dev_distractor_v1.json)"))
register(DatasetFormat("squad_v2", load_squad_v2, sniff_squad_v2,
                       "SQuAD 2.0 / 1.1 JSON (e.g. dev-v2.0.json)"))
register(DatasetFormat("ragchecker", load_ragchecker, sniff_ragchecker,
                       "RAGChecker checking_inputs JSON (questions; its responses via `evalcore import`)"))
register(DatasetFormat("trec", load_trec_topics, sniff_trec_topics,
                       "TREC topics 'qid<TAB>query' with qrels beside them (topics.X.txt + qrels.X.txt)"))
register(DatasetFormat("native", load_native, _always,
                       "evalcore questions: JSONL / JSON / YAML / CSV / Parquet (see docs/data-formats.md)"))


@dataclass(frozen=True)
class PublicSet:
    """A public dataset fetched by name through the `datasets` library (optional, online)."""

    name: str
    load: Callable[..., list[EvalQuestion]]
    description: str


PUBLIC_SETS: dict[str, PublicSet] = {}


def register_public(item: PublicSet) -> None:
    PUBLIC_SETS[item.name] = item


register_public(PublicSet("ragbench", public.loader("ragbench"),
                          "RAGBench (rungalileo/ragbench; subset = covidqa, finqa, hotpotqa, ...): "
                          "generation, retrieval"))
register_public(PublicSet("squad_v2", public.loader("squad_v2"),
                          "SQuAD 2.0 (rajpurkar/squad_v2): abstention, ~50% unanswerable"))
register_public(PublicSet("hotpotqa", public.loader("hotpotqa"),
                          "HotpotQA distractor (hotpotqa/hotpot_qa): multi-hop retrieval, generation"))
register_public(PublicSet("msmarco", public.loader("msmarco"),
                          "MS MARCO v2.1 (microsoft/ms_marco): passage retrieval"))
register_public(PublicSet("qasper", public.loader("qasper"),
                          "QASPER (allenai/qasper): evidence in long papers; may fail with datasets>=4"))
