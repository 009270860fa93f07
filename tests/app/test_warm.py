"""ui/warm.py: the dashboard process loads the pages' imports once, in the background."""

from __future__ import annotations

import importlib.util
import threading

from evalcore.ui import warm


def test_every_module_it_warms_exists():
    missing = [m for m in warm.MODULES if importlib.util.find_spec(m) is None]
    assert not missing, f"warm.MODULES names modules that do not exist: {missing}"


def test_it_starts_one_thread_per_process(monkeypatch):
    calls = []
    done = threading.Event()
    monkeypatch.setattr(warm, "_started", threading.Event())
    monkeypatch.setattr(warm, "_load", lambda: (calls.append(1), done.set()))
    assert warm.start() is True
    assert warm.start() is False
    assert done.wait(10)
    assert calls == [1]
