"""LLMClient against ScriptedLLM: real HTTP on loopback, the real openai SDK.

Backoff sleeps are injected, so retries run instantly and the tests assert the exact
delay the client chose rather than timing anything.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from sleuth.errors import (
    ConfigError,
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMUnavailableError,
    LLMUnreachableError,
    SleuthError,
)
from sleuth.llm.client import LLMClient, LLMReply, parse_retry_after
from sleuth.llm.config import (
    DEFAULT_OPENAI_MODEL,
    LLMConfig,
    detect_ollama,
    ollama_config,
    ollama_url,
    resolve_config,
)
from sleuth.progress import Event
from sleuth.settings import load_settings
from sleuth.testing.llm import ScriptedLLM

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is OAuth?"}]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM.serve(models=["first-model", "second-model"]) as server:
        yield server


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def client_for(
    llm: ScriptedLLM,
    *,
    sleeps: Sleeps | None = None,
    rand: float = 0.0,
    events: list[Event] | None = None,
    **config: Any,
) -> LLMClient:
    settings: dict[str, Any] = {"base_url": llm.base_url, "model": "test-model", **config}
    return LLMClient(
        LLMConfig(**settings),
        sleep=sleeps or Sleeps(),
        rand=lambda: rand,
        progress=(events.append if events is not None else lambda e: None),
    )


async def test_plain_reply_and_usage_counted(llm: ScriptedLLM) -> None:
    llm.add("OAuth is an authorization framework.", usage=(12, 6))
    async with client_for(llm) as client:
        reply = await client.chat(USER, stage="plan")
    assert reply.text == "OAuth is an authorization framework."
    assert (reply.prompt_tokens, reply.completion_tokens) == (12, 6)
    assert reply.finish_reason == "stop" and not reply.estimated and not reply.cached
    usage = client.usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 12, 6)
    assert usage.by_model["test-model"].calls == 1
    assert usage.by_stage["plan"].completion_tokens == 6
    assert usage.retries == usage.failures == 0
    assert llm.requests[0].messages == USER


async def test_cost_estimated_for_priced_models_only(llm: ScriptedLLM) -> None:
    llm.add("a", usage=(1_000_000, 100_000), model="gpt-4o-mini")
    llm.add("b", usage=(10, 10), model="my-local-model")
    async with client_for(llm) as client:
        await client.chat(USER, stage="plan", model="gpt-4o-mini")
        assert client.usage.cost_usd == pytest.approx(0.15 + 0.06)
        assert client.usage.cost_complete
        await client.chat(USER, stage="plan", model="my-local-model")
    assert client.usage.cost_usd == pytest.approx(0.21)
    assert not client.usage.cost_complete
    assert client.usage.to_dict()["by_model"]["my-local-model"]["cost_usd"] is None


async def test_429_honours_retry_after_then_succeeds(llm: ScriptedLLM) -> None:
    llm.fail(429, message="Rate limit reached", retry_after=7)
    llm.add("after the wait")
    sleeps, events = Sleeps(), list[Event]()
    async with client_for(llm, sleeps=sleeps, events=events) as client:
        reply = await client.chat(USER, stage="summarize")
    assert reply.text == "after the wait"
    assert len(llm.requests) == 2
    assert sleeps.delays == [7.0]
    assert client.usage.retries == 1 and client.usage.failures == 0
    assert events and events[0].data["delay_s"] == 7.0 and events[0].data["status"] == 429


async def test_retry_after_as_http_date(llm: ScriptedLLM) -> None:
    now = 1_700_000_000.0
    llm.fail(429, retry_after=email.utils.formatdate(now + 12, usegmt=True))
    llm.add("ok")
    sleeps = Sleeps()
    client = client_for(llm, sleeps=sleeps)
    client._clock = lambda: now  # the date is read against the injected clock
    async with client:
        await client.chat(USER, stage="plan")
    assert sleeps.delays == [12.0]


async def test_retry_after_is_capped(llm: ScriptedLLM) -> None:
    llm.fail(429, retry_after=3600)
    llm.add("ok")
    sleeps = Sleeps()
    async with client_for(llm, sleeps=sleeps, retry_after_cap=20) as client:
        await client.chat(USER, stage="plan")
    assert sleeps.delays == [20.0]


async def test_500_is_retried_with_backoff(llm: ScriptedLLM) -> None:
    llm.fail(500, times=2)
    llm.add("recovered")
    sleeps = Sleeps()
    async with client_for(llm, sleeps=sleeps, rand=1.0, backoff_base=1.5) as client:
        reply = await client.chat(USER, stage="report")
    assert reply.text == "recovered"
    assert len(llm.requests) == 3
    assert sleeps.delays == [1.5, 3.0]  # base·2^attempt, full jitter factor with rand=1


def test_backoff_is_exponential_jittered_and_capped() -> None:
    config = LLMConfig(model="m", backoff_base=1.0, backoff_cap=10.0)
    high = LLMClient(config, rand=lambda: 1.0)
    low = LLMClient(config, rand=lambda: 0.0)
    assert [high.retry_delay(n) for n in range(6)] == [1, 2, 4, 8, 10, 10]
    assert [low.retry_delay(n) for n in range(4)] == [0.5, 1, 2, 4]  # never below half


async def test_gives_up_after_max_retries(llm: ScriptedLLM) -> None:
    llm.fail(503, message="overloaded", times=None)
    sleeps = Sleeps()
    async with client_for(llm, sleeps=sleeps, max_retries=2) as client:
        with pytest.raises(LLMUnavailableError, match="gave up after 3 attempts") as info:
            await client.chat(USER, stage="plan")
    assert info.value.status == 503 and info.value.retryable
    assert len(llm.requests) == 3 and len(sleeps.delays) == 2
    assert client.usage.failures == 1 and client.usage.retries == 2 and client.usage.calls == 0


async def test_context_overflow_is_not_retried(llm: ScriptedLLM) -> None:
    llm.fail(
        400,
        message="This model's maximum context length is 8192 tokens. However, "
        "your messages resulted in 9000 tokens.",
    )
    sleeps = Sleeps()
    async with client_for(llm, sleeps=sleeps) as client:
        with pytest.raises(ContextOverflowError, match="maximum context length") as info:
            await client.chat(USER, stage="summarize")
    assert isinstance(info.value, SleuthError) and info.value.status == 400
    assert len(llm.requests) == 1 and sleeps.delays == []


async def test_other_400_is_a_plain_llm_error(llm: ScriptedLLM) -> None:
    llm.fail(400, message="temperature must be between 0 and 2")
    async with client_for(llm) as client:
        with pytest.raises(LLMError) as info:
            await client.chat(USER, stage="plan")
    assert type(info.value) is LLMError and len(llm.requests) == 1


async def test_401_is_an_auth_error_without_the_key(llm: ScriptedLLM) -> None:
    llm.fail(401, message="Incorrect API key provided: sk-secret-123")
    async with client_for(llm, api_key="sk-secret-123") as client:
        with pytest.raises(LLMAuthError) as info:
            await client.chat(USER, stage="plan")
    assert "sk-secret-123" not in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert len(llm.requests) == 1
    assert llm.requests[0].headers["authorization"] == "Bearer sk-secret-123"


async def test_404_is_not_retried(llm: ScriptedLLM) -> None:
    llm.fail(404, message="model 'nope' not found")
    async with client_for(llm) as client:
        with pytest.raises(LLMError, match="404"):
            await client.chat(USER, stage="plan")
    assert len(llm.requests) == 1


async def test_a_refused_connection_is_not_retried_and_says_so_in_one_line() -> None:
    """Nothing listens there: asking again in a second will not change that (a 503 may)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps = Sleeps()
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=4)
    async with LLMClient(config, sleep=sleeps) as client:
        with pytest.raises(LLMUnreachableError) as caught:
            await client.chat(USER, stage="plan")
    assert sleeps.delays == [] and client.usage.retries == 0
    message = str(caught.value)
    assert "\n" not in message
    assert f"cannot reach the LLM server at http://127.0.0.1:{port}/v1" in message
    assert "connection refused" in message
    assert isinstance(caught.value, LLMUnavailableError)  # callers that catch that still do


