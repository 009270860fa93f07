"""Public sets read through the real Hugging Face `datasets` library, offline.

test_public.py fakes `datasets.load_dataset`, so it cannot show that the rows the library really
yields fit our mappings: Arrow decodes a Hub "sequence of fields" column into a dict of lists,
numbers come back from int32 columns, and the streaming and the in-memory paths are separate
code in the library. Here each Hub repository is mirrored in a temporary folder laid out the way
the Hub lays it out (a README whose YAML header declares the configs and the features, Parquet
shards under the config's folder), filled with real rows from ../shared/data converted to the
Hub's columns, and `public.HUB` names that folder instead of the repository. evalcore then makes
its usual `load_dataset(repo, config, split=...)` call, and the questions must equal what the
file loaders make of the original JSON: one mapping serves both sources.

Column layouts are the Hub dataset cards' `dataset_info.features`:
- hotpotqa/hotpot_qa, config distractor: id, question, answer, type, level (strings);
  supporting_facts = sequence of {title: string, sent_id: int32};
  context = sequence of {title: string, sentences: sequence of string}.
- rajpurkar/squad_v2, config squad_v2: id, title, context, question (strings);
  answers = sequence of {text: string, answer_start: int32}. No is_impossible or
  plausible_answers: an unanswerable question has empty answer lists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from evalcore.datasets import public
from evalcore.datasets.hotpotqa import load_hotpotqa
from evalcore.datasets.registry import PUBLIC_SETS
from evalcore.datasets.squad_v2 import load_squad_v2
from evalcore.errors import EvalcoreError
from tests.optional import requires


@pytest.fixture(autouse=True)
def _the_real_library():
    """Every test here drives the real `datasets` (imported when a test runs, not at collection)."""
    requires("datasets", "the Hugging Face library")


N_ROWS = 40  # enough for both kinds of HotpotQA question and both kinds of SQuAD question

STRING, INT32 = pa.string(), pa.int32()
HOTPOT_SCHEMA = pa.schema([
    ("id", STRING), ("question", STRING), ("answer", STRING), ("type", STRING), ("level", STRING),
    ("supporting_facts", pa.struct([("title", pa.list_(STRING)), ("sent_id", pa.list_(INT32))])),
    ("context", pa.struct([("title", pa.list_(STRING)), ("sentences", pa.list_(pa.list_(STRING)))])),
])
SQUAD_SCHEMA = pa.schema([
    ("id", STRING), ("title", STRING), ("context", STRING), ("question", STRING),
    ("answers", pa.struct([("text", pa.list_(STRING)), ("answer_start", pa.list_(INT32))])),
])
# the same layouts as the cards declare them (README YAML), so the library casts to them as on the Hub
HOTPOT_FEATURES = [
    *({"name": n, "dtype": "string"} for n in ("id", "question", "answer", "type", "level")),
    {"name": "supporting_facts", "sequence": [{"name": "title", "dtype": "string"},
                                              {"name": "sent_id", "dtype": "int32"}]},
    {"name": "context", "sequence": [{"name": "title", "dtype": "string"},
                                     {"name": "sentences", "sequence": "string"}]},
]
SQUAD_FEATURES = [
    *({"name": n, "dtype": "string"} for n in ("id", "title", "context", "question")),
    {"name": "answers", "sequence": [{"name": "text", "dtype": "string"},
                                     {"name": "answer_start", "dtype": "int32"}]},
]


@pytest.fixture
def offline_library(tmp_path, monkeypatch):
    """The real `datasets`, offline, with every cache inside tmp_path.

    Both libraries read these variables once, when first imported, and another test (or
    sentence-transformers) may have imported them already, so the module constants are set too.
    """
    home = tmp_path / "hf_home"
    paths = {"HF_HOME": home, "HF_HUB_CACHE": home / "hub", "HF_DATASETS_CACHE": home / "datasets"}
    for key, value in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **paths}.items():
        monkeypatch.setenv(key, str(value))
    import datasets
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HOME", str(home))
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(paths["HF_HUB_CACHE"]))
    config = datasets.config
    for name, value in {"HF_HUB_OFFLINE": True, "HF_DATASETS_OFFLINE": True, "HF_CACHE_HOME": str(home),
                        "HF_DATASETS_CACHE": paths["HF_DATASETS_CACHE"],
                        "HF_MODULES_CACHE": home / "modules",
                        "DOWNLOADED_DATASETS_PATH": paths["HF_DATASETS_CACHE"] / "downloads",
                        "EXTRACTED_DATASETS_PATH": paths["HF_DATASETS_CACHE"] / "downloads" / "extracted",
                        }.items():
        monkeypatch.setattr(config, name, value)
    return home


def _mirror_repo(root: Path, config: str, features: list, schema: pa.Schema, rows: list[dict]) -> Path:
    """A local folder shaped like a Hub dataset repository holding one validation shard of `rows`."""
    card = {"dataset_info": {"config_name": config, "features": features},
            "configs": [{"config_name": config,
                         "data_files": [{"split": "validation", "path": f"{config}/validation-*"}]}]}
    (root / config).mkdir(parents=True)
    (root / "README.md").write_text(f"---\n{yaml.safe_dump(card, sort_keys=False)}---\n", encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema),
                   root / config / "validation-00000-of-00001.parquet")
    return root


def _hotpot_hub_row(record: dict) -> dict:
    """Official file record ([[title, ...], ...] pairs) -> Hub row (columns of lists)."""
    return {"id": record["_id"], "question": record["question"], "answer": record["answer"],
            "type": record["type"], "level": record["level"],
            "supporting_facts": {"title": [t for t, _ in record["supporting_facts"]],
                                 "sent_id": [i for _, i in record["supporting_facts"]]},
            "context": {"title": [t for t, _ in record["context"]],
                        "sentences": [s for _, s in record["context"]]}}


def _squad_hub_rows(data: dict) -> list[dict]:
    """Official nested file -> flat Hub rows; unanswerable questions have empty answer lists."""
    return [{"id": qa["id"], "title": article["title"], "context": paragraph["context"],
             "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for article in data["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


@pytest.fixture
def hotpot(shared_data, tmp_path, monkeypatch, offline_library):
    """(expected questions from the file loader, the mirrored repository) for HotpotQA."""
    path = shared_data / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json"
    records = json.loads(path.read_text(encoding="utf-8"))[:N_ROWS]
    repo = _mirror_repo(tmp_path / "hotpot_qa", "distractor", HOTPOT_FEATURES, HOTPOT_SCHEMA,
                        [_hotpot_hub_row(r) for r in records])
    monkeypatch.setitem(public.HUB, "hotpotqa", (str(repo), "distractor", "validation"))
    return load_hotpotqa(path)[:N_ROWS], repo


@pytest.fixture
def squad(shared_data, tmp_path, monkeypatch, offline_library):
    """(expected questions from the file loader, the mirrored repository) for SQuAD 2.0.

    The Hub rows have no plausible_answers, so the file's copy of them is dropped from the
    expected metadata; everything else must match.
    """
    path = shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json"
    rows = _squad_hub_rows(json.loads(path.read_text(encoding="utf-8")))[:N_ROWS]
    repo = _mirror_repo(tmp_path / "squad_v2", "squad_v2", SQUAD_FEATURES, SQUAD_SCHEMA, rows)
    # squad_v2 has a single config: evalcore passes none and the library must pick it
    monkeypatch.setitem(public.HUB, "squad_v2", (str(repo), None, "validation"))
    expected = []
    for q in load_squad_v2(path)[:N_ROWS]:
        q = q.model_copy(deep=True)
        q.metadata.pop("plausible_answers", None)
        expected.append(q)
    return expected, repo


def test_the_mirror_has_the_hub_column_layout(hotpot, squad):
    """Guards the fixture itself: the library reads the shards as the cards' features."""
    import datasets

    ds = datasets.load_dataset(str(hotpot[1]), "distractor", split="validation")
    assert ds.num_rows == N_ROWS
    assert ds.features["supporting_facts"] == {"title": datasets.List(datasets.Value("string")),
                                               "sent_id": datasets.List(datasets.Value("int32"))}
    assert ds.features["context"]["sentences"] == datasets.List(datasets.List(datasets.Value("string")))
    row = ds[0]
    assert set(row) == {"id", "question", "answer", "type", "level", "supporting_facts", "context"}
    assert isinstance(row["supporting_facts"]["sent_id"][0], int)
    ds = datasets.load_dataset(str(squad[1]), split="validation")
    assert set(ds.features) == {"id", "title", "context", "question", "answers"}
    assert ds.features["answers"]["answer_start"] == datasets.List(datasets.Value("int32"))


