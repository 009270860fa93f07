"""Public sets: mapping of Hub-shaped rows, registry entries, and the offline / missing-library errors.

There is no network here: rows are built by hand in the documented Hub shapes, or from the
real local files where the shapes coincide (squad_v2, hotpotqa).
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from evalcore.datasets import public
from evalcore.datasets.hotpotqa import load_hotpotqa
from evalcore.datasets.registry import PUBLIC_SETS
from evalcore.datasets.squad_v2 import load_squad_v2
from evalcore.errors import EvalcoreError, InputError
from tests.optional import requires


def test_every_named_set_is_registered():
    assert set(PUBLIC_SETS) == {"ragbench", "squad_v2", "hotpotqa", "msmarco", "qasper"}
    assert set(PUBLIC_SETS) == set(public.HUB) == set(public.MAPPERS)


def test_hotpot_hub_rows_use_the_file_mapping(shared_data):
    path = shared_data / "hotpotqa_dev_distractor" / "hotpot_dev_distractor_v1_first53.json"
    raw = json.loads(path.read_text(encoding="utf-8"))[:10]
    rows = [{"id": r["_id"], "question": r["question"], "answer": r["answer"], "type": r["type"],
             "level": r["level"],
             "supporting_facts": {"title": [t for t, _ in r["supporting_facts"]],
                                  "sent_id": [i for _, i in r["supporting_facts"]]},
             "context": {"title": [t for t, _ in r["context"]], "sentences": [s for _, s in r["context"]]}}
            for r in raw]
    assert public.questions_from_rows("hotpotqa", rows) == load_hotpotqa(path)[:10]


def test_squad_hub_rows_use_the_file_mapping(shared_data):
    path = shared_data / "squad_v2_dev" / "dev-v2.0_Normans.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    rows = [{"id": qa["id"], "title": "Normans", "context": par["context"], "question": qa["question"],
             "answers": {"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]}}
            for par in raw["data"][0]["paragraphs"] for qa in par["qas"]]
    from_hub = public.questions_from_rows("squad_v2", rows)
    from_file = load_squad_v2(path)
    assert [(q.id, q.answerable, q.answers, q.gold_passages) for q in from_hub] == \
        [(q.id, q.answerable, q.answers, q.gold_passages) for q in from_file]


RAGBENCH_ROW = {
    "id": "covidqa-7", "question": "How is the virus spread?", "dataset_name": "covidqa",
    "documents": ["Doc zero text.", "Doc one: droplets spread it.", "Doc two."],
    "response": "Mainly by droplets.", "adherence_score": True, "relevance_score": 0.4,
    "utilization_score": 0.3, "all_relevant_sentence_keys": ["1a", "1b"],
}


def test_ragbench_gold_is_the_documents_with_relevant_sentences():
    q = public.ragbench_question(RAGBENCH_ROW, "hf", 1)
    assert [g.chunk_id for g in q.gold_passages] == ["covidqa-7#doc1"]
    assert q.gold_passages[0].text == "Doc one: droplets spread it."
    assert q.ground_truth == "Mainly by droplets." and q.category == "covidqa"
    assert len(q.metadata["documents"]) == 3 and q.metadata["relevance_score"] == 0.4


def test_ragbench_unsupported_response_is_not_a_reference_and_no_keys_means_all_documents():
    q = public.ragbench_question({**RAGBENCH_ROW, "adherence_score": False,
                                  "all_relevant_sentence_keys": []}, "hf", 1)
    assert q.ground_truth is None and q.metadata["response"] == "Mainly by droplets."
    assert len(q.gold_passages) == 3


@pytest.mark.parametrize("name, row, field", [
    ("ragbench", {**RAGBENCH_ROW, "id": "r2", "question": None}, "question"),
    ("ragbench", {**RAGBENCH_ROW, "id": None}, "id"),
    ("ragbench", {**RAGBENCH_ROW, "id": "r2", "documents": "one long text"}, "documents"),
])
def test_bad_hub_rows_are_input_errors(name, row, field):
    with pytest.raises(InputError) as info:
        public.questions_from_rows(name, [RAGBENCH_ROW, row])
    assert info.value.record == 2 and info.value.field == field
    assert info.value.file == "hf:rungalileo/ragbench"


def test_msmarco_row_without_id_or_with_ragged_passages():
    with pytest.raises(InputError, match="missing field"):
        public.msmarco_question({**MSMARCO_ROW, "query_id": None}, "hf", 1)
    ragged = {**MSMARCO_ROW, "passages": {"is_selected": [1], "passage_text": ["a", "b"], "url": []}}
    with pytest.raises(InputError, match="differ in length"):
        public.msmarco_question(ragged, "hf", 1)


MSMARCO_ROW = {
    "query_id": 19699, "query": "what is rba", "query_type": "DESCRIPTION",
    "answers": ["Results-Based Accountability is a disciplined way of thinking."],
    "wellFormedAnswers": [],
    "passages": {"is_selected": [0, 1, 0], "passage_text": ["a", "b", "c"],
                 "url": ["http://x/a", "http://x/b", "http://x/c"]},
}


def test_msmarco_selected_passages_are_gold():
    q = public.msmarco_question(MSMARCO_ROW, "hf", 1)
    assert q.id == "19699" and q.answerable and q.question_type == "DESCRIPTION"
    assert [(g.chunk_id, g.text, g.rel_path) for g in q.gold_passages] == [("19699#p1", "b", "http://x/b")]
    assert len(q.metadata["passages"]) == 3


def test_msmarco_no_answer_present_means_unanswerable():
    q = public.msmarco_question({**MSMARCO_ROW, "answers": ["No Answer Present."]}, "hf", 1)
    assert q.answerable is False and q.answers == [] and q.ground_truth is None


def test_msmarco_well_formed_answers_come_first():
    q = public.msmarco_question({**MSMARCO_ROW, "wellFormedAnswers": ["RBA is a way of thinking."]}, "hf", 1)
    assert q.answers[0] == "RBA is a way of thinking." and len(q.answers) == 2


def _annotation(**kw):
    base = {"unanswerable": False, "extractive_spans": [], "yes_no": None, "free_form_answer": "",
            "evidence": [], "highlighted_evidence": []}
    return {**base, **kw}


QASPER_ROW = {
    "id": "1909.00694", "title": "A paper", "abstract": "...",
    "full_text": {"section_name": ["Introduction", "Method"],
                  "paragraphs": [["Intro paragraph."], ["We use BERT.", "We train 3 epochs."]]},
    "qas": {
        "question": ["What model is used?", "What is the budget?", "Is it open source?"],
        "question_id": ["q1", "q2", "q3"],
        "answers": [
            {"answer": [_annotation(extractive_spans=["BERT"], evidence=["We use BERT."]),
                        _annotation(free_form_answer="A BERT model",
                                    evidence=["We use BERT.", "FLOAT SELECTED: Table 1"])],
             "annotation_id": ["a1", "a2"], "worker_id": ["w1", "w2"]},
            {"answer": [_annotation(unanswerable=True), _annotation(unanswerable=True)],
             "annotation_id": ["a3", "a4"], "worker_id": ["w1", "w2"]},
            {"answer": [_annotation(yes_no=False, evidence=["Unknown paragraph."])],
             "annotation_id": ["a5"], "worker_id": ["w3"]},
        ],
    },
}


def test_qasper_paper_row_yields_its_questions():
    q1, q2, q3 = public.questions_from_rows("qasper", [QASPER_ROW])
    assert q1.id == "q1" and q1.answers == ["BERT", "A BERT model"] and q1.answerable
    assert [(g.text, g.section) for g in q1.gold_passages] == [("We use BERT.", "Method")]
    assert q2.answerable is False and q2.answers == [] and q2.gold_passages == []
    assert q3.ground_truth == "No" and q3.gold_passages[0].section is None
    assert q1.category == "A paper" and q1.metadata["paper_id"] == "1909.00694"


def test_missing_library_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(EvalcoreError, match=r"pip install 'evalcore\[datasets\]'") as info:
        PUBLIC_SETS["squad_v2"].load(limit=5)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def _fake_datasets(monkeypatch, behaviour):
    module = types.ModuleType("datasets")
    module.load_dataset = behaviour
    monkeypatch.setitem(sys.modules, "datasets", module)


def test_offline_is_a_clear_error(monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'rajpurkar/squad_v2' on the Hub (LocalEntryNotFoundError)\nmore")

    _fake_datasets(monkeypatch, offline)
    with pytest.raises(EvalcoreError) as info:
        PUBLIC_SETS["squad_v2"].load()
    message = str(info.value)
    assert "'squad_v2'" in message and "rajpurkar/squad_v2" in message and "offline" in message
    assert "ConnectionError: Couldn't reach" in message and "\n" not in message
    assert info.value.__cause__ is None


def test_limit_streams_only_the_rows_asked_for(monkeypatch):
    calls = []

    def fake_load(repo, config, split, streaming=False):
        calls.append((repo, config, split, streaming))
        return iter([dict(MSMARCO_ROW, query_id=i) for i in range(100)])

    _fake_datasets(monkeypatch, fake_load)
    questions = PUBLIC_SETS["msmarco"].load(limit=3)
    assert [q.id for q in questions] == ["0", "1", "2"]
    assert calls == [("microsoft/ms_marco", "v2.1", "validation", True)]


def test_unknown_public_set():
    with pytest.raises(EvalcoreError, match="unknown public set 'nq'"):
        public.load_public("nq")


def test_real_library_offline_gives_the_clear_error(monkeypatch, tmp_path):
    """The real library, offline, with an empty cache so a user's cached copy cannot answer.

    Both libraries read these variables once, at import, and `datasets` is often imported already
    (sentence-transformers imports it), so the module constants are set as well; otherwise the
    load would go to the network (slow, and with network it would succeed).
    """
    datasets = requires("datasets", "the Hugging Face library")
    import huggingface_hub.constants

    home = tmp_path / "hf_home"
    for key, value in {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": home,
                       "HF_HUB_CACHE": home / "hub", "HF_DATASETS_CACHE": home / "datasets"}.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", home / "datasets")
    with pytest.raises(EvalcoreError, match="could not load public set"):
        PUBLIC_SETS["hotpotqa"].load(limit=1)
