"""The report streamed as the model writes it: the model client, the web page's event
stream, MCP progress and the CLI's bar, against the scripted model on loopback."""

from __future__ import annotations

import asyncio
import itertools
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import MODEL
from starlette.responses import JSONResponse
from starlette.testclient import TestClient

from sleuth.errors import ParseError
from sleuth.llm.client import LLMClient
from sleuth.llm.config import LLMConfig
from sleuth.progress import Counts, Event
from sleuth.settings import load_settings
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM, completion
from sleuth.testing.researcher import MARKERS, ScriptedResearcher
from sleuth.web.app import create_app

REPLY = " ".join(f"word{n}." for n in range(240))
ASK = [{"role": "user", "content": "Write the report, please."}]
#: A sentence the report model adds that cites a source nobody read: the citation check
#: removes it, so the draft holds it and the checked report does not.
UNSUPPORTED = "A later survey found the opposite in every country [9]."


def client_for(llm: ScriptedLLM, events: list[Event]) -> LLMClient:
    return LLMClient(
        LLMConfig(base_url=llm.base_url, model=MODEL, max_retries=2, backoff_base=0.0),
        progress=events.append,
    )


def draft_of(events: list[Event]) -> str:
    """The text the report_text events build, each delta written at its offset."""
    draft = ""
    for event in events:
        if event.kind == "report_text":
            draft = draft[: event.data["offset"]] + event.data["delta"]
    return draft


async def ask(llm: ScriptedLLM, *, stream: bool, events: list[Event] | None = None) -> Any:
    told: list[Event] = [] if events is None else events
    async with client_for(llm, told) as client:
        return await client.chat(ASK, stage="report", stream=stream)


@pytest.mark.parametrize("usage", [True, (1234, 567), False], ids=["words", "given", "none"])
def test_a_streamed_reply_is_the_plain_one_told_as_it_arrives(usage: Any) -> None:
    events: list[Event] = []
    with ScriptedLLM.serve() as llm:
        llm.add(REPLY, usage=usage, tokens_per_s=4000, times=2)
        streamed = asyncio.run(ask(llm, stream=True, events=events))
        plain = asyncio.run(ask(llm, stream=False))
        assert llm.requests[0].stream and not llm.requests[1].stream
        assert llm.requests[0].body["stream_options"] == {"include_usage": True}
        # The same request otherwise: the prompt costs the same tokens.
        assert {**llm.requests[0].body, "stream": False, "stream_options": None} == {
            **llm.requests[1].body,
            "stream": False,
            "stream_options": None,
        }
    assert streamed.text == plain.text == REPLY
    assert (streamed.prompt_tokens, streamed.completion_tokens, streamed.estimated) == (
        plain.prompt_tokens,
        plain.completion_tokens,
        plain.estimated,
    )
    assert streamed.estimated is (usage is False)
    told = [e for e in events if e.kind == "report_text"]
    assert len(told) >= 2 and draft_of(events) == REPLY
    assert told[-1].data["words"] == 240 and told[-1].data["chars"] == len(REPLY)
    # Batched: far fewer events than the 240 chunks the server sent.
    assert len(told) < 60
    assert all("word1" not in e.message for e in told)  # the message counts, never quotes


def test_a_server_that_answers_a_streamed_request_plainly_still_works() -> None:
    def plain(body: dict[str, Any]) -> JSONResponse:
        return JSONResponse(
            completion(
                REPLY,
                MODEL,
                "stop",
                {"prompt_tokens": 5, "completion_tokens": 240, "total_tokens": 245},
            )
        )

    with ScriptedLLM.serve() as llm:
        llm.add(plain)
        reply = asyncio.run(ask(llm, stream=True))
        assert llm.requests[0].stream
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == (REPLY, 5, 240)


def test_a_server_that_refuses_to_stream_is_asked_plainly_from_then_on() -> None:
    events: list[Event] = []
    with ScriptedLLM.serve() as llm:
        llm.fail(400, message="Unrecognized request argument supplied: stream_options")
        llm.add(REPLY, times=2)

        async def twice() -> list[Any]:
            async with client_for(llm, events) as client:
                first = await client.chat(ASK, stage="report", stream=True)
                second = await client.chat(ASK, stage="report", stream=True)
                return [first, second, client.usage]

        first, second, usage = asyncio.run(twice())
        assert [r.stream for r in llm.requests] == [True, False, False]
    assert first.text == second.text == REPLY
    assert usage.failures == 0 and usage.retries == 0


def test_a_retried_stream_starts_its_draft_again() -> None:
    events: list[Event] = []
    with ScriptedLLM.serve() as llm:
        llm.fail(503)
        llm.add(REPLY)
        reply = asyncio.run(ask(llm, stream=True, events=events))
    assert reply.text == REPLY and draft_of(events) == REPLY
    assert next(e for e in events if e.kind == "report_text").data["offset"] == 0


def test_a_stream_chunk_that_is_not_a_completion_chunk_is_a_parse_error() -> None:
    def broken(body: dict[str, Any]) -> Any:
        from starlette.responses import Response

        return Response(
            'data: {"choices": {"text": "no list"}}\n\ndata: [DONE]\n\n',
            media_type="text/event-stream",
        )

    with ScriptedLLM.serve() as llm:
        llm.add(broken)
        with pytest.raises(ParseError, match="not a chat completion"):
            asyncio.run(ask(llm, stream=True))


