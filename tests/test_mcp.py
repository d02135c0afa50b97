"""``sleuth mcp``: the MCP SDK's own client against the server, over stdio, HTTP and in memory."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import LATEST_PROTOCOL_VERSION, CallToolResult, TextContent

import sleuth.mcp_server as mcp_server
from sleuth.cli import run
from sleuth.pipeline import quick
from sleuth.progress import Event
from sleuth.settings import Settings, load_settings
from sleuth.testing import OfflineWeb


def server_env(web: OfflineWeb, home: Path) -> dict[str, str]:
    """The environment a user would put in the MCP client's config, pointed at the test web."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env.update(
        SLEUTH_SEARCH="searxng",
        SLEUTH_SEARXNG_URL=web.searxng_url,
        SLEUTH_ALLOW_PRIVATE_URLS="1",
        SLEUTH_TIMEOUT="2",
        SLEUTH_NO_LLM="1",
        SLEUTH_HOME=str(home),
    )
    return env


def text_of(result: CallToolResult) -> str:
    assert result.content and isinstance(result.content[0], TextContent)
    return result.content[0].text


def offline_settings(web: OfflineWeb, **extra: Any) -> Settings:
    return load_settings(
        {
            "search": "searxng",
            "searxng_url": web.searxng_url,
            "allow_private_urls": True,
            "timeout": 2,
            "top_wait": 0,
            "no_store": True,
            "no_llm": True,
            **extra,
        },
        env={},
    )


@asynccontextmanager
async def in_memory(settings: Settings) -> AsyncIterator[ClientSession]:
    server = mcp_server.build_server(settings)
    async with create_connected_server_and_client_session(server) as client:
        yield client


async def research_with_progress(
    client: ClientSession, topic: str, **args: Any
) -> tuple[CallToolResult, list[str]]:
    messages: list[str] = []
    steps: list[tuple[float, float | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        steps.append((done, total))

    result = await client.call_tool(
        "web_research", {"topic": topic, **args}, progress_callback=progress
    )
    # Each notification says how far the run is out of a total, further each time, and
    # none is noise: not a download starting, a model call, a timing.
    assert steps and all(total is not None and 0 < done <= total for done, total in steps)
    assert [done for done, _ in steps] == sorted({done for done, _ in steps})
    noise = ("fetch_start:", "llm:", "span:")
    assert not [m for m in messages if m.startswith(noise)], messages
    return result, messages


def assert_cited_report(markdown: str) -> None:
    assert markdown.startswith("# Research:")
    cited = {int(n) for n in re.findall(r"^\[(\d+)\] \[", markdown, re.MULTILINE)}
    assert cited and cited == set(range(1, len(cited) + 1))
    assert "## Confidence:" in markdown and "## Gaps" in markdown


@pytest.mark.slow
async def test_stdio_server_researches_with_progress(web: OfflineWeb, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sleuth", "mcp"], env=server_env(web, tmp_path)
    )
    errlog = (tmp_path / "stderr.txt").open("w", encoding="utf-8")
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        # No model is configured, so agent mode is not offered.
        assert set(tools) == {"web_research", "fetch_page"}
        schema = tools["web_research"].inputSchema
        assert list(schema["properties"]) == ["topic", "depth", "max_sources", "mode"]
        assert schema["required"] == ["topic"]
        assert schema["properties"]["mode"]["default"] == "quick"
        assert schema["properties"]["depth"]["default"] == 2
        assert schema["properties"]["max_sources"]["default"] == 5

        result, progress = await research_with_progress(
            client, web.topics[0].question, max_sources=3
        )
        assert not result.isError
        assert_cited_report(text_of(result))
        kinds = [message.split(":")[0] for message in progress]
        assert kinds.index("plan") < kinds.index("search") < kinds.index("fetched")
        assert kinds[-1] == "report"

        bad = await client.call_tool("web_research", {"topic": "x", "depth": 9})
        assert bad.isError and "depth must be 1, 2 or 3" in text_of(bad)
        # The server survived the bad call.
        page = await client.call_tool("fetch_page", {"url": web.docs[0].url})
        assert not page.isError and web.docs[0].url in text_of(page)
    errlog.close()
    # The client's log (stderr) gets no library debug lines ("DEBUG Building index from
    # tokens" once per page read).
    stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert "DEBUG" not in stderr and "Building index" not in stderr


@pytest.mark.slow
async def test_stdio_server_survives_a_page_that_decodes_to_a_lone_surrogate(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """The unicode_escape page (its text holds the escape \\ud800) through fetch_page and
    a research: both answer, and the server goes on serving the next request."""
    url = web.hostile["unicode_escape"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "sleuth", "mcp"], env=server_env(web, tmp_path)
    )
    # The SDK's client waits forever for a server that died: the bound turns that into
    # a failure (it is no time limit on a working server, whose answers take seconds).
    with anyio.fail_after(240):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            page = await client.call_tool("fetch_page", {"url": url})
            assert not page.isError and "notes: the \\ud800 frame" in text_of(page)
            result = await client.call_tool(
                "web_research",
                {"topic": web.corpus.hostile["unicode_escape"].title, "depth": 1, "max_sources": 3},
            )
            assert not result.isError and url in text_of(result)
            after = await client.call_tool("fetch_page", {"url": web.docs[0].url})
            assert not after.isError and web.docs[0].url in text_of(after)


async def raw_stdio_exchange(
    web: OfflineWeb, home: Path, requests: list[dict[str, Any]]
) -> dict[Any, dict[str, Any]]:
    """Initialize, send ``requests`` as JSON lines, and wait for a reply to each, by id.

    Raw lines, because the SDK's client cannot even send a lone surrogate (it encodes
    its requests with pydantic, which refuses one); a client in another language can.
    The wait is bounded only so that a server that drops a request fails the test
    instead of hanging it.
    """
    hello = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sleuth",
        "mcp",
        env=server_env(web, home),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in [hello, ready, *requests]).encode())
    await proc.stdin.drain()
    wanted = {"init", *(r["id"] for r in requests)}
    replies: dict[Any, dict[str, Any]] = {}

    async def read_replies() -> None:
        assert proc.stdout is not None
        while not wanted <= set(replies):
            line = await proc.stdout.readline()
            assert line, f"the server ended with no reply to {wanted - set(replies)}"
            message = json.loads(line)
            if "id" in message:
                replies[message["id"]] = message

    try:
        await asyncio.wait_for(read_replies(), timeout=240)
    finally:
        proc.stdin.close()
        await proc.wait()
    return replies


