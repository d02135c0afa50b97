"""The Python API: the names ``sleuth`` exports, the exception tree, progress events."""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import sleuth
from sleuth.testing import OfflineWeb

PYTHON_DOCS = Path(__file__).resolve().parent.parent / "docs" / "reference" / "python.md"

PUBLIC_NAMES = {
    # running a research
    "research",
    "research_sync",
    "web_search",
    "Settings",
    "load_settings",
    # many questions at once (sleuth batch): an async iterator of results
    "research_many",
    "BatchResult",
    # what comes back
    "Report",
    "Source",
    "Failure",
    "Stats",
    "Quality",
    "SearchHit",
    "Plan",
    "Page",
    "AgentResult",
    "CitationCheck",
    # a deep research's tree and sections (Report.tree, Report.sections)
    "TreeNode",
    "Section",
    # the answer first (Report.answer: its sentences and where each is in its source)
    "Answer",
    "AnswerSentence",
    "TextSpan",
    # a claim with the source words that back it; the run's timeline
    "Claim",
    "Support",
    "Span",
    "Timeline",
    # progress events: one callback mechanism, and an async iterator built on it
    "Event",
    "EventStream",
    # single pages
    "extract",
    "Extracted",
    "fetch_page",
    # search provider plugins
    "SearchProvider",
    "register",
    # the exception tree
    "SleuthError",
    "ConfigError",
    "ProviderError",
    "FetchError",
    "BlockedURLError",
    "LLMError",
    "LLMAuthError",
    "WorkspaceError",
    "__version__",
}


def offline(web: OfflineWeb) -> dict[str, object]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 2,
        "no_store": True,
        "no_llm": True,
    }


def test_the_public_names_are_pinned() -> None:
    """Adding or removing a public name is a decision: change this set with it."""
    assert set(sleuth.__all__) == PUBLIC_NAMES
    assert len(sleuth.__all__) == len(PUBLIC_NAMES)
    assert set(dir(sleuth)) == PUBLIC_NAMES


@pytest.mark.parametrize("name", sorted(PUBLIC_NAMES - {"__version__"}))
def test_every_public_name_loads_and_is_documented(name: str) -> None:
    value = getattr(sleuth, name)
    assert inspect.getdoc(value), f"sleuth.{name} has no docstring"


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'reserch'"):
        sleuth.reserch  # type: ignore[attr-defined]  # noqa: B018


def test_exception_tree() -> None:
    assert issubclass(sleuth.ConfigError, sleuth.SleuthError)
    assert issubclass(sleuth.ConfigError, ValueError)
    assert issubclass(sleuth.ProviderError, sleuth.ConfigError)
    assert issubclass(sleuth.FetchError, sleuth.SleuthError)
    assert issubclass(sleuth.BlockedURLError, sleuth.FetchError)
    assert not issubclass(sleuth.FetchError, sleuth.ConfigError)
    assert issubclass(sleuth.LLMAuthError, sleuth.LLMError)
    assert issubclass(sleuth.LLMError, sleuth.SleuthError)
    assert issubclass(sleuth.WorkspaceError, sleuth.SleuthError)
    error = sleuth.BlockedURLError("http://10.0.0.1/", "private address")
    assert (error.url, error.reason) == ("http://10.0.0.1/", "private address")


