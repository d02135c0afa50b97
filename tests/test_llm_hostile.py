"""Hostile model replies at the HTTP level, and --max-time as a deadline for the whole run.

A model server can send bytes that are not UTF-8, truncated or absurdly nested JSON,
a body that never ends or drips one byte at a time, or nothing for an hour. Each must
end as an :class:`~sleuth.errors.LLMError` (so its stage falls back, with the reason
in the report's Gaps), never as a crash, unbounded memory, or a run that outlives
``--llm-timeout`` and ``--max-time``. The server (``ScriptedLLM.misbehave``) records
each request whose client closed the connection before the reply was complete.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from openai.types.chat import ChatCompletionMessageParam
from starlette.responses import Response

import sleuth
from sleuth.cli import run
from sleuth.errors import LLMUnavailableError, ParseError
from sleuth.llm.client import LLMClient
from sleuth.llm.config import LLMConfig
from sleuth.models import Report
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher

MODEL = "scripted-model"
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is OAuth?"}]
#: Bounds how long a test may hang on code that does not stop (not a timing assertion).
HANG_GUARD_S = 120.0
#: Replies that are broken as HTTP bodies; each is one ParseError, never retried.
BROKEN = ["bad-utf8", "truncated-json", "deep-nesting", "oversized", "endless"]


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM.serve(models=[MODEL]) as llm:
        yield llm


async def no_sleep(seconds: float) -> None:
    """Backoff between retries, skipped: the tests count attempts, not seconds."""


def client_for(llm: ScriptedLLM, **config: Any) -> LLMClient:
    return LLMClient(
        LLMConfig(**{"base_url": llm.base_url, "model": MODEL, **config}), sleep=no_sleep
    )


def research(web: OfflineWeb, question: str, **extra: Any) -> Report:
    options: dict[str, Any] = {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5.0,
        "base_url": web.llm_url,
        "model": MODEL,
        "max_sources": 3,
        **extra,
    }

    async def guarded() -> Report:
        return await asyncio.wait_for(sleuth.research(question, **options), HANG_GUARD_S)

    return asyncio.run(guarded())


def gaps(report: Report) -> str:
    return report.markdown.split("## Gaps", 1)[1] if "## Gaps" in report.markdown else ""


# -- one call -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", BROKEN)
async def test_a_broken_reply_body_is_one_parse_error_never_retried(
    server: ScriptedLLM, mode: str
) -> None:
    server.misbehave(mode, times=None)
    async with client_for(server, max_retries=2) as client:
        with pytest.raises(ParseError, match=f"the LLM server at {server.base_url}") as caught:
            await client.chat(USER, stage="plan")
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) <= 300
    assert len(server.requests) == 1  # the same request would break the same way
    assert client.usage.failures == 1 and client.usage.calls == 0


@pytest.mark.parametrize("mode", ["oversized", "endless"])
async def test_a_reply_over_the_byte_cap_is_not_read_to_its_end(
    server: ScriptedLLM, mode: str
) -> None:
    from sleuth.llm.client import MAX_REPLY_BYTES

    server.misbehave(mode, size=MAX_REPLY_BYTES + 1)
    async with client_for(server) as client:
        with pytest.raises(ParseError, match=f"larger than {MAX_REPLY_BYTES // 2**20} MiB"):
            await client.chat(USER, stage="plan")
    if mode == "endless":  # the client hung up instead of reading on
        assert server.wait_disconnected(1)


async def test_a_drip_ends_at_the_llm_timeout_for_the_whole_call(server: ScriptedLLM) -> None:
    """One byte every 0.2 s never trips a per-read timeout of 1 s; the call's deadline does."""
    server.misbehave("drip", seconds=0.2)
    async with client_for(server, timeout=1.0, max_retries=0) as client:
        with pytest.raises(LLMUnavailableError, match=r"did not answer within 1 s"):
            await asyncio.wait_for(client.chat(USER, stage="plan"), HANG_GUARD_S)
    assert server.wait_disconnected(1)