@pytest.mark.slow
async def test_a_request_holding_a_lone_surrogate_gets_its_reply(
    web: OfflineWeb, tmp_path: Path
) -> None:
    topic = "Europa Clipper ground station notes: the \ud800 frame"  # the JSON escape
    replies = await raw_stdio_exchange(
        web,
        tmp_path,
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "web_research",
                    "arguments": {"topic": topic, "depth": 1, "max_sources": 2},
                },
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "fetch_page", "arguments": {"url": web.docs[0].url + "?\udfff"}},
            },
        ],
    )
    report = replies[1]["result"]
    assert not report["isError"]
    assert report["content"][0]["text"].startswith("# Research: Europa Clipper ground station")
    assert "\ufffd" in report["content"][0]["text"]  # the lone surrogate, made valid
    assert not replies[2]["result"]["isError"]


def _start_http_server(web: OfflineWeb, home: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "mcp", "--http", "--port", "0"],
        env=server_env(web, home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the first line names the address it listens on
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if match:
            return proc, match.group(1)
    proc.kill()
    raise AssertionError(f"the server did not start (exit {proc.wait()})")


@pytest.fixture
def http_server(web: OfflineWeb, tmp_path: Path) -> Iterator[str]:
    proc, url = _start_http_server(web, tmp_path)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow
async def test_http_server_on_loopback(web: OfflineWeb, http_server: str) -> None:
    assert http_server.startswith("http://127.0.0.1:")
    # DNS rebinding: a request naming another host is refused before it reaches a tool.
    async with httpx.AsyncClient() as plain:
        rebound = await plain.post(
            http_server,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
        )
    assert rebound.status_code == 421
    async with (
        streamable_http_client(http_server) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        result, progress = await research_with_progress(
            client, web.topics[3].question, depth=1, max_sources=2
        )
        assert not result.isError, text_of(result)
        assert_cited_report(text_of(result))
        assert any(message.startswith("fetched:") for message in progress)


PORT = 8123
#: (Origin header, allowed?) for a request sent to http://127.0.0.1:PORT.
ORIGINS = [
    (None, True),  # not a browser, or a browser's same-origin GET
    (f"http://127.0.0.1:{PORT}", True),
    (f"http://localhost:{PORT + 1}", False),  # another local server's page
    (f"http://127.0.0.1:{PORT + 1}", False),
    (f"https://127.0.0.1:{PORT}", False),
    ("http://evil.example", False),
    ("null", False),  # a sandboxed frame or a file:// page
]


@pytest.mark.parametrize(("origin", "allowed"), ORIGINS)
def test_one_origin_rule_for_sleuth_serve_and_mcp_http(
    web: OfflineWeb, origin: str | None, allowed: bool
) -> None:
    """A page in the browser of the user, on another origin, reaches neither server."""
    from starlette.testclient import TestClient

    from sleuth.web.app import create_app

    headers = {"Content-Type": "application/json", **({"Origin": origin} if origin else {})}
    base = f"http://127.0.0.1:{PORT}"
    with TestClient(create_app(offline_settings(web)), base_url=base) as page:
        # Not JSON: past the Origin check, the body is refused (400) and no run starts.
        served = page.post("/api/runs", content=b"{", headers=headers)
    with TestClient(mcp_server.http_app(offline_settings(web), PORT), base_url=base) as mcp:
        listed = mcp.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
    assert (served.status_code != 403) == allowed, served.text
    assert (listed.status_code != 403) == allowed, listed.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"topic": "x", "depth": 0}, "depth must be 1, 2 or 3"),
        ({"topic": "x", "depth": 4}, "depth must be 1, 2 or 3"),
        ({"topic": "x", "depth": "deep"}, "valid integer"),
        ({"topic": "x", "max_sources": 0}, "max_sources must be at least 1"),
        ({"topic": "x", "mode": "deeper"}, "mode must be 'quick' or 'deep'"),
        ({"topic": "   "}, "the question is empty"),
        ({"topic": "?!"}, "no words"),
        ({}, "topic"),
    ],
)
async def test_bad_arguments_are_tool_errors(
    web: OfflineWeb, args: dict[str, Any], message: str
) -> None:
    async with in_memory(offline_settings(web)) as client:
        result = await client.call_tool("web_research", args)
        assert result.isError and message in text_of(result)


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("web_research", {"topic": "x", "depth": "2"}, "valid integer"),
        ("web_research", {"topic": "x", "depth": True}, "valid integer"),
        ("web_research", {"topic": "x", "depth": 2.0}, "valid integer"),
        ("web_research", {"topic": "x", "max_sources": "5"}, "valid integer"),
        ("web_research", {"topic": "x", "colour": "blue"}, "Extra inputs are not permitted"),
        ("web_research", {"topic": ["x"]}, "valid string"),
        ("fetch_page", {"url": "http://a.example/", "timeout": 1}, "Extra inputs"),
    ],
)
async def test_arguments_are_checked_strictly_against_the_advertised_schema(
    web: OfflineWeb, tool: str, args: dict[str, Any], message: str
) -> None:
    """No coercion and no unknown keys: what the schema says is what is accepted."""
    web.reset_log()
    async with in_memory(offline_settings(web)) as client:
        schemas = {t.name: t.inputSchema for t in (await client.list_tools()).tools}
        assert all(schema["additionalProperties"] is False for schema in schemas.values())
        result = await client.call_tool(tool, args)
    assert result.isError and message in text_of(result)
    assert web.requests == []  # refused before any search or fetch