@pytest.mark.parametrize(
    "statement",
    [
        "import sleuth.errors",
        "from sleuth.errors import LLMError, StoreError, WorkspaceError",
        "import sleuth.llm",
        "from sleuth.llm import tokens, models_table",
    ],
)
def test_the_exception_tree_and_the_llm_package_load_nothing_heavy(statement: str) -> None:
    """Catching a sleuth error, or naming the LLM layer, costs no httpx, pydantic or openai."""
    code = (
        f"import sys; {statement}; print(sorted(m for m in ('httpx', 'pydantic', 'openai') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_sleuth_research_and_extract_stay_functions_once_their_packages_load() -> None:
    """Importing the drivers' and extraction's packages first must not replace the public
    functions (the import system binds a subpackage as an attribute of its parent: a
    package named like a public function would shadow it)."""
    code = (
        "import inspect, sleuth.pipeline.quick, sleuth.extraction.html, sleuth.agent, sleuth\n"
        "from sleuth.pipeline import context, gather, quick, steps\n"
        "from sleuth.extraction import html, workers\n"
        "assert inspect.iscoroutinefunction(sleuth.research), sleuth.research\n"
        "assert inspect.isfunction(sleuth.extract), sleuth.extract\n"
        "from sleuth import extract, research\n"
        "assert research is sleuth.research is quick.research\n"
        "assert extract is sleuth.extract is html.extract\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_bad_input_raises_config_error_before_any_work() -> None:
    with pytest.raises(sleuth.ConfigError, match="empty"):
        sleuth.research_sync("   ")
    with pytest.raises(sleuth.SleuthError, match=r"^invalid value for depth: must be at most 3$"):
        sleuth.research_sync("a question", depth=7)
    with pytest.raises(sleuth.ProviderError):
        sleuth.research_sync("a question", search="nosuchengine", no_store=True)


def test_research_sync_with_a_progress_callback(web: OfflineWeb) -> None:
    events: list[sleuth.Event] = []
    report = sleuth.research_sync(
        web.topics[0].question, on_event=events.append, max_sources=3, **offline(web)
    )
    assert isinstance(report, sleuth.Report)
    assert report.sources and all(isinstance(s, sleuth.Source) for s in report.sources)
    assert report.confidence in ("HIGH", "MEDIUM", "LOW")
    kinds = [event.kind for event in events]
    assert kinds.index("plan") < kinds.index("search") < kinds.index("fetched")
    assert kinds[-1] == "report"


async def test_research_events_as_an_async_iterator(web: OfflineWeb) -> None:
    stream = sleuth.EventStream()
    task = stream.close_when_done(
        asyncio.create_task(
            sleuth.research(web.topics[3].question, on_event=stream, **offline(web))
        )
    )
    seen = [event async for event in stream]
    report = await task
    fetched = [e.data["url"] for e in seen if e.kind == "fetched"]
    assert {s.url for s in report.sources} <= set(fetched)
    assert seen[-1].kind == "report" and seen[-1].data["confidence"] == report.confidence


async def test_event_stream_ends_when_the_research_fails() -> None:
    stream = sleuth.EventStream()
    task = stream.close_when_done(
        asyncio.create_task(
            sleuth.research("ok", search="nosuchengine", on_event=stream, no_store=True)
        )
    )

    async def collect() -> list[str]:
        return [event.kind async for event in stream]

    kinds = await asyncio.wait_for(collect(), 30)  # ends instead of waiting forever
    assert "report" not in kinds
    with pytest.raises(sleuth.ProviderError):
        await task


async def test_event_stream_accepts_events_from_other_threads() -> None:
    stream = sleuth.EventStream()
    loop_events = [sleuth.Event("info", "from the loop")]
    stream(loop_events[0])

    def worker() -> None:
        for n in range(50):
            stream(sleuth.Event("info", f"thread {n}"))

    thread = threading.Thread(target=worker)
    received: list[str] = []

    async def consume() -> None:
        async for event in stream:
            received.append(event.message)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    thread.start()
    await asyncio.to_thread(thread.join)
    await asyncio.sleep(0)
    stream.close()
    stream(sleuth.Event("info", "after close"))  # ignored
    await consumer
    assert received == ["from the loop", *(f"thread {n}" for n in range(50))]


def test_web_search_is_the_agent_entry_point() -> None:
    assert inspect.iscoroutinefunction(sleuth.web_search)
    params = inspect.signature(sleuth.web_search).parameters
    assert next(iter(params)) == "goal"
    assert {"settings", "on_event"} <= set(params)


def test_the_docs_event_stream_example_runs(
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PYTHON_DOCS.read_text(encoding="utf-8"), re.DOTALL)
    example = next(block for block in blocks if "EventStream" in block)
    for name, value in {
        "SLEUTH_SEARCH": "searxng",
        "SLEUTH_SEARXNG_URL": web.searxng_url,
        "SLEUTH_ALLOW_PRIVATE_URLS": "1",
        "SLEUTH_TIMEOUT": "2",
        "SLEUTH_NO_STORE": "1",
        "SLEUTH_NO_LLM": "1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    # The example calls asyncio.run itself, so it runs in a thread without a loop.
    thread = threading.Thread(target=exec, args=(compile(example, "python.md", "exec"), namespace))
    thread.start()
    thread.join(120)
    assert isinstance(namespace.get("report"), sleuth.Report)
    assert "fetched" in capsys.readouterr().out
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
