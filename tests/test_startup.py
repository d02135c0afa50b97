"""What a run loads before it needs it: bad input is refused before the heavy imports."""

import subprocess
import sys
from pathlib import Path

import pytest

# Loaded by a research run, never needed to refuse its question.
HEAVY = (
    "asyncio",
    "httpx",
    "openai",
    "pydantic",
    "sqlite3",
    "trafilatura",
    "lxml",
    "rich",
    "sleuth.settings",
    "sleuth.pipeline",
)


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "the question is empty"),
        (" \t\n ", "the question is empty"),
        ("?!?!", "the question has no words in it"),
        ("x" * 5000, "characters long"),
    ],
)
def test_bad_question_is_refused_before_heavy_imports(
    question: str, message: str, tmp_path: Path
) -> None:
    code = (
        "import sys\nfrom sleuth.cli import run\n"
        f"code = run([{question!r}, '--depth', '2'])\n"
        f"print('EXIT', code, sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.stdout.splitlines()[-1] == "EXIT 2 []", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sleuth: error: ") and message in lines[0]


@pytest.mark.slow
def test_the_pipeline_loads_neither_fetching_nor_extraction_before_the_first_search(
    tmp_path: Path,
) -> None:
    """What a run needs to send its first search: not the fetcher, its SSRF guard, the
    extraction workers, the HTML/PDF stack, the model SDK, or the stages that come after
    the searches (each loads when first used)."""
    later = (
        "lxml",
        "trafilatura",
        "pypdf",
        "pebble",
        "multiprocessing",
        "openai",
        "bm25s",
        "sleuth.fetch.fetcher",
        "sleuth.fetch.guard",
        "sleuth.extraction.workers",
        "sleuth.extraction.documents",
        "sleuth.llm.client",
        "sleuth.stages.select",
        "sleuth.stages.relevance",
        "sleuth.stages.write",
        "sleuth.stages.check",
    )
    code = (
        "import sys\nimport sleuth.cli, sleuth.pipeline.quick, sleuth.search\n"
        f"print('LOADED', sorted(m for m in {later!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.stdout.splitlines()[-1] == "LOADED []", proc.stderr