async def test_a_silent_server_costs_one_timeout_not_one_per_retry(server: ScriptedLLM) -> None:
    """--llm-timeout bounds the call with its retries: the attempt that used the time up
    is not followed by four more (a plan call used to eat a whole --max-time this way)."""
    server.misbehave("delay", seconds=60.0, times=None)
    async with client_for(server, timeout=1.0, max_retries=4) as client:
        with pytest.raises(LLMUnavailableError, match=r"did not answer within 1 s"):
            await asyncio.wait_for(client.chat(USER, stage="plan"), HANG_GUARD_S)
        assert client.usage.retries == 0
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"choices": 5},
        {"choices": [{"message": {"content": {"text": "not a string"}}}]},
        {"choices": [{"message": {"content": "x", "tool_calls": 7}}]},
    ],
    ids=["choices-not-a-list", "content-not-text", "tool-calls-not-a-list"],
)
async def test_json_that_is_no_chat_completion_is_a_parse_error(
    server: ScriptedLLM, body: dict[str, Any]
) -> None:
    server.add(lambda request: body)
    async with client_for(server) as client:
        with pytest.raises(ParseError, match="not a chat completion"):
            await client.chat(USER, stage="plan")


async def test_replies_are_asked_for_uncompressed_and_a_compressed_one_is_refused(
    server: ScriptedLLM,
) -> None:
    """The byte cap counts what is parsed: a gzip body could inflate a thousandfold past it."""
    packed = gzip.compress(
        json.dumps({"choices": [{"message": {"content": "x" * 10**7}}]}).encode()
    )
    server.add(
        lambda request: Response(
            packed, media_type="application/json", headers={"content-encoding": "gzip"}
        )
    )
    async with client_for(server) as client:
        with pytest.raises(ParseError, match=r"compressed \(gzip\) although none was asked"):
            await client.chat(USER, stage="plan")
    assert server.requests[0].headers["accept-encoding"] == "identity"


async def test_text_parts_and_argument_objects_are_read(server: ScriptedLLM) -> None:
    """Shapes some servers send for fields that are text elsewhere are read, not refused."""
    server.add(
        lambda request: {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "content": [
                            {"type": "text", "text": "one "},
                            {"type": "text", "text": "two"},
                        ],
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "search", "arguments": {"query": "x"}},
                            }
                        ],
                    },
                }
            ]
        }
    )
    async with client_for(server) as client:
        reply = await client.chat(USER, stage="agent")
    assert reply.text == "one two" and reply.estimated
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("search", {"query": "x"})
    ]


# -- a whole research ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", BROKEN)
def test_a_broken_plan_reply_falls_back_to_the_rules_and_says_why(
    web: OfflineWeb, llm: ScriptedLLM, mode: str
) -> None:
    llm.misbehave(mode, contains=MARKERS["plan"])
    ScriptedResearcher().install(llm)
    question = web.topics[2].question
    report = research(web, question)
    assert report.planner == "rules" and report.queries[0] == question
    assert f"LLM plan: the LLM server at {web.llm_url}" in gaps(report)
    assert "the rule-based queries were used" in gaps(report)
    # One broken reply is not a dead server: the rest of the run still uses the model.
    assert report.sources and report.writer == "llm"


