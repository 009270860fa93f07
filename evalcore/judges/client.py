"""The one judge client every judged metric goes through.

Responsibilities, in the order a request meets them:
1. render the task's versioned prompt (data fenced) and build the full request dict;
2. content-addressed cache lookup (a hit makes no call and costs nothing); a cached entry is
   used only if it still parses and passes its task's check (an older evalcore cached every
   reply, bad ones too);
3. bounded concurrency (an asyncio semaphore shared by all requests of a batch);
4. retry with exponential backoff and jitter on 429 / 5xx / timeouts, honouring Retry-After;
5. token usage checked (usage.py: missing -> estimated, impossible -> a malformed reply) and
   priced (evalcore.judges.pricing: an unpriced model's cost is NaN, unknown, never 0);
6. strict JSON parsing + validation, with exactly one repair request on a bad reply; only a
   reply that parsed and passed the check enters the cache, so a judge that answered badly
   once is asked again on the next pass;
7. every HTTP request (or cache hit) becomes a JudgeCall row with the full request and raw
   reply, so a verdict can be audited or re-judged later.
Failures never raise into metric code: an Outcome carries either an output or an error
string, and the metric turns an error into a NaN score with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from typing import Any, Callable

from evalcore.judges import usage
from evalcore.judges.backends import FatalError, TransientError
from evalcore.judges.base import Judge, JudgeTask, Outcome, run_sync
from evalcore.judges.cache import JudgeCache, request_key
from evalcore.judges.parsing import ParseError, parse_reply
from evalcore.judges.prompts import render
from evalcore.judges.tasks import REPAIR_VERSION, PartsError, TaskDef, get_task
from evalcore.judges.pricing import load_prices, token_cost
from evalcore.schemas import JudgeCall, JudgeId
from evalcore.common.secret_urls import public_url

# Judge, JudgeTask, Outcome and run_sync live in base.py; importers of this module keep them
__all__ = ["Judge", "JudgeTask", "LLMJudge", "Outcome", "repeat_key", "run_sync"]


def repeat_key(request: dict[str, Any], repeat: int = 0) -> str:
    """The cache key of the `repeat`-th independent verdict on `request` (`score --repeats K`).

    Repeat 0 is the request's own key, as it always was: every cache filled before repeats
    existed stays valid, and a pass with K = 3 replays a K = 1 pass's replies as its repeat 0.
    Repeat r >= 1 sends the same request but is cached under a key of its own, so the K
    verdicts are K calls made once and replayed after, never one reply read K times."""
    return request_key(request) if not repeat else request_key({"repeat": int(repeat), "request": request})


class _SdkSession:
    def __init__(self, backend: Any):
        self.backend = backend
        self.client: Any = None

    async def __aenter__(self) -> Any:
        self.client = self.backend.open()
        return self.client

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.close()


class LLMJudge(Judge):
    """A real model behind an official SDK backend (see backends.py)."""

    def __init__(self, backend: Any, cache: JudgeCache, prices: dict | None = None, concurrency: int = 8,
                 max_attempts: int = 5, backoff_base: float = 0.5, max_wait: float = 60.0,
                 structured: bool = True):
        super().__init__(concurrency)
        # ask for replies constrained to each task's JSON schema (structured outputs); a model
        # that refuses is learnt by the backend and gets free text with the repair path
        self.structured = structured
        self.backend = backend
        self.provider = backend.provider
        self.model = backend.model
        self.cache = cache
        self.prices = load_prices(prices)
        self.max_attempts = max(1, max_attempts)
        self.backoff_base = backoff_base
        self.max_wait = max_wait
        # A provider (or a proxy in front of it) may echo the key in an error body or a reply;
        # what is stored, cached or parsed is scrubbed of it first.
        self._secrets = sorted((v for v in backend.secrets() if len(v) >= 6), key=len, reverse=True) \
            if hasattr(backend, "secrets") else []
        # requests being sent right now, per event loop: identical ones wait for the first
        self._inflight: dict[tuple[int, str], asyncio.Future] = {}

    @property
    def temperature(self) -> float | None:  # type: ignore[override]
        """Read from the backend each time: a backend may learn that its server refuses a
        temperature (OpenAIBackend), and judge ids made after that must say None."""
        return self.backend.temperature

    def sample(self) -> None:
        """Independent samples from now on (the backend's `sample`: a temperature > 0 where the
        provider takes one; the judge ids made after this record it)."""
        self.backend.sample()

    def _scrub(self, text: str | None, limit: int | None = None) -> str | None:
        for secret in self._secrets:
            if text:
                text = text.replace(secret, "[redacted]")
        return text[:limit] if text and limit else text

    def _session(self) -> Any:
        return _SdkSession(self.backend)

    def preload(self) -> None:
        import importlib

        importlib.import_module(self.backend.provider)  # "anthropic" / "openai": the SDK's module

    def request_for(self, system: str, messages: list[dict], max_tokens: int,
                    task: str | None = None, parts: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The full, replayable request (no headers, no key): what the cache key hashes.
        With `task` and structured outputs on, it carries the task's reply schema (of a
        combined task's named `parts` only, for their repair)."""
        base_url = public_url(self.backend.base_url) if self.backend.base_url else None
        schema = get_task(task).schema(parts) if task and self.structured else None
        params = self.backend.params(system, messages, max_tokens, schema=schema, name=task or "reply") \
            if schema is not None else self.backend.params(system, messages, max_tokens)
        return {"provider": self.provider, "model": self.model, "base_url": base_url, "params": params}

    def answered_from_cache(self, task: str, inputs: dict[str, Any], repeat: int = 0) -> bool:
        """Whether a pass would answer this request (its `repeat`-th verdict) from the cache: an
        entry exists and passes the same checks as at use (for `--dry-run`, which counts such
        calls free)."""
        p = get_task(task).prompt(inputs)
        request = self.request_for(p.system, [{"role": "user", "content": p.user}], p.max_tokens, task=task)
        entry = self.cache.get(repeat_key(request, repeat))
        return self._usable(entry, request, lambda text: parse_reply(task, text, inputs), {}) is not None

    async def _run_one(self, t: JudgeTask, client: Any, sem: asyncio.Semaphore) -> Outcome:
        """Ask once; when the reply does not parse, ask once more with the problem named. A
        combined task's reply that is usable in part keeps those parts and the repair asks for
        the others only (their keys, and their schema with structured outputs)."""
        jid = self.judge_id(t.task)
        defn = get_task(t.task)
        prompt = defn.prompt(t.inputs)
        messages = [{"role": "user", "content": prompt.user}]
        purpose = t.purpose or t.task
        text, out, err, problem, live = await self._ask_and_parse(
            t, jid, prompt.system, messages, prompt.max_tokens, client, sem, purpose, "unparseable reply")
        if err is not None:
            return Outcome(None, f"judge call failed: {err}", jid, live)
        if out is not None:
            return Outcome(out, None, jid, live)
        kept, parts = (problem.kept, tuple(problem.failed)) if isinstance(problem, PartsError) else ({}, None)
        repair = render("repair_parts", {}, REPAIR_VERSION, plain={"problem": str(problem),
                                                                   "keys": ", ".join(defn.part_keys(parts))}) \
            if parts else render("repair", {}, REPAIR_VERSION, plain={"problem": str(problem)})
        messages2 = messages + [{"role": "assistant", "content": text or "(empty)"},
                                {"role": "user", "content": repair.user}]
        _, out2, err2, problem2, live2 = await self._ask_and_parse(
            t, jid, prompt.system, messages2, prompt.max_tokens, client, sem, purpose + ":repair",
            "unparseable reply after repair", parts=parts)
        return _after_repair(defn, Outcome(None, None, jid, live + live2), kept, problem, out2, err2, problem2)

    async def _ask_and_parse(self, t: JudgeTask, jid: JudgeId, system: str, messages: list[dict], max_tokens: int,
                             client: Any, sem: asyncio.Semaphore, purpose: str, parse_label: str,
                             parts: tuple[str, ...] | None = None
                             ) -> tuple[str | None, dict | None, str | None, ParseError | None, int]:
        """One request, recorded, and its parse (of the named `parts` only, when given): (reply
        text, output, call error, parse problem, live calls made). Exactly one of output / call
        error / parse problem is set."""

        def check(text: str | None) -> dict:
            return parse_reply(t.task, text, t.inputs, parts)

        text, call, err, out, problem = await self._request(t, jid, system, messages, max_tokens, client, sem,
                                                            purpose, check, parts)
        live = 0 if call.cache_hit else 1
        if err is not None:
            self._record(call)
            return text, None, err, None, live
        if problem is not None:
            call.error = f"{parse_label}: {problem}"
            self._record(call)
            return text, None, None, problem, live
        call.parsed = out
        self._record(call)
        return text, out, None, None, live

    async def _request(self, t: JudgeTask, jid: JudgeId, system: str, messages: list[dict], max_tokens: int,
                       client: Any, sem: asyncio.Semaphore, purpose: str, check: Callable[[str | None], dict],
                       parts: tuple[str, ...] | None = None
                       ) -> tuple[str | None, JudgeCall, str | None, dict | None, ParseError | None]:
        """(reply text, call, call error, output, parse problem) for one request: from the cache,
        from an identical request in flight, or sent. A sent reply is cached only once it
        parsed and passed `check`; a cached or shared one is used only if it passes it too."""
        request = self.request_for(system, messages, max_tokens, task=t.task, parts=parts)
        key = repeat_key(request, t.repeat)
        meta: dict[str, Any] = {"cache_key": key, "task": t.task, "prompt_id": jid.prompt_id,
                                "prompt_version": jid.prompt_version,
                                "output_mode": "schema" if self._schema_sent(request["params"]) else "text"}
        if t.repeat:
            meta["repeat"] = t.repeat
        stored = {**request, "meta": meta}
        call = JudgeCall(run_id=t.run_id, call_key=request_key({"k": key, "m": t.method, "q": t.question_id,
                                                                 "p": purpose})[:40],
                         judge_id=jid, method=t.method, question_id=t.question_id, purpose=purpose, request=stored)
        hit = self._usable(self.cache.get(key), request, check, meta)
        slot = (id(asyncio.get_running_loop()), key)
        while hit is None and slot in self._inflight:
            # The same request is already on its way (e.g. context relevance for two methods
            # that retrieved the same contexts): wait for that reply instead of paying twice.
            # A bad reply is not shared: one of the waiters resends, and the others (who find
            # its request in flight when they wake) wait again for that one.
            hit = self._usable(await asyncio.shield(self._inflight[slot]), request, check, meta)
            if hit is not None:
                meta["shared_in_flight"] = True
        if hit is not None:
            entry, out = hit
            call.cache_hit = True
            call.response_raw = entry["text"]
            call.input_tokens = int(entry.get("input_tokens") or 0)
            call.output_tokens = int(entry.get("output_tokens") or 0)
            self._note_sent(call, request, (entry.get("request") or {}).get("params"),
                            entry.get("params_adapted") or [])
            return entry["text"], call, None, out, None
        leader: asyncio.Future = asyncio.get_running_loop().create_future()
        self._inflight[slot] = leader
        good: dict[str, Any] | None = None
        try:
            text, err, entry = await self._send(request, meta, call, client, sem)
            if err is not None:
                return text, call, err, None, None
            try:
                out = check(text)
            except ParseError as exc:
                return text, call, None, None, exc
            self.cache.put(key, entry)
            good = entry
            return text, call, None, out, None
        finally:
            if self._inflight.get(slot) is leader:
                del self._inflight[slot]
            leader.set_result(good)  # followers get a checked reply, or None to send their own

    @staticmethod
    def _usable(entry: dict[str, Any] | None, request: dict[str, Any], check: Callable[[str | None], dict],
                meta: dict[str, Any]) -> tuple[dict[str, Any], dict] | None:
        """(entry, output) when a cached or shared entry can be used: its reply parses, passes
        the task's check and its usage can be true. Otherwise None (the request is sent), with
        the reason in meta.cache_entry_rejected: older versions cached unchecked replies."""
        if entry is None:
            return None
        try:
            if not isinstance(entry.get("text"), str):
                raise ParseError("no reply text")
            params = (entry.get("request") or {}).get("params") or request["params"]
            usage.checked(params, entry["text"], entry.get("input_tokens"), entry.get("output_tokens"))
            return entry, check(entry["text"])
        except (ParseError, usage.UsageError) as exc:
            meta["cache_entry_rejected"] = str(exc)[:300]
            return None

    async def _send(self, request: dict[str, Any], meta: dict[str, Any], call: JudgeCall, client: Any,
                    sem: asyncio.Semaphore) -> tuple[str | None, str | None, dict[str, Any] | None]:
        """Send one request with retries; (reply text, error, cache entry to write once the
        reply is checked). Fills the call: reply, tokens, cost, latency, retry waits."""
        async with sem, (self.gate() if self.gate is not None else contextlib.nullcontext()):
            waits: list[float] = []
            start = time.perf_counter()
            for attempt in range(1, self.max_attempts + 1):
                try:
                    reply = await self.backend.complete(client, request["params"])
                    break
                except TransientError as exc:
                    if attempt == self.max_attempts:
                        meta["retry_waits"] = waits
                        call.error = f"gave up after {attempt} attempts: {self._scrub(str(exc), 400)}"
                        call.latency_ms = (time.perf_counter() - start) * 1000
                        return None, call.error, None
                    wait = exc.retry_after if exc.retry_after is not None else \
                        self.backoff_base * 2 ** (attempt - 1) * (1 + random.random())
                    wait = min(wait, self.max_wait)
                    waits.append(round(wait, 3))
                    await asyncio.sleep(wait)
                except FatalError as exc:
                    call.error = self._scrub(str(exc), 400)
                    call.latency_ms = (time.perf_counter() - start) * 1000
                    return None, call.error, None
            call.latency_ms = (time.perf_counter() - start) * 1000
        reply.text = self._scrub(reply.text) or ""
        sent = self._note_sent(call, request, reply.sent_params, reply.adapted,
                               [self._scrub(r, 400) or "" for r in reply.rejections])
        meta["retry_waits"] = waits
        meta["stop_reason"] = reply.stop_reason
        meta["served_model"] = reply.model
        call.response_raw = reply.text
        try:
            used = usage.checked(sent["params"], reply.text, reply.input_tokens, reply.output_tokens)
        except usage.UsageError as exc:
            # We were billed something we cannot know: no tokens, an unknown cost, and a
            # reply not to be trusted (no repair, not cached).
            meta["usage"] = "malformed"
            meta["usage_reported"] = {"input_tokens": _plain(reply.input_tokens),
                                      "output_tokens": _plain(reply.output_tokens)}
            call.cost_usd = math.nan
            call.error = f"malformed judge reply: {exc}"
            return reply.text, call.error, None
        cost = token_cost(self.model, used.input_tokens, used.output_tokens, self.prices)
        meta["usage"] = "estimated" if used.estimated else "reported"
        meta["price_known"] = cost is not None
        call.input_tokens, call.output_tokens = used.input_tokens, used.output_tokens
        call.cost_usd = cost if cost is not None else math.nan
        entry = {"request": sent, "text": reply.text, "input_tokens": used.input_tokens,
                 "output_tokens": used.output_tokens, "usage": meta["usage"], "stop_reason": reply.stop_reason,
                 "served_model": reply.model}
        if reply.adapted:
            entry["params_adapted"] = reply.adapted
        return reply.text, None, entry

    @staticmethod
    def _schema_sent(params: dict[str, Any]) -> bool:
        return "output_config" in params or "response_format" in params

    @staticmethod
    def _note_sent(call: JudgeCall, request: dict[str, Any], sent_params: dict[str, Any] | None,
                   adapted: list[str], rejections: list[str] | None = None) -> dict[str, Any]:
        """Make the call's stored request show the parameters that really went out, and return
        that request.

        A backend may send other parameters than the judge built (a server that refuses
        max_tokens or temperature, see backends.OpenAIBackend). The cache key stays the hash of
        the built request (meta.cache_key), so a re-run finds the reply without re-learning;
        `meta.params_adapted` says why the stored params differ from what that key hashes,
        `meta.param_rejections` lists the refused requests this call paid for, and the call's
        judge id records the temperature really sent (None: none was).
        """
        meta = call.request["meta"]
        if rejections:
            meta["param_rejections"] = rejections
        if sent_params is None or sent_params == request["params"]:
            return request
        sent = {**request, "params": sent_params}
        call.request = {**sent, "meta": meta}
        meta["params_adapted"] = list(adapted)
        meta["output_mode"] = "schema" if LLMJudge._schema_sent(sent_params) else "text"
        temperature = sent_params.get("temperature")
        if call.judge_id.temperature != temperature:
            call.judge_id = call.judge_id.model_copy(update={"temperature": temperature})
        return sent