async def test_a_connection_dropped_by_the_server_is_retried() -> None:
    """A server that is there but hangs up mid-request may answer the next time."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    stop = threading.Event()

    def hang_up() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.recv(65536)
            conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    sleeps = Sleeps()
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1)
    try:
        async with LLMClient(config, sleep=sleeps) as client:
            with pytest.raises(LLMUnavailableError, match="could not connect"):
                await client.chat(USER, stage="plan")
    finally:
        stop.set()
        thread.join(5)
        server.close()
    assert len(sleeps.delays) == 1


async def test_timeout_is_unavailable(llm: ScriptedLLM) -> None:
    llm.add("too late", delay=1.0)
    async with client_for(llm, timeout=0.1, max_retries=0) as client:
        with pytest.raises(LLMUnavailableError, match=r"did not answer within 0\.1 s"):
            await client.chat(USER, stage="plan")


async def test_missing_usage_is_estimated(llm: ScriptedLLM) -> None:
    llm.add("An answer of several words.", usage=False)
    async with client_for(llm) as client:
        reply = await client.chat(USER, stage="merge")
    assert reply.estimated
    assert reply.prompt_tokens >= 4 and reply.completion_tokens >= 5
    assert client.usage.estimated_calls == 1
    assert client.usage.prompt_tokens == reply.prompt_tokens


async def test_stage_models_reach_the_endpoint(llm: ScriptedLLM) -> None:
    llm.add(lambda body: f"served by {body['model']}", times=None)
    client = client_for(
        llm, model="base", plan_model="planner", summary_model="reader", report_model="writer"
    )
    stages = ["plan", "refine", "select", "summarize", "merge", "verify", "report", "other"]
    async with client:
        replies = [await client.chat(USER, stage=s) for s in stages]
        explicit = await client.chat(USER, stage="plan", model="chosen")
    sent = [r.model for r in llm.requests]
    assert sent == [
        "planner",
        "planner",
        "planner",
        "reader",
        "reader",
        "reader",
        "writer",
        "base",
        "chosen",
    ]
    assert replies[6].text == "served by writer" and explicit.model == "chosen"
    assert set(client.usage.by_stage) == set(stages)


async def test_model_comes_from_the_server_when_not_configured(llm: ScriptedLLM) -> None:
    llm.add("hi")
    async with LLMClient(LLMConfig(base_url=llm.base_url), sleep=Sleeps()) as client:
        await client.chat(USER, stage="plan")
    assert llm.requests[0].model == "first-model"
    assert llm.requests[0].headers["authorization"] == "Bearer not-needed"  # keyless


async def test_no_model_anywhere_is_a_config_error(llm: ScriptedLLM) -> None:
    llm.models.clear()
    async with LLMClient(LLMConfig(base_url=llm.base_url), sleep=Sleeps()) as client:
        with pytest.raises(ConfigError, match="lists no models"):
            await client.chat(USER, stage="plan")


async def test_concurrency_limit_is_respected(llm: ScriptedLLM) -> None:
    # Each request is held 0.2 s at the server, so unlimited calls would all overlap.
    llm.add("slow", delay=0.2, times=None)
    async with client_for(llm, max_concurrency=2) as client:
        await asyncio.gather(*(client.chat(USER, stage="summarize") for _ in range(6)))
    assert len(llm.requests) == 6
    assert llm.max_in_flight == 2


async def test_by_default_eight_calls_are_in_flight_at_once(llm: ScriptedLLM) -> None:
    # A run's page summaries and follow-up selects arrive together: at 4 in flight, a
    # summary on the critical path queued behind the others (bench: wall 1.25x the
    # critical path on one seed, 1.05-1.08x at 8).
    llm.add("slow", delay=0.3, times=None)
    async with client_for(llm) as client:
        await asyncio.gather(*(client.chat(USER, stage="summarize") for _ in range(10)))
    assert llm.max_in_flight == 8


async def test_replies_are_served_from_a_cache(llm: ScriptedLLM) -> None:
    class DictCache:
        def __init__(self) -> None:
            self.data: dict[str, LLMReply] = {}

        def get(self, key: str) -> LLMReply | None:
            return self.data.get(key)

        def put(self, key: str, reply: LLMReply) -> None:
            self.data[key] = reply

    llm.add("fresh answer")
    cache = DictCache()
    config = LLMConfig(base_url=llm.base_url, model="m")
    async with LLMClient(config, cache=cache) as client:
        first = await client.chat(USER, stage="plan")
        second = await client.chat(USER, stage="plan")
    assert not first.cached and second.cached and second.text == "fresh answer"
    assert len(llm.requests) == 1
    assert client.usage.calls == 1 and client.usage.cached_calls == 1


async def test_unknown_model_window_is_announced_once(llm: ScriptedLLM) -> None:
    events: list[Event] = []
    client = client_for(llm, events=events, model="my-finetune")
    assert client.context_window("plan") == 8192
    assert client.context_window("report") == 8192
    assert [e.data["model"] for e in events] == ["my-finetune"]
    assert client_for(llm, model="my-finetune", context_window=32000).context_window("x") == 32000
    await client.aclose()


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert (
        parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
        == 10.0
    )
    assert (
        parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412490.0) == 0.0
    )
    for junk in (
        {},
        None,
        {"Retry-After": "soon"},
        {"Retry-After": "-3"},
        {"Retry-After": "nan"},
        {"Retry-After": "inf"},
    ):
        assert parse_retry_after(junk) is None


# -- the scripted endpoint itself ---------------------------------------------------


async def test_endpoint_streams_with_the_sdk(llm: ScriptedLLM) -> None:
    llm.add("Streaming works in several small pieces.", usage=(7, 6))
    llm.add("No usage chunk here.")
    sdk = openai.AsyncOpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    async with sdk:
        stream = await sdk.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        plain = await sdk.chat.completions.create(model="m", messages=USER, stream=True)
        plain_chunks = [chunk async for chunk in plain]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming works in several small pieces."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 7
    assert all(c.usage is None for c in plain_chunks)
    assert [r.stream for r in llm.requests] == [True, True]


async def test_endpoint_matches_rules_and_reports_exhaustion(llm: ScriptedLLM) -> None:
    llm.add("for the planner", contains="search queries", times=None)
    llm.add("for small", model="small")
    sdk = openai.AsyncOpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    async with sdk:

        async def ask(model: str, content: str) -> str:
            reply = await sdk.chat.completions.create(
                model=model, messages=[{"role": "user", "content": content}], stream=False
            )
            return reply.choices[0].message.content or ""

        assert await ask("small", "write search queries") == "for the planner"
        assert await ask("small", "anything") == "for small"
        assert await ask("big", "more search queries please") == "for the planner"
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            await ask("small", "anything")
        listed = await sdk.models.list()
    assert [m.id for m in listed.data] == ["first-model", "second-model"]
    assert len(llm.unmatched) == 1 and llm.remaining == 0
    assert [r.model for r in llm.requests] == ["small", "small", "big", "small"]


# -- configuration ----------------------------------------------------------------


def test_resolve_config_from_env_and_settings() -> None:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1/",
        "SLEUTH_MODEL": "qwen2.5:7b",
        "SLEUTH_PLAN_MODEL": "small",
        "SLEUTH_REPORT_MODEL": "big",
    }
    # The variables reach the model's configuration through the settings table.
    settings = load_settings({"report_model": "bigger", "timeout": 5.0, "llm_concurrency": 3}, env)
    config = resolve_config(settings, env)
    assert config is not None
    assert config.base_url == "http://127.0.0.1:8000/v1" and config.api_key is None
    assert config.model_for("plan") == "small" and config.model_for("summarize") == "qwen2.5:7b"
    assert config.model_for("report") == "bigger"  # settings win over the environment
    assert config.max_concurrency == 3
    assert config.timeout == 180.0  # Settings' page timeout is not the LLM timeout


def test_resolve_config_needs_a_server() -> None:
    assert resolve_config({}, {}) is None
    assert resolve_config({"model": "gpt-4o"}, {}) is None
    assert resolve_config({"no_llm": True}, {"OPENAI_API_KEY": "sk-x"}) is None
    only_key = resolve_config(None, {"OPENAI_API_KEY": "sk-x"})
    assert only_key is not None and only_key.model == DEFAULT_OPENAI_MODEL
    assert only_key.api_key is not None and "sk-x" not in repr(only_key)
    with pytest.raises(ConfigError, match="base_url"):
        resolve_config({"base_url": "ftp://x"}, {})


def test_ollama_config_uses_ollama_context() -> None:
    config = ollama_config("llama3.1:8b", env={})
    assert config.base_url == "http://127.0.0.1:11434/v1" and config.context_window == 4096
    assert ollama_config("m", env={"OLLAMA_CONTEXT_LENGTH": "16384"}).context_window == 16384


def test_ollama_url_follows_ollama_host() -> None:
    assert ollama_url({}) == "http://127.0.0.1:11434"
    assert ollama_url({"OLLAMA_HOST": "0.0.0.0"}) == "http://127.0.0.1:11434"
    assert ollama_url({"OLLAMA_HOST": "gpu-box:8080"}) == "http://gpu-box:8080"
    assert ollama_url({"OLLAMA_HOST": "https://ollama.example/"}) == "https://ollama.example:443"
    assert ollama_url({"OLLAMA_HOST": "[::1]:9000"}) == "http://[::1]:9000"


async def test_detect_ollama(llm: ScriptedLLM) -> None:
    async with httpx.AsyncClient() as client:
        assert await detect_ollama(client, llm.root_url) == "first-model"
        llm.models.clear()
        assert await detect_ollama(client, llm.root_url) is None
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
        assert await detect_ollama(client, closed) is None

    def answer(request: httpx.Request) -> httpx.Response:
        return {
            "/a/api/tags": httpx.Response(200, text="not json"),
            "/b/api/tags": httpx.Response(500),
            "/c/api/tags": httpx.Response(200, json={"models": "oops"}),
        }[request.url.path]

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as mocked:
        for path in ("a", "b", "c"):
            assert await detect_ollama(mocked, f"http://ollama.test/{path}") is None