def test_junk_planned_queries_are_dropped_and_the_rules_plan_instead(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """A NUL byte, no words, a bare URL: none of it is sent to a search engine."""
    junk = ["\u0000", "   ", "!!! ???", "https://evil.example/x", "tariffs\u0000markets", "--"]
    llm.add(json.dumps(junk), contains=MARKERS["plan"])
    ScriptedResearcher().install(llm)
    question = web.topics[2].question
    report = research(web, question)
    assert report.planner == "rules" and report.queries[0] == question
    assert not any("\x00" in q or "evil" in q for q in report.queries)
    assert "the model's queries were unusable" in gaps(report)
    assert report.sources


def test_model_queries_that_find_nothing_give_way_to_the_rules_plan(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    # Misspelt: they bear on the question (so they are searched) and match no page.
    llm.add(json.dumps(["hongkongg protestz chinaa", "chinaa hongkongg"]), contains=MARKERS["plan"])
    ScriptedResearcher().install(llm)
    question = web.topics[3].question  # Hong Kong
    report = research(web, question)
    assert report.planner == "llm" and question in report.queries
    assert "the model's queries found nothing" in gaps(report)
    assert report.sources and all(
        "hong" in s.title.lower() or "china" in s.title.lower() or "beijing" in s.title.lower()
        for s in report.sources
    )


def test_a_broken_report_reply_gives_the_template_report(web: OfflineWeb, llm: ScriptedLLM) -> None:
    llm.misbehave("bad-utf8", contains=MARKERS["report"])
    ScriptedResearcher().install(llm)
    report = research(web, web.topics[3].question)
    assert report.sources and report.writer == "template"
    assert f"LLM report: the LLM server at {web.llm_url}" in gaps(report)


def test_the_cli_gives_a_report_not_an_internal_error(
    web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.misbehave("deep-nesting", contains=MARKERS["plan"])
    ScriptedResearcher().install(llm)
    code = run(
        [
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--base-url",
            web.llm_url,
            "--model",
            MODEL,
            "--max-sources",
            "3",
            "--format",
            "json",
            web.topics[2].question,
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "internal error" not in out.err and "Traceback" not in out.err
    assert json.loads(out.out)["planner"] == "rules"


# -- --max-time bounds the model calls too --------------------------------------------------


def test_max_time_cuts_the_report_call_and_the_template_report_is_given(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """The deadline passes while the model writes: the call is cancelled, not waited for."""
    llm.misbehave("delay", contains=MARKERS["report"])  # an hour before the headers
    ScriptedResearcher().install(llm)
    report = research(web, web.topics[3].question, max_time="4s", llm_timeout=3600)
    assert report.sources and report.writer == "template"
    assert report.stopped_by == "time budget reached (--max-time 4s)"
    assert "LLM report: time budget reached (--max-time 4s)" in gaps(report)
    assert llm.wait_disconnected(1)
    assert MARKERS["report"] in llm.disconnected[0].last_user


@pytest.mark.slow
def test_max_time_ends_a_cli_run_whose_model_never_answers(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The planner's reply would come in an hour: the run ends at --max-time with a report."""
    llm.misbehave("delay", contains=MARKERS["plan"])
    ScriptedResearcher().install(llm)
    web.reset_log()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env["SLEUTH_HOME"] = str(tmp_path / "home")
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sleuth",
            "--search",
            "searxng",
            "--searxng-url",
            web.searxng_url,
            "--allow-private-urls",
            "--base-url",
            web.llm_url,
            "--model",
            MODEL,
            "--max-time",
            "2",
            "--llm-timeout",
            "3600",
            "--format",
            "json",
            "-o",
            str(out),
            web.topics[2].question,
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["stopped_by"] == "time budget reached (--max-time 2s)"
    assert report["planner"] == "rules"
    assert "LLM plan: time budget reached (--max-time 2s)" in report["markdown"]
    # Every planning call the server read was hung up on, none left waiting. (On a loaded
    # machine the call may be cut before the server has read it: nothing to hang up then.)
    received = [r for r in llm.requests if MARKERS["plan"] in r.last_user]
    assert llm.wait_disconnected(len(received))
    assert all(MARKERS["plan"] in r.last_user for r in llm.disconnected)
    # The rule-based queries came after the deadline: none was searched but the question
    # as asked, whose search went out before the planning call (issue 26).
    searched = [parse_qs(r.query).get("q") for r in web.requests if r.path == "/search"]
    assert searched == [[web.topics[2].question]]