@pytest.mark.parametrize(
    ("mode", "error"),
    [("endless", ParseError), ("truncated-json", ParseError), ("bad-utf8", ParseError)],
)
def test_a_broken_plain_reply_to_a_streamed_request_is_an_error_not_a_crash(
    mode: str, error: type[Exception]
) -> None:
    with ScriptedLLM.serve() as llm:
        llm.misbehave(mode, times=None)
        with pytest.raises(error):
            asyncio.run(ask(llm, stream=True))


def test_the_bar_says_writing_with_the_words_so_far() -> None:
    counts = Counts(5)
    counts.add(Event("report_text", "writing the report: 42 words", {"words": 42, "chars": 300}))
    assert counts.stage() == "writing… 42 words"
    counts.add(Event("report", "report with 3 sources"))
    assert counts.stage() == "writing"


# ------------------------------------------------------------------ the web page's stream


def model_settings(web: OfflineWeb, home: Path) -> Any:
    return load_settings(
        {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "allow_private_urls": True,
            "timeout": 2,
            "top_wait": 0,
            "base_url": web.llm_url,
            "model": MODEL,
            "home": str(home),
        },
        env={},
    )


def paced_report(llm: ScriptedLLM) -> None:
    """The scripted researcher, its report written at a paced rate with a sentence the
    citation check removes."""
    researcher = ScriptedResearcher()
    llm.add(
        lambda body: researcher.report(body) + "\n\n" + UNSUPPORTED,
        contains=MARKERS["report"],
        times=None,
        first_token=0.05,
        tokens_per_s=1500,
    )
    researcher.install(llm)


def test_the_page_gets_the_report_as_it_is_written_then_the_checked_one(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    from test_web_page import sse_messages

    paced_report(llm)
    app = create_app(model_settings(web, tmp_path))
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        started = client.post("/api/runs", json={"question": web.topics[0].question})
        assert started.status_code == 201
        messages = sse_messages(client.get(started.json()["events"]).text)
    names = [name for name, _ in messages]
    assert names[-2:] == ["report", "end"], names
    drafts = [
        (n, data) for n, (name, data) in enumerate(messages) if data.get("kind") == "report_text"
    ]
    assert len(drafts) >= 2
    assert drafts[-1][0] < names.index("report")  # the draft came before the report
    draft = ""
    for _, data in drafts:
        draft = draft[: data["data"]["offset"]] + data["data"]["delta"]
    assert UNSUPPORTED in draft  # the page saw what the model wrote, as it wrote it
    report = messages[-2][1]
    assert "A later survey found the opposite" not in report["html"]  # checked
    # At most ten draft events a second: each at least 0.1 s after the one before (but the
    # last, which tells the end of the reply at once).
    times = [data["t"] for _, data in drafts][:-1]
    assert all(b - a >= 0.095 for a, b in itertools.pairwise(times)), times


# ------------------------------------------------------------------ MCP progress


async def test_mcp_progress_says_writing_with_characters_not_the_text(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    from test_mcp import in_memory, research_with_progress

    paced_report(llm)
    settings = model_settings(web, tmp_path).model_copy(update={"no_store": True})
    async with in_memory(settings) as client:
        result, progress = await research_with_progress(client, web.topics[0].question)
    assert not result.isError
    writing = [m for m in progress if m.startswith("writing the report:")]
    assert writing, progress
    assert all(re.fullmatch(r"writing the report: [\d,]+ characters so far", m) for m in writing)
    assert progress.index(writing[-1]) < next(
        n for n, m in enumerate(progress) if m.startswith("report:")
    )


# ------------------------------------------------------------------ the page in Chromium


@pytest.mark.slow
def test_the_page_shows_the_draft_growing_then_the_checked_report(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from browser import NO_CHROMIUM, chromium, chromium_path, screenshot_dir, serve_env, served_url

    if chromium_path() is None:  # before the server starts
        pytest.skip(NO_CHROMIUM)
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    researcher = ScriptedResearcher()
    llm.add(
        lambda body: researcher.report(body) + "\n\n" + UNSUPPORTED,
        contains=MARKERS["report"],
        times=None,
        first_token=0.1,
        tokens_per_s=150,
    )
    researcher.install(llm)
    env = serve_env(web, tmp_path)
    del env["SLEUTH_NO_LLM"]
    env.update(SLEUTH_BASE_URL=web.llm_url, SLEUTH_MODEL=MODEL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--port", "0"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            # Every length the draft shows, as the page shows it.
            page.evaluate("""() => {
                window.draftLengths = [];
                new MutationObserver(() => window.draftLengths.push(
                    document.querySelector('#ui-draft').textContent.length)
                ).observe(document.querySelector('#ui-draft'),
                          {childList: true, characterData: true, subtree: true});
            }""")
            page.fill("#ui-question", web.topics[0].question)
            page.click("#ui-go")
            page.wait_for_selector("#ui-draft-card:not([hidden])", timeout=60_000)
            note = page.inner_text("#ui-draft-card .draft-note")
            page.wait_for_function("() => window.draftLengths.length >= 3")
            page.screenshot(path=str(screenshot_dir(tmp_path) / "sleuth-serve-draft.png"))
            page.wait_for_selector("#ui-report article.sleuth-report", timeout=60_000)
            lengths = page.evaluate("window.draftLengths")
            draft_hidden = page.locator("#ui-draft-card").is_hidden()
            report = page.inner_text("#ui-report")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "Draft" in note and "citation check" in note
    grown = [n for n in lengths if n]
    assert len(set(grown)) >= 3 and grown == sorted(grown), lengths  # it grew, step by step
    assert draft_hidden  # the checked report took its place
    assert "A later survey found the opposite" not in report