def _after_repair(defn: TaskDef, done: Outcome, kept: dict[str, Any], problem: ParseError,
                  out2: dict | None, err2: str | None, problem2: ParseError | None) -> Outcome:
    """The outcome once the repair reply is in (`done` carries the judge id and live calls).
    `kept`: the first reply's usable parts. What is still unusable after the repair is an
    error of the parts that hold it (Outcome.part_errors), or of the whole when no part is usable."""
    if out2 is not None:
        return Outcome({**kept, **out2}, None, done.judge_id, done.live_calls)
    if isinstance(problem2, PartsError):
        kept = {**kept, **problem2.kept}
        why = {name: f"unparseable judge reply after one repair: {name} part: {msg}"
               for name, msg in problem2.failed.items()}
    else:
        whole = f"unparseable judge reply ({problem}); repair call failed: {err2}" if err2 is not None \
            else f"unparseable judge reply after one repair: {problem2}"
        why = {name: whole for name in (problem.failed if isinstance(problem, PartsError) else ())}
        if not kept:
            return Outcome(None, whole, done.judge_id, done.live_calls)
    if not kept:
        return Outcome(None, "; ".join(why.values()), done.judge_id, done.live_calls)
    errors = {key: msg for name, msg in why.items() for key in defn.part_keys((name,))}
    return Outcome(kept, None, done.judge_id, done.live_calls, errors)


def _plain(value: Any) -> Any:
    """A reported count as JSON can hold it (the SDKs do not validate usage)."""
    return value if value is None or isinstance(value, (int, float, str, bool)) else repr(value)[:100]
