"""common/frozen_heap.py: a live run keeps the objects alive at its start out of the
collector's full passes, and hands them back when it ends, whatever the ending."""

from __future__ import annotations

import gc

import pytest

from evalcore.common.frozen_heap import frozen_heap


@pytest.fixture(autouse=True)
def _nothing_frozen():
    import evalcore.common.frozen_heap as module

    gc.unfreeze()
    yield
    gc.unfreeze()
    module._blocks, module._froze = 0, False


def test_objects_alive_at_the_start_are_frozen_then_handed_back():
    kept = [object() for _ in range(10)]
    with frozen_heap():
        assert gc.get_freeze_count() >= len(kept)
    assert gc.get_freeze_count() == 0


def test_handed_back_after_an_error_too():
    with pytest.raises(KeyboardInterrupt):
        with frozen_heap():
            raise KeyboardInterrupt
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_on_its_own_is_left_as_it_is(monkeypatch):
    """(Not the count compared before and after: a frozen object freed meanwhile, by another
    thread of the test process, lowers it; CI saw 1767451 against 1767453.)"""
    calls = []
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with frozen_heap():
            pass
        assert calls == []  # its own freeze is neither redone nor undone
        monkeypatch.undo()
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_disabled_collector_is_left_as_it_is():
    gc.disable()
    try:
        with frozen_heap():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_block_inside_another_does_not_count_the_frozen_objects(monkeypatch):
    """gc.get_freeze_count() walks every frozen object (ms for a live run's heap): the block the
    run's asking opens inside the run's own asks our count instead, and undoes nothing."""
    with frozen_heap():
        frozen = gc.get_freeze_count()
        calls = []
        monkeypatch.setattr(gc, "get_freeze_count", lambda: calls.append("count") or frozen)
        monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
        with frozen_heap():
            pass
        assert calls == []
        monkeypatch.undo()
        assert gc.get_freeze_count() > 0  # still frozen for the rest of the outer block
    assert gc.get_freeze_count() == 0


def test_the_heap_is_handed_back_when_the_last_of_overlapping_blocks_ends():
    """Blocks in two threads that overlap: the heap stays frozen until both have ended, and a
    block started afterwards freezes it again."""
    import threading

    inner_started, outer_done = threading.Event(), threading.Event()

    def other() -> None:
        with frozen_heap():
            inner_started.set()
            outer_done.wait(5)

    with frozen_heap():
        thread = threading.Thread(target=other)
        thread.start()
        inner_started.wait(5)
    assert gc.get_freeze_count() > 0  # the other thread's block still runs
    outer_done.set()
    thread.join(5)
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_block_interrupted_right_after_freezing_is_taken_over_by_the_next():
    """Ctrl-C between the freeze and the count (a hostile review's signal storm): the heap
    stays frozen with no block running; the next block takes it over and hands it back."""
    import evalcore.common.frozen_heap as module

    gc.freeze()
    module._froze = True  # what that Ctrl-C leaves
    with frozen_heap():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0 and module._froze is False