def test_hotpotqa_through_the_library_equals_the_file_loader(hotpot):
    expected, _ = hotpot
    loaded = PUBLIC_SETS["hotpotqa"].load()  # no limit: the in-memory (Arrow) path
    assert len(loaded) == N_ROWS
    assert loaded == expected
    assert {q.question_type for q in loaded} == {"bridge", "comparison"}


def test_hotpotqa_streaming_sample_equals_the_file_loader(hotpot):
    expected, _ = hotpot
    assert PUBLIC_SETS["hotpotqa"].load(limit=7) == expected[:7]  # limit: the streaming path


def test_squad_v2_through_the_library_equals_the_file_loader(squad):
    expected, _ = squad
    loaded = PUBLIC_SETS["squad_v2"].load()
    assert len(loaded) == N_ROWS
    assert loaded == expected
    assert {q.answerable for q in loaded} == {True, False}  # empty answer lists read as unanswerable


def test_squad_v2_streaming_sample_equals_the_file_loader(squad):
    expected, _ = squad
    loaded = PUBLIC_SETS["squad_v2"].load(limit=12)
    assert loaded == expected[:12]
    assert {q.answerable for q in loaded} == {True, False}


def test_an_unknown_split_of_a_real_repository_is_the_clear_error(hotpot):
    with pytest.raises(EvalcoreError, match=r"could not load public set 'hotpotqa'.*split train") as info:
        PUBLIC_SETS["hotpotqa"].load(split="train", limit=1)
    assert "\n" not in str(info.value)


def test_the_library_caches_under_tmp_path(hotpot, offline_library):
    """The in-memory path writes Arrow files: they must land in tmp_path, not in the user's cache."""
    PUBLIC_SETS["hotpotqa"].load()
    assert any((offline_library / "datasets").iterdir())
