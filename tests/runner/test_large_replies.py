"""One large reply at a time per target (evalcore/targets/fetch.py LargeReplies): a reply whose
body passes LARGE_REPLY_BYTES waits for its target's turn before it grows further and holds it
until parsed; small replies never wait. Eight 32 MB replies at concurrency 8 took 2.1 GB in
`evalcore run` before, 1.1 GB with the turn (docs/reliability.md)."""

from __future__ import annotations

import asyncio

from evalcore.targets import fetch
from evalcore.targets.client import RetryPolicy, TargetClient
from evalcore.targets.spec import TargetSpec
from tests.reliability.servers import ScriptedServer, ok_json

BIG = fetch.LARGE_REPLY_BYTES + 1


def test_a_large_reply_waits_for_the_turn_a_small_one_never_does():
    async def go():
        replies = fetch.LargeReplies()
        first, second = replies.turn(), replies.turn()
        await first.pace(BIG)
        assert first.held
        await asyncio.wait_for(second.pace(BIG - 2), 1)  # still small: no wait
        waiting = asyncio.ensure_future(second.pace(BIG))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the first one is being parsed
        first.release()
        await asyncio.wait_for(waiting, 1)
        assert second.held and not first.held
        second.release()
        first.release()  # a second release of a turn not held changes nothing
        third = replies.turn()
        await asyncio.wait_for(third.pace(BIG), 1)
        third.release()

    asyncio.run(go())


def test_concurrent_large_replies_are_all_answered_and_the_turn_is_given_back():
    text = "x" * (fetch.LARGE_REPLY_BYTES + 1000)
    server = ScriptedServer(lambda r: ok_json({"answer": text if r["body"]["question"] != "small" else "small"})).start()

    async def go():
        async with TargetClient(TargetSpec(url=server.url), timeout_s=30, concurrency=4,
                                retry=RetryPolicy(retries=0)) as client:
            answers = await asyncio.gather(*[client.query(q, f"q{i}", "m", "m", 3)
                                             for i, q in enumerate(["a", "b", "small", "c", "d"])])
            assert not client._large._lock.locked()  # every turn taken was given back
            return answers

    try:
        answers = asyncio.run(go())
    finally:
        server.stop()
    assert [a.error for a in answers] == [None] * 5
    assert [len(a.answer) for a in answers] == [len(text)] * 2 + [5] + [len(text)] * 2


def test_a_large_reply_that_fails_gives_its_turn_back():
    server = ScriptedServer(lambda r: ok_json({"answer": "x" * (2 * fetch.LARGE_REPLY_BYTES)})).start()

    async def go():
        async with TargetClient(TargetSpec(url=server.url), timeout_s=30, concurrency=2, max_response_mb=6,
                                retry=RetryPolicy(retries=0)) as client:
            answers = await asyncio.gather(*[client.query("q", f"q{i}", "m", "m", 3) for i in range(3)])
            assert not client._large._lock.locked()
            return answers

    try:
        answers = asyncio.run(go())
    finally:
        server.stop()
    assert {a.error_kind for a in answers} == {"malformed"}  # over the 6 MB cap, each in its turn
