"""What the pages cap so a large run stays quick to draw, and that each cap says so.

The Compare page lists at most CHANGED_SHOWN changed questions (biggest change first) and
says how many more there are, with a search that reaches any of them; the Questions page's
picker lists the questions near the current one, never the whole run. (Speed itself is
measured in bench/bench_app.py, not asserted here.)
"""

from __future__ import annotations

from evalcore.analysis.comparison import compare as C
from evalcore.ui import compare as compare_page
from evalcore.ui.questions import picker_window
from tests.app.test_pages import synthetic_runs, texts


def test_compare_lists_at_most_n_changed_questions_and_says_how_many_more(make_app, app_store, monkeypatch):
    a, b = synthetic_runs(app_store)
    base, cand = f"{a}:local_search", f"{b}:local_search"
    every = C.changed_questions(app_store, base, cand, "token_f1", "improved")
    assert len(every) > 3, "the fixture needs a few improved questions"
    monkeypatch.setattr(compare_page, "CHANGED_SHOWN", 3)
    at = make_app("compare", sys=[base, cand], cm="token_f1", out="improved")
    assert not at.exception
    listed = next(d.value for d in at.dataframe if "delta" in d.value.columns and "question_id" in d.value.columns)
    assert list(listed.question_id) == list(every.question_id[:3])  # the biggest changes first
    assert f"{len(every)} questions improved on token_f1 · the 3 biggest changes shown, {len(every) - 3} more: " \
           "search by id or text" in texts(at)
    assert at.selectbox(key="url_cq").options == list(every.question_id[:3])
    # the search reaches a question beyond the first three
    target = every.question_id.iloc[-1]
    at.text_input(key="url_cqs").input(target).run()
    assert not at.exception
    listed = next(d.value for d in at.dataframe if "delta" in d.value.columns and "question_id" in d.value.columns)
    assert list(listed.question_id) == [target]
    assert f"1 questions improved on token_f1 matching {target!r}" in texts(at)


def test_changed_count_matches_the_uncapped_list(app_store):
    a, b = synthetic_runs(app_store)
    base, cand = f"{a}:local_search", f"{b}:local_search"
    for outcome in ("improved", "regressed", "unchanged", "missing"):
        every = C.changed_questions(app_store, base, cand, "token_f1", outcome)
        assert C.changed_count(app_store, base, cand, "token_f1", outcome) == len(every)
        assert C.changed_questions(app_store, base, cand, "token_f1", outcome, limit=2).equals(every.head(2))


def test_question_picker_lists_the_neighbourhood_not_the_whole_run():
    assert picker_window(0, 24) == range(0, 24)  # a small run: every question
    assert picker_window(0, 100_000) == range(0, 201)
    around = picker_window(50_000, 100_000)
    assert len(around) == 201 and around[0] == 49_900 and 50_000 in around
    end = picker_window(99_999, 100_000)
    assert len(end) == 201 and end[-1] == 99_999


def test_a_diagnosis_lists_at_most_n_questions_and_says_how_many_more(make_app, app_store, monkeypatch):
    from evalcore.analysis.questions import failure_modes as FM
    from evalcore.ui import diagnosis

    a, b = synthetic_runs(app_store)
    keys = (f"{a}:basic_search", f"{a}:local_search")
    bucket = next(x for x in FM.BUCKETS if x != "correct" and FM.bucket_questions(app_store, keys[0], x)[0] > 2)
    every = FM.bucket_questions(app_store, keys[0], bucket)[1]
    # the list the page shows: how many, and the first of them in order
    assert FM.bucket_questions(app_store, keys[0], bucket, 2) == (len(every), every[:2])
    assert FM.bucket_questions(app_store, keys[0], bucket, 2, keys) == (len(every), every[:2])
    monkeypatch.setattr(diagnosis, "BUCKET_SHOWN", 2)
    at = make_app("compare", sys=list(keys), fs=keys[0], fm=bucket)
    assert not at.exception
    listed = next(d.value for d in at.dataframe if list(d.value.columns) == ["question_id", "open"])
    assert list(listed.question_id) == every[:2]
    assert (f"{len(every)} questions: {bucket} · the first 2 listed, {len(every) - 2} more "
            "(filter them on the Questions page)") in texts(at)
