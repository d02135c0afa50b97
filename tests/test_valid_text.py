"""Lone surrogates never reach an output: every boundary makes text valid.

JSON's ``"\\ud800"`` escape (search results, model replies, tool arguments) and a page
whose charset names a codec such as ``unicode_escape`` both make Python strings holding
a lone surrogate, which no UTF-8 output (stdout, a file, SQLite, an HTTP response) can
encode. The offline web serves both: its ``unicode_escape`` hostile page, and a search
snippet for that page holding the escape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sleuth.agent import web_search
from sleuth.cli import run
from sleuth.models import Page, Report, SearchHit, Source, Stats
from sleuth.progress import Event
from sleuth.search import build_providers, make_search_client, run_searches
from sleuth.settings import Settings
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM

MODEL = "scripted-model"
LONE = "\ud800"


def assert_valid(text: str) -> None:
    """``text`` can be written anywhere: it encodes as UTF-8 (no lone surrogate)."""
    text.encode("utf-8")


def cli_args(web: OfflineWeb, home: Path, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "5",
        "--depth",
        "1",
        "--home",
        str(home),
        "--quiet",
        *extra,
    ]


def stored_statuses(home: Path) -> list[str]:
    with Store(home) as store:
        return [run.status for run in store.list_runs()]


def test_records_make_their_text_valid() -> None:
    page = Page(
        url="http://a.example/",
        final_url="http://a.example/",
        canonical_url="http://a.example/",
        title=f"frame {LONE}",
        text="a pair \ud83d\ude00 and a lone \udfff",
        content_type="text/plain",
        status=200,
    )
    assert page.title == "frame \ufffd"
    assert page.text == "a pair \U0001f600 and a lone \ufffd"  # a pair is joined, as JSON does
    hit = SearchHit(title=LONE, url="http://a.example/", snippet=LONE, rank=1, provider="x")
    assert (hit.title, hit.snippet) == ("\ufffd", "\ufffd")
    source = Source(
        id=1,
        url="http://a.example/",
        title="t",
        quality="UNVERIFIED",
        quality_score=2,
        score=1.0,
        passages=[f"one {LONE}", "two"],
    )
    assert source.passages == ["one \ufffd", "two"]
    report = Report(
        topic="q",
        depth=1,
        queries=[LONE],
        sources=[source],
        failures=[],
        confidence="LOW",
        confidence_reason="r",
        markdown=f"# q {LONE}",
        stats=Stats(),
    )
    assert report.markdown == "# q \ufffd" and report.queries == ["\ufffd"]
    # model_copy skips pydantic's validation; the records check their updates anyway.
    assert report.model_copy(update={"markdown": LONE}).markdown == "\ufffd"
    assert Event("info", f"title {LONE}", {"title": LONE}).message == "title \ufffd"


async def test_a_search_result_holding_a_lone_surrogate_becomes_valid_text(web: OfflineWeb) -> None:
    case = web.corpus.hostile["unicode_escape"]
    assert LONE in case.snippet  # the offline search sends it as the JSON escape
    settings = Settings(search=["searxng"], searxng_url=web.searxng_url)
    async with make_search_client(settings) as client:
        hits, failures = await run_searches(
            [case.title], build_providers(settings, client), limit=10, timeout=10
        )
    assert not failures
    (hit,) = [h for h in hits if h.url == web.hostile["unicode_escape"]]
    assert "held \ufffd, half of a surrogate pair" in hit.snippet


@pytest.mark.parametrize("fmt", ["markdown", "json", "html"])
def test_a_research_reading_the_unicode_escape_page_writes_its_report(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """The issue's page: the report is written in every format, and the run is done."""
    url = web.hostile["unicode_escape"]
    code = run(
        [*cli_args(web, tmp_path, "--format", fmt), web.corpus.hostile["unicode_escape"].title]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert_valid(out)
    if fmt == "json":
        sources = json.loads(out)["sources"]
        page = next(s for s in sources if s["url"] == url)
        assert any("\\ud800" in passage for passage in page["passages"])  # as the page says
    else:
        assert url in out
    assert out.startswith({"markdown": "# Research:", "json": "{", "html": "<!DOCTYPE html>"}[fmt])
    assert stored_statuses(tmp_path) == ["done"]


@pytest.mark.slow
def test_a_model_reply_holding_a_lone_surrogate_still_gives_a_report(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every prompt is answered with the JSON escape (the model server sends "\\ud800")."""
    llm.add(f"Stadia launched with 22 games {LONE} and a $130 bundle.", times=None)
    code = run(
        [
            *cli_args(web, tmp_path, "--base-url", web.llm_url, "--model", MODEL),
            web.topics[0].question,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("# Research:")
    assert_valid(out)
    assert llm.requests, "the model was asked"
    assert stored_statuses(tmp_path) == ["done"]


async def test_an_agent_tool_argument_holding_a_lone_surrogate_is_valid_text(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """The model's tool call arguments are JSON text; "\\ud800" in them decodes to a lone
    surrogate, which the file tool, the history and the result must never see."""

    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{name}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                        ],
                    },
                }
            ],
        }

    llm.add(
        lambda body: call(
            "file", {"operation": "write", "path": "notes.md", "content": f"frame {LONE} noted"}
        )
    )
    llm.add(lambda body: call("all_finished", {"result": f"done {LONE}"}))
    result = await web_search(
        "Europa Clipper frames",
        home=tmp_path / "home",
        base_url=web.llm_url,
        model=MODEL,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
    )
    assert result.status == "finished"
    assert result.result == "done \ufffd"
    assert result.workspace is not None
    workspace = Path(result.workspace)
    assert (workspace / "notes.md").read_text(encoding="utf-8") == "frame \ufffd noted"
    history = (workspace / "history.jsonl").read_text(encoding="utf-8")
    assert all(json.loads(line) for line in history.splitlines())


@pytest.mark.slow
def test_a_report_reaches_a_stdout_that_cannot_encode_it(web: OfflineWeb, tmp_path: Path) -> None:
    """An ASCII-only stdout (PYTHONIOENCODING=ascii, an old terminal) gets the report with
    "?" for what it cannot show, rather than exit 70 and no report at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env["PYTHONIOENCODING"] = "ascii"
    case = web.corpus.hostile["meta_charset"]  # a Japanese page
    done = subprocess.run(
        [sys.executable, "-m", "sleuth", *cli_args(web, tmp_path), case.title],
        capture_output=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    out = done.stdout.decode("ascii")
    assert out.startswith("# Research: ?") and web.hostile["meta_charset"] in out
