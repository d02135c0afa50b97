"""The one way sleuth talks to a model: ``LLMClient.chat``.

It wraps ``openai.AsyncOpenAI`` (any OpenAI-compatible server: OpenAI, Ollama, vLLM,
llama.cpp, LM Studio, gateways) with the SDK's own retries off, and adds:

* retries with exponential backoff and jitter on 408/409/429, 5xx, timeouts and
  connection errors, honouring ``Retry-After`` (seconds or HTTP date) up to a cap;
  never on other 4xx, which fail the same way every time;
* one semaphore bounding the calls in flight, whatever the stage;
* an ``LLMUsage`` tally of every call: tokens (estimated, and flagged, when the
  server reports none), per model and per stage, retries, failures, cost when the
  price is known;
* a deadline of ``timeout`` seconds on the whole call, retries and backoff included
  (httpx's own timeout is per read, so a reply dripped a byte at a time would never
  end, and a per-attempt one would let a silent server cost five timeouts), and replies
  capped at :data:`MAX_REPLY_BYTES` (:mod:`sleuth.llm._wire`);
* translation of every SDK error into :mod:`sleuth.errors` at this boundary,
  including what the SDK lets through unwrapped: a reply that is not UTF-8, not
  JSON, nested too deep to parse, or not shaped like a chat completion.

Sleeping, randomness and the clock are injectable, so tests run instantly and can
assert the exact delays chosen.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import openai

from sleuth import timeline
from sleuth._valid import valid_data, valid_text
from sleuth.errors import (
    ConfigError,
    LLMError,
    ParseError,
)
from sleuth.llm._errors import translate
from sleuth.llm._reply import (
    LLMReply,
    LLMUsage,
    Message,
    ModelUsage,
    ReplyCache,
    ToolCall,
    cache_key,
)
from sleuth.llm._stream import TextTeller, read_streamed, refuses_streaming
from sleuth.llm._wire import (
    MAX_REPLY_BYTES,
    UNPARSABLE,
    Completion,
    Misshapen,
    headers_of,
    model_http_client,
    parse_retry_after,
    read_completion,
)
from sleuth.llm.config import LLMConfig
from sleuth.llm.models_table import model_info
from sleuth.llm.tokens import context_window, count_tokens, message_tokens
from sleuth.progress import Event, ProgressCallback, no_progress

__all__ = [
    "MAX_REPLY_BYTES",
    "LLMClient",
    "LLMReply",
    "LLMUsage",
    "ModelUsage",
    "ReplyCache",
    "ToolCall",
    "cache_key",
    "parse_retry_after",
]

_MAX_MESSAGE = 300


class LLMClient:
    """An OpenAI-compatible chat client with retries, a concurrency cap and usage counting.

    Use as ``async with LLMClient(config) as llm: reply = await llm.chat(...)``. One
    client serves a whole run; its ``usage`` holds the run's totals.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        usage: LLMUsage | None = None,
        progress: ProgressCallback = no_progress,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
        cache: ReplyCache | None = None,
        openai_client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.config = config
        self.usage = usage if usage is not None else LLMUsage()
        self.cache = cache
        self._progress = progress
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._server_model: str | None = None
        #: Whether to stream when asked: False once the server refused a streamed request.
        self._streams = True
        self._warned_unknown: set[str] = set()
        key = config.api_key.get_secret_value() if config.api_key else ""
        self._key = key
        # The SDK takes an httpx client (and from 3.x an httpx2 one); its hints name one.
        http: Any = model_http_client(config.timeout)
        # Keyless local servers ignore the header, but the SDK insists on some key.
        self._client = openai_client or openai.AsyncOpenAI(
            base_url=config.base_url or "https://api.openai.com/v1",
            api_key=key or "not-needed",
            max_retries=0,
            timeout=config.timeout,
            http_client=http,
        )

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the underlying HTTP connections."""
        await self._client.close()

    @property
    def server(self) -> str:
        """The API root in use, for messages."""
        return self.config.base_url or "https://api.openai.com/v1"

    def model_for(self, stage: str) -> str:
        """The model ``stage`` uses; ConfigError when none is configured or known yet."""
        model = self.config.model_for(stage) or self._server_model
        if not model:
            raise ConfigError(
                f"no model configured for the LLM at {self.server}; set --model (SLEUTH_MODEL)"
            )
        return model

    def context_window(self, stage: str) -> int:
        """Context window of ``stage``'s model; says so (once) when it is a guess."""
        model = self.model_for(stage)
        if (
            self.config.context_window is None
            and not model_info(model).known
            and model not in self._warned_unknown
        ):
            self._warned_unknown.add(model)
            window = context_window(model)
            self._progress(
                Event(
                    "info",
                    f"model {model!r} is not in sleuth's table; assuming "
                    f"a {window}-token context (set --context-window)",
                    {"model": model, "context_window": window},
                )
            )
        return context_window(model, self.config.context_window)

    async def list_models(self) -> list[str]:
        """The model ids the server lists at ``/models``."""
        try:
            async with asyncio.timeout(self.config.timeout):
                page = await self._client.models.list()
        except (openai.OpenAIError, TimeoutError, *UNPARSABLE) as exc:
            raise self._translate(exc) from None
        data = getattr(page, "data", None)
        if not isinstance(data, list):  # the SDK does not check the shape of the JSON
            raise ParseError(
                f"the LLM server at {self.server} sent a model list sleuth cannot read"
            )
        return [m.id for m in data if isinstance(getattr(m, "id", None), str)]

    async def resolve_model(self) -> str:
        """The default model: configured, or else the first one the server lists."""
        if self.config.model or self._server_model:
            return self.model_for("")
        models = await self.list_models()
        if not models:
            raise ConfigError(f"the LLM server at {self.server} lists no models; set --model")
        self._server_model = models[0]
        return models[0]

    def retry_delay(self, attempt: int, headers: Mapping[str, str] | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1``.

        The server's ``Retry-After`` when given (capped at ``retry_after_cap``), else
        ``backoff_base · 2^attempt`` capped at ``backoff_cap``, with "equal jitter"
        (between half and all of it) so parallel calls do not retry in lockstep.
        """
        hinted = parse_retry_after(headers, now=self._clock())
        if hinted is not None:
            return min(hinted, self.config.retry_after_cap)
        ceiling = min(self.config.backoff_cap, self.config.backoff_base * 2**attempt)
        return float(ceiling * (0.5 + 0.5 * self._rand()))

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        stream: bool = False,
    ) -> LLMReply:
        """Ask the model; the reply, with usage counted in ``self.usage``.

        ``stage`` names the pipeline stage (plan, select, summarize, merge, report,
        verify, ...): it picks the per-stage model unless ``model`` is given, and keys
        the usage breakdown. ``tools`` (OpenAI function definitions) and ``tool_choice``
        are passed through; the model's calls come back in ``LLMReply.tool_calls``, and
        such requests bypass the reply cache (an agent's world changes between calls).
        ``stream`` asks for the reply as it is written (not with ``tools``): its text goes
        to the progress callback as ``report_text`` events, and the reply is the same.
        Raises :class:`~sleuth.errors.LLMError` subclasses.
        """
        if not self.config.model_for(stage) and not model and not self._server_model:
            await self.resolve_model()
        name = model or self.model_for(stage)
        with timeline.span("llm", stage, name):
            reply = await self._answer(
                messages, name, stage, max_tokens, temperature, tools, tool_choice, stream
            )
            timeline.note(
                outcome="cached" if reply.cached else "ok",
                size=reply.prompt_tokens + reply.completion_tokens,
                detail=f"{reply.prompt_tokens:,} + {reply.completion_tokens:,} tokens",
            )
        return reply

    async def _answer(
        self,
        messages: Sequence[Message],
        name: str,
        stage: str,
        max_tokens: int | None,
        temperature: float,
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: str | Mapping[str, Any] | None,
        stream: bool = False,
    ) -> LLMReply:
        """:meth:`chat`'s work: the cached reply, or the model's (counted and cached)."""
        key = (
            cache_key(name, messages, max_tokens, temperature) if self.cache and not tools else None
        )
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                reply = LLMReply(**{**asdict(hit), "cached": True, "stage": stage})
                self.usage.record(reply)
                return reply
        request = _request(messages, name, max_tokens, temperature, tools, tool_choice)
        teller = None
        if stream and not tools and self._streams:
            # include_usage: the server's own counts, as a non-streamed reply carries them.
            request.update(stream=True, stream_options={"include_usage": True})
            teller = TextTeller(self._progress, stage)
        completion = await self._create(request, stage, teller)
        reply = self._reply(completion, name, messages, stage)
        self.usage.record(reply)
        # One event per call the model really answered: live token counters (sleuth serve).
        # Its cost too, when the model's price is known (the CLI's progress shows the sum).
        cost = model_info(reply.model).cost_usd(reply.prompt_tokens, reply.completion_tokens)
        self._progress(
            Event(
                "llm",
                f"{stage}: {reply.prompt_tokens:,} + {reply.completion_tokens:,} tokens ({name})",
                {
                    "stage": stage,
                    "model": name,
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    **({"cost_usd": cost} if cost is not None else {}),
                },
            )
        )
        if key is not None and self.cache is not None and reply.text:
            self.cache.put(key, reply)
        return reply

    async def _create(
        self, request: dict[str, Any], stage: str, teller: TextTeller | None = None
    ) -> Any:
        loop = asyncio.get_running_loop()
        attempt = 0
        # ``timeout`` bounds the whole call, retries and backoff included, from the moment
        # its first attempt is sent (waiting for a concurrency slot does not count): a
        # server that never answers costs one timeout, not one per retry.
        deadline: float | None = None
        while True:
            try:
                async with self._semaphore:
                    timeline.started()  # the wait for a free slot is queueing, not the call
                    if deadline is None:
                        deadline = loop.time() + self.config.timeout
                    async with asyncio.timeout_at(deadline):
                        if not request.get("stream"):
                            return await self._client.chat.completions.create(**request)
                        if teller is not None:
                            teller.start()
                        raw = await self._client.chat.completions.with_raw_response.create(
                            **request
                        )
                        return await read_streamed(raw, teller)
            except (openai.OpenAIError, TimeoutError, Misshapen, *UNPARSABLE) as exc:
                error = self._translate(exc)
                if request.get("stream") and refuses_streaming(error.status, str(error)):
                    # A server that refuses to stream is asked again, plainly, from now on.
                    self._streams = False
                    request.pop("stream")
                    request.pop("stream_options")
                    continue

                delay = self.retry_delay(attempt, headers_of(exc)) if error.retryable else 0.0
                out_of_time = deadline is not None and loop.time() + delay >= deadline
                if not error.retryable or attempt >= self.config.max_retries or out_of_time:
                    self.usage.failures += 1
                    if error.retryable:
                        error = type(error)(
                            f"{error} (gave up after {attempt + 1} attempts)",
                            status=error.status,
                            retryable=True,
                        )
                    raise error from None
            attempt += 1
            self.usage.retries += 1
            self._progress(
                Event(
                    "info",
                    f"LLM {stage}: {error}; retry {attempt} in {delay:.1f} s",
                    {"stage": stage, "attempt": attempt, "delay_s": delay, "status": error.status},
                )
            )
            # Sleep outside the semaphore: a waiting call must not block the others.
            await self._sleep(delay)

    def _reply(
        self, completion: Any, name: str, messages: Sequence[Message], stage: str
    ) -> LLMReply:
        try:
            read = (
                completion
                if isinstance(completion, Completion | None)
                else (read_completion(completion))
            )
        except Misshapen as exc:
            raise ParseError(
                f"the LLM server at {self.server} sent a reply that is not a chat completion: {exc}"
            ) from None
        if read is None:
            raise LLMError(f"the LLM server at {self.server} returned no answer for {name!r}")
        # A reply is untrusted text: JSON's "\ud800" escape decodes to a lone surrogate,
        # which would break whatever stores, prints or sends the text next.
        text = valid_text(read.text)
        calls = tuple(
            ToolCall(id=valid_text(i), name=valid_text(n), arguments=valid_text(a))
            for i, n, a in read.calls
        )
        prompt, answer = read.prompt_tokens, read.completion_tokens
        estimated = prompt is None or answer is None
        if estimated:
            # Servers that omit usage still cost tokens: count them ourselves, flagged.
            spoken = text + "".join(c.name + c.arguments for c in calls)
            prompt, answer = message_tokens(messages, name), count_tokens(spoken, name)
        return LLMReply(
            text=text,
            model=valid_text(read.model or name),
            prompt_tokens=prompt or 0,
            completion_tokens=answer or 0,
            finish_reason=read.finish_reason,
            estimated=estimated,
            stage=stage,
            tool_calls=calls,
        )

    def _scrub(self, message: str) -> str:
        if self._key:
            message = message.replace(self._key, "***")
        message = " ".join(message.split())
        return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"

    def _translate(self, exc: BaseException) -> LLMError:
        """The sleuth error for an SDK error (:func:`sleuth.llm._errors.translate`)."""
        return translate(exc, where=self.server, timeout=self.config.timeout, scrub=self._scrub)


def _request(
    messages: Sequence[Message],
    name: str,
    max_tokens: int | None,
    temperature: float,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The chat completion request's body (the SDK's keywords)."""
    # Valid text only: one lone surrogate in a prompt would fail the request's encoding.
    request: dict[str, Any] = {
        "model": name,
        "messages": [valid_data(dict(m)) for m in messages],
        "temperature": temperature,
    }
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if tools:
        request["tools"] = [dict(t) for t in tools]
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
    return request
