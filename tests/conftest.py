"""Shared fixtures: one offline web (real pages, hostile pages, search) per test session."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import settings

from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.web import COSTLY

# The suite starts many Python processes (the xdist workers, CLI subprocesses, servers, the
# extraction workers' forkserver), each importing sleuth: with PYTHONDONTWRITEBYTECODE set,
# every one of them compiled sleuth and the test modules anew (seconds of CPU each time).
# Here the caches are written (``__pycache__``, git-ignored) and read by all that follow.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

# Generated inputs (hypothesis): a few dozen examples a property in the everyday run, a
# thousand under HYPOTHESIS_PROFILE=thorough (before a release, or to chase a bug).
settings.register_profile("default", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

CORPUS_DIR = Path(__file__).parent / "data" / "corpus"
SERVICES_DIR = Path(__file__).parent / "data" / "services"

#: The model name the scripted endpoint serves (tests pass it as ``model=``).
MODEL = "scripted-model"


@pytest.fixture(autouse=True)
def sleuth_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh run store for every test: nothing ever reaches the user's real cache.

    ``XDG_CACHE_HOME`` too, for subprocesses started without the ``SLEUTH_*`` variables.
    """
    home = tmp_path_factory.mktemp("sleuth-home")
    monkeypatch.setenv("SLEUTH_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg"))
    return home


#: Model settings a developer's shell may hold; no test may inherit them.
LLM_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SLEUTH_BASE_URL",
    "SLEUTH_MODEL",
    "SLEUTH_PLAN_MODEL",
    "SLEUTH_SUMMARY_MODEL",
    "SLEUTH_REPORT_MODEL",
    "SLEUTH_NO_LLM",
    "SLEUTH_CONTEXT_WINDOW",
    "OLLAMA_CONTEXT_LENGTH",
)