async def test_the_server_names_sleuths_version_and_counts_in_good_english(web: OfflineWeb) -> None:
    """The client sees sleuth's version (it saw the MCP library's, 1.30.0) and the
    progress says "plan: 1 query" (it said "1 queries")."""
    import sleuth

    async with in_memory(offline_settings(web)) as client:
        hello = await client.initialize()
        assert hello.serverInfo.name == "sleuth"
        assert hello.serverInfo.version == sleuth.__version__
        result, progress = await research_with_progress(
            client, web.topics[0].question, depth=1, max_sources=1
        )
    assert not result.isError
    plan = [message for message in progress if message.startswith("plan:")]
    assert plan == ["plan: 1 query"]
    assert "report: report with 1 source" in progress


async def test_max_sources_is_capped_at_ten_as_grip_does(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sleuth.pipeline.quick import research

    asked: dict[str, Any] = {}

    async def fake_research(topic: str, **kwargs: Any) -> Any:
        asked.update(kwargs)
        return await research(topic, settings=kwargs["settings"], depth=1, max_sources=1)

    monkeypatch.setattr(quick, "research", fake_research)
    async with in_memory(offline_settings(web)) as client:
        result = await client.call_tool(
            "web_research", {"topic": web.topics[0].question, "depth": 3, "max_sources": 50}
        )
    assert not result.isError
    assert asked["max_sources"] == 10 and asked["depth"] == 3


@pytest.mark.slow
async def test_deep_mode_through_mcp_writes_a_sectioned_report(web: OfflineWeb) -> None:
    async with in_memory(offline_settings(web)) as client:
        result, progress = await research_with_progress(
            client, web.topics[3].question, mode="deep", max_sources=40
        )
    assert not result.isError
    markdown = text_of(result)
    assert markdown.startswith("# Research:") and "## Contents" in markdown
    sources = {int(n) for n in re.findall(r"^\[(\d+)\] \[", markdown, re.MULTILINE)}
    assert sources and max(sources) <= 30  # deep mode's cap over MCP
    assert any(message.startswith("branch:") for message in progress)


class GateSearch:
    """A SearXNG on loopback whose every search waits until the test opens the gate; it
    keeps the words of each query it was asked."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.queries: list[str] = []
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                gate.queries.append(parse_qs(urlsplit(self.path).query).get("q", [""])[0])
                gate.open.wait(WAIT_S)
                body = b'{"results": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def topics_seen(self, words: list[str]) -> set[str]:
        return {word for word in words for query in list(self.queries) if word in query}

    def close(self) -> None:
        self.open.set()
        self.server.shutdown()
        self.server.server_close()


WAIT_S = 60.0


def enough(queued: dict[str, list[str]], running: set[str]) -> bool:
    return sum(map(bool, queued.values())) >= 2 or len(running) >= 3


async def test_research_calls_past_the_limit_wait_their_turn_and_are_told_so() -> None:
    """Four research calls at once from one client: two run, two wait (each told so in a
    progress notification), then every one gets its report."""
    gate = GateSearch()
    words = ["zqalpha", "zqbravo", "zqcharlie", "zqdelta"]
    settings = load_settings(
        {
            "search": "searxng",
            "searxng_url": gate.url,
            "search_timeout": WAIT_S,
            "no_store": True,
            "no_llm": True,
        },
        env={},
    )
    queued: dict[str, list[str]] = {word: [] for word in words}
    results: dict[str, CallToolResult] = {}
    try:
        async with in_memory(settings) as client:

            async def call(word: str) -> None:
                async def progress(done: float, total: float | None, message: str | None) -> None:
                    if (message or "").startswith("queued:"):
                        queued[word].append(message or "")

                results[word] = await client.call_tool(
                    "web_research",
                    {"topic": f"history of the {word} bridge", "depth": 1},
                    progress_callback=progress,
                )

            async with anyio.create_task_group() as group:
                for word in words:
                    group.start_soon(call, word)
                # Until two calls are told to wait, or a third reaches the search (the
                # gate is another thread's: polled).
                with anyio.fail_after(WAIT_S):
                    while not enough(queued, gate.topics_seen(words)):  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                running = gate.topics_seen(words)
                waiting = {word for word, notes in queued.items() if notes}
                gate.open.set()
    finally:
        gate.close()
    assert len(running) <= 2, running
    assert mcp_server.MAX_RUNS == 2
    assert len(waiting) == 2 and not waiting & running, (waiting, running)
    note = queued[next(iter(waiting))][0]
    assert "at most 2 at once" in note, note
    assert all(not result.isError for result in results.values()), results
    assert gate.topics_seen(words) == set(words)


async def test_fetch_page_goes_through_the_guard(web: OfflineWeb) -> None:
    async with in_memory(offline_settings(web, allow_private_urls=False)) as client:
        blocked = await client.call_tool("fetch_page", {"url": web.docs[0].url})
        assert blocked.isError and "refused" in text_of(blocked)
        scheme = await client.call_tool("fetch_page", {"url": "file:///etc/passwd"})
        assert scheme.isError and "http" in text_of(scheme)
    async with in_memory(offline_settings(web)) as client:
        doc = web.doc(web.topics[0].expected[0])
        page = await client.call_tool("fetch_page", {"url": doc.url})
        assert not page.isError and text_of(page).startswith(f"# {doc.title}")
        missing = await client.call_tool("fetch_page", {"url": web.hostile["not_found"]})
        assert missing.isError and "HTTP 404" in text_of(missing)


async def test_web_search_tool_only_with_a_model_and_the_agent(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, Settings]] = []

    class Result:
        def to_markdown(self) -> str:
            return "# Agent search: found it [1]"

    async def fake_agent(goal: str, *, settings: Settings, on_event: Any) -> Result:
        calls.append((goal, settings))
        on_event(Event("info", "round 1"))
        return Result()

    monkeypatch.setattr(mcp_server, "agent_function", lambda: fake_agent)
    async with in_memory(offline_settings(web)) as client:  # --no-llm: no model
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "web_search" not in names
    with_model = offline_settings(
        web, no_llm=False, base_url="http://127.0.0.1:9/v1", model="small"
    )
    async with in_memory(with_model) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "web_search" in names
        messages: list[str] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")

        result = await client.call_tool(
            "web_search", {"query": "who won?"}, progress_callback=progress
        )
        assert not result.isError and text_of(result) == "# Agent search: found it [1]"
        assert messages == ["info: round 1"] and calls[0][0] == "who won?"
        empty = await client.call_tool("web_search", {"query": " "})
        assert empty.isError


def test_agent_function_is_found_when_agent_mode_is_installed() -> None:
    fn = mcp_server.agent_function()
    try:
        import sleuth.agent as agent
    except ImportError:
        assert fn is None
    else:
        assert fn is getattr(agent, "web_search", None)


def test_cli_rejects_a_port_without_http(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["mcp", "--port", "9000"]) == 2
    assert "--port goes with --http" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "extra", "modules"),
    [
        (["mcp"], "mcp", ["mcp", "mcp.server", "mcp.server.fastmcp"]),
        (["serve", "--port", "0"], "web", ["starlette", "uvicorn"]),
    ],
)
def test_a_missing_extra_is_named_in_one_line(
    argv: list[str],
    extra: str,
    modules: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sleuth

    monkeypatch.delattr(sleuth, "mcp_server", raising=False)
    monkeypatch.delitem(sys.modules, "sleuth.mcp_server", raising=False)
    for name in modules:  # None in sys.modules: "import name" raises ImportError
        monkeypatch.setitem(sys.modules, name, None)
    assert run(argv) == 2
    err = capsys.readouterr().err
    from sleuth._extras import install_hint

    # The hint installs the extra where sleuth came from (here: this checkout).
    assert install_hint(extra) in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("web_research", {}, "topic: required"),
        ("web_research", {"topic": "x", "depth": "2"}, "depth: Input should be a valid integer"),
        (
            "web_research",
            {"topic": "x", "colour": "blue"},
            "colour: Extra inputs are not permitted",
        ),
        ("fetch_page", {}, "url: required"),
    ],
)
async def test_an_argument_the_schema_refuses_is_one_line_without_a_url(
    web: OfflineWeb, tool: str, args: dict[str, Any], message: str
) -> None:
    """As every other bad argument: one line naming the argument, not pydantic's report
    (several lines and a link to its docs)."""
    async with in_memory(offline_settings(web)) as client:
        result = await client.call_tool(tool, args)
    assert result.isError
    text = text_of(result)
    assert "\n" not in text and "http" not in text and message in text, text
