"""Shared fixtures: one offline web (real pages, hostile pages, search) per test session."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM

CORPUS_DIR = Path(__file__).parent / "data" / "corpus"

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

    Tests that read the request log call ``web.reset_log()`` themselves; tests that
    change ``latency`` or ``search_failures`` put them back when they are done.
    """
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


@pytest.fixture(autouse=True)
def every_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's model tests were written around every call a run can make (the model
    chooses the results, summarises each page): they keep asking for them, as a user
    would (``SLEUTH_SELECT``, ``SLEUTH_SUMMARIES``). The defaults, which ask the model
    only to plan and write when the judgement is clear and the passages fit, are
    tested in test_fewer_calls.py, which sets them explicitly."""
    monkeypatch.setenv("SLEUTH_SELECT", "model")
    monkeypatch.setenv("SLEUTH_SUMMARIES", "always")
