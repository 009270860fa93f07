"""Launch offers the methods a server lists in /models/info (issue 24, item 6), asked through
the run's own target client, bounded in time, never raising into the page."""

from __future__ import annotations

import socket
import threading

import pytest

from evalcore.targets.offered import methods_in_info, offered_methods


@pytest.fixture
def demo_url():
    from evalcore.demo.server import start_in_thread

    server = start_in_thread(0)
    yield server.url
    server.shutdown()
    server.server_close()


def test_the_demo_servers_methods_are_offered(demo_url):
    offer = offered_methods(demo_url)
    assert offer.methods == ["basic_search", "local_search", "llm_with_context"], offer.note
    assert "offers 3 methods" in offer.note


@pytest.mark.parametrize("info, names", [
    ({"methods": {"a": {}, "b": {}}}, ["a", "b"]),
    ({"methods": ["a", "b", "a"]}, ["a", "b"]),
    ({"available_methods": [{"name": "x"}, {"id": "y"}]}, ["x"]),
    ({"methods": ["ok", "", "a,b", "x" * 101, 3, "line\nbreak"]}, ["ok"]),
    ({"llm": "m"}, []), (["a"], []), (None, []),
])
def test_method_names_are_read_from_the_common_shapes(info, names):
    assert methods_in_info(info) == names


def test_a_silent_server_gives_a_note_not_a_hang():
    with socket.socket() as listener:  # accepts the connection, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        held: list[socket.socket] = []
        accept = threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True)
        accept.start()
        offer = offered_methods(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.5)
        for conn in held:
            conn.close()
    assert offer.methods == [] and "did not answer /models/info within 0.5 s" in offer.note


def test_a_bad_or_closed_url_gives_a_note():
    assert "must start with http" in offered_methods("ftp://127.0.0.1:1").note
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    offer = offered_methods(f"http://127.0.0.1:{port}", timeout_s=2)
    assert offer.methods == [] and offer.note and "Traceback" not in offer.note


def test_a_url_with_credentials_is_not_echoed():
    offer = offered_methods("http://user:s3cret@127.0.0.1:1", timeout_s=1)
    assert "s3cret" not in offer.note