@pytest.fixture(scope="session")
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections (bound, never listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture(autouse=True)
def no_model(closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test uses a model unless it configures one: no inherited key, and Ollama
    detection (which runs when nothing is configured) finds nothing instead of
    reaching a real Ollama on 127.0.0.1:11434. Subprocesses inherit ``OLLAMA_HOST``."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{closed_port}")


@pytest.fixture(autouse=True)
def no_long_wait_for_the_top_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline web's slow-drip and endless pages rank first for some topics: the wait
    for a best-ranked page (``--top-wait``, 3 s) would add half a minute to the suite.
    Set as the user would (``SLEUTH_TOP_WAIT``), so in-process CLI runs, the web page and
    the MCP server get it too; the waits themselves are tested in test_llm_stages.py."""
    monkeypatch.setenv("SLEUTH_TOP_WAIT", "0")


@pytest.fixture(scope="session")
def web() -> Iterator[OfflineWeb]:
    """A started ``OfflineWeb`` over ``tests/data/corpus``, shared by the whole session.

    Its search leaves out the costly hostile pages: the floods (seconds of extraction
    each: a research on the moons topic paid for all three) and the slow drip (a research
    on the Stadia topic waited for it until its page deadline). They are served at
    ``web.hostile`` all the same; a test that wants them in its searches uses
    :func:`full_web`.
    Tests that read the request log call ``web.reset_log()`` themselves; tests that
    change ``latency`` or ``search_failures`` put them back when they are done.
    """
    with OfflineWeb(CORPUS_DIR, unlisted=COSTLY) as world:
        yield world


@pytest.fixture(scope="session")
def full_web() -> Iterator[OfflineWeb]:
    """The offline web whose search finds every hostile page, the costly ones included
    (started the first time a test asks for it)."""
    with OfflineWeb(CORPUS_DIR) as world:
        yield world


@pytest.fixture
def llm(web: OfflineWeb) -> Iterator[ScriptedLLM]:
    """A fresh scripted endpoint behind ``web.llm_url`` for this test only, so one
    test's replies and recorded requests never leak into another's."""
    previous, web.llm = web.llm, ScriptedLLM(models=[MODEL])
    try:
        yield web.llm
    finally:
        web.llm = previous


@pytest.fixture
def error_line(capsys: pytest.CaptureFixture[str]) -> Callable[[], str]:
    """Reads the single ``sleuth: error:`` line the last command printed, checking that
    nothing went to stdout and that no traceback was shown."""

    def read() -> str:
        out, err = capsys.readouterr()
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("sleuth: error: ") and "Traceback" not in err
        return lines[0]

    return read


@pytest.fixture
def extraction_spy(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """Call it to start recording the names of the files the documents index extracts
    (what a reindex really read, as opposed to what it took from the index)."""
    from sleuth.extraction import documents

    def start() -> list[str]:
        names: list[str] = []
        real_extract = documents.extract_document

        def spy(path: Path, data: bytes, *args: Any) -> Any:
            names.append(path.name)
            return real_extract(path, data, *args)

        monkeypatch.setattr(documents, "extract_document", spy)
        return names

    return start


# --- loopback stand-ins for arXiv, NCBI, Semantic Scholar, Wikipedia and GitHub ---------


@dataclass
class Canned:
    """One recorded answer: a file of tests/data/services (or a body), status, headers."""

    file: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    content_type: str = ""

    def read(self, rewrite: dict[str, str]) -> bytes:
        data = (SERVICES_DIR / self.file).read_bytes() if self.file else self.body
        for old, new in rewrite.items():
            data = data.replace(old.encode(), new.encode())
        return data

    def kind(self) -> str:
        if self.content_type:
            return self.content_type
        suffix = Path(self.file).suffix
        return {
            ".json": "application/json",
            ".xml": "application/atom+xml",
            ".html": "text/html; charset=utf-8",
        }.get(suffix, "text/plain; charset=utf-8")


@dataclass
class Asked:
    """A request the stand-ins received."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]


class Services:
    """The specialised services' APIs on one loopback server, answering recorded answers.

    Each path answers its queue of :class:`Canned` answers in turn, the last one for
    every later request. ``rewrite`` replaces strings in every answer (a test points the
    services' page links at this server). ``options`` are the settings that point sleuth
    at these stand-ins.
    """

    PATHS: ClassVar[dict[str, str]] = {
        "arxiv": "/arxiv/api/query",
        "esearch": "/eutils/esearch.fcgi",
        "efetch": "/eutils/efetch.fcgi",
        "s2": "/graph/v1/paper/search",
        "wikipedia": "/{lang}/w/api.php",
        "github": "/github/search/repositories",
        "github-code": "/github/search/code",
    }

    def __init__(self) -> None:
        self.routes: dict[str, list[Canned]] = {}
        self.rewrite: dict[str, str] = {}
        self.asked: list[Asked] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.answer("arxiv", Canned("arxiv_feed.xml"))
        self.answer("esearch", Canned("pubmed_esearch.json"))
        self.answer("efetch", Canned("pubmed_efetch.xml", content_type="text/xml"))
        self.answer("s2", Canned("s2_search.json"))
        self.answer("/en/w/api.php", Canned("wikipedia_search.json"))
        self.answer("github", Canned("github_repositories.json"))
        self.answer("github-code", Canned("github_code.json"))
        self.answer("/abs/2004.04906v3", Canned("arxiv_abs.html"))

    @property
    def options(self) -> dict[str, str]:
        base = self.base_url
        return {
            "arxiv_url": f"{base}/arxiv/api/query",
            "pubmed_url": f"{base}/eutils",
            "semantic_scholar_url": f"{base}/graph/v1",
            "wikipedia_url": f"{base}/{{lang}}/w/api.php",
            "github_url": f"{base}/github",
        }

    def answer(self, where: str, *answers: Canned) -> None:
        """Answer ``where`` (a key of :data:`PATHS`, or a path) with ``answers`` in turn."""
        with self.lock:
            self.routes[self.PATHS.get(where, where)] = list(answers)

    def requests(self, where: str) -> list[Asked]:
        """The requests received at ``where`` (a key of :data:`PATHS`, or a path)."""
        path = self.PATHS.get(where, where)
        with self.lock:
            return [a for a in self.asked if a.path == path]

    def _next(self, path: str) -> Canned | None:
        with self.lock:
            queue = self.routes.get(path)
            if not queue:
                return None
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        services = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                with services.lock:
                    services.asked.append(Asked(parts.path, params, dict(self.headers)))
                canned = services._next(parts.path)
                if canned is None:
                    canned = Canned(status=404, body=b"not found")
                body = canned.read(services.rewrite)
                self.send_response(canned.status)
                self.send_header("Content-Type", canned.kind())
                self.send_header("Content-Length", str(len(body)))
                for name, value in canned.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> Services:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def services() -> Iterator[Services]:
    """Loopback stand-ins for the specialised services (a new server, so new pacing
    keys, for every test: no test waits for another's turns)."""
    with Services() as stand_ins:
        yield stand_ins


@pytest.fixture
def every_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests written around every call a run can make (the model chooses the results,
    summarises each page): they ask for them as a user would (``SLEUTH_SELECT=model``,
    ``SLEUTH_SUMMARIES=always``). Every other test runs under the shipped defaults."""
    monkeypatch.setenv("SLEUTH_SELECT", "model")
    monkeypatch.setenv("SLEUTH_SUMMARIES", "always")
