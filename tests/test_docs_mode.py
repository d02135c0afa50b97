"""Documents mode end to end: ``sleuth --docs DIR "question"``.

A folder of mixed documents (HTML, Markdown, text, reStructuredText, a real PDF, a
corrupt PDF, a file that cannot be read) is researched through the CLI. Every
socket connection is refused and logged during documents-only runs, which is how
"never touches the network" is shown.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from records import note

from sleuth.cli import run
from sleuth.store import Store
from sleuth.testing import OfflineWeb

DATA = Path(__file__).parent / "data" / "docs"

GUIDE_HTML = """<!doctype html><html><head><title>Sourdough baking guide</title></head>
<body><nav>Home | Recipes</nav><article><h1>Sourdough baking guide</h1>
<p>A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in flour
and water. Feed the starter every day and keep it warm so the yeast stays active.</p>
<p>Bulk fermentation of a sourdough loaf takes four to six hours at room temperature.</p>
</article></body></html>"""
STARTER_MD = """# Keeping a sourdough starter

A sourdough starter needs flour and water every day. A starter kept in the fridge is fed
once a week; its wild yeast slows down in the cold.
"""
OVEN_TXT = """Baking sourdough in a home oven

Bake a sourdough loaf in a covered pot so the steam keeps the crust soft while it rises.
"""
PROOF_RST = """Proofing sourdough
==================

Proofing a shaped sourdough loaf overnight in the fridge develops flavour.
"""
QUESTION = "How do you keep a sourdough starter and bake sourdough bread?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "my docs"
    note(docs / "guide.html", GUIDE_HTML)
    note(docs / "starter.md", STARTER_MD)
    note(docs / "oven.txt", OVEN_TXT)
    note(docs / "sub" / "proofing.rst", PROOF_RST)
    shutil.copy(DATA / "list-item-example.pdf", docs / "module.pdf")
    return docs


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse (and log) every socket connection and name lookup while the test runs."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args[1:] if args and isinstance(args[0], socket.socket) else args)
        raise OSError("network use in documents mode")

    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        # A Unix socket never leaves the machine: the extraction workers' forkserver.
        if sock.family == getattr(socket, "AF_UNIX", None):
            return real_connect(sock, address)
        return refuse(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield attempts


def research_docs(folder: Path, home: Path, out: Path, *extra: str) -> dict[str, Any]:
    code = run(
        [
            "--docs",
            str(folder),
            "--home",
            str(home),
            "--no-llm",
            "--quiet",
            "--format",
            "json",
            "-o",
            str(out),
            *extra,
            QUESTION,
        ]
    )
    assert code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _gaps(report: dict[str, Any]) -> str:
    return str(report["markdown"]).split("## Gaps", 1)[1]


def test_a_folder_is_researched_without_the_network_and_bad_files_are_gaps(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage\n")
    private = note(folder / "private.md", "# Private sourdough notes\nstarter secrets")
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # EACCES for any user, root included
        if self.name == private.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    report = research_docs(folder, tmp_path / "home", tmp_path / "report.json")
    assert no_network == [], f"documents mode used the network: {no_network}"
    urls = [s["url"] for s in report["sources"]]
    assert len(urls) >= 3 and all(u.startswith("file://") for u in urls)
    assert all(s["quality"] == "PRIMARY" for s in report["sources"])
    root = folder.resolve().as_uri()
    assert {root + "/starter.md", root + "/guide.html"} <= set(urls)
    gaps = _gaps(report)
    assert f"<{root}/broken.pdf> — could not index: unreadable PDF" in gaps
    assert f"<{root}/private.md> — could not index: permission denied" in gaps
    assert report["confidence"] == "HIGH"
    assert "wild yeast" in report["markdown"]
    with Store(tmp_path / "home") as store:
        [summary] = store.list_runs()
        assert summary.status == "done" and summary.sources == len(urls)
        [indexed] = store.stages(summary.id, "documents")
        assert len(indexed.payload["failed"]) == 2


def test_a_changed_file_is_the_only_one_read_again(
    folder: Path, tmp_path: Path, extraction_spy: Callable[[], list[str]], no_network: list[Any]
) -> None:
    home = tmp_path / "home"
    research_docs(folder, home, tmp_path / "first.json")
    starter = folder / "starter.md"
    note(starter, STARTER_MD.replace("once a week", "every Sunday with rye flour"))
    stat = starter.stat()
    os.utime(starter, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))

    read = extraction_spy()
    second = research_docs(folder, home, tmp_path / "second.json")
    assert read == ["starter.md"]
    assert "every Sunday with rye flour" in second["markdown"], "the new text was not used"
    assert no_network == []


def test_no_store_indexes_in_a_scratch_folder(
    folder: Path, tmp_path: Path, no_network: list[Any]
) -> None:
    home = tmp_path / "home"
    report = research_docs(folder, home, tmp_path / "report.json", "--no-store")
    assert report["sources"] and report["run_id"] is None
    assert not home.exists()
    assert no_network == []


def test_local_and_web_are_searched_together(web: OfflineWeb, tmp_path: Path) -> None:
    topic = web.topics[0]
    docs = tmp_path / "docs"
    note(
        docs / "stadia.md",
        f"# My notes on Stadia\n\n{topic.question} Google Stadia is a "
        "cloud game streaming service; my notes on its launch.\n",
    )
    web.reset_log()
    out = tmp_path / "report.json"
    assert (
        run(
            [
                "--docs",
                str(docs),
                "--search",
                "local,searxng",
                "--searxng-url",
                web.searxng_url,
                "--allow-private-urls",
                "--timeout",
                "2",
                "--no-llm",
                "--home",
                str(tmp_path / "home"),
                "--quiet",
                "--format",
                "json",
                "-o",
                str(out),
                topic.question,
            ]
        )
        == 0
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    urls = [s["url"] for s in report["sources"]]
    assert urls[0] == (docs.resolve() / "stadia.md").as_uri()
    assert any(u.startswith("http://") for u in urls), "the web was not searched alongside"
    assert any(r.path == "/search" for r in web.requests)


def test_documents_mode_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--docs", str(tmp_path / "missing"), "--no-llm", QUESTION]) == 2
    assert run(["--search", "local", "--no-llm", QUESTION]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, "a run was started (or a traceback printed) before the error"
    assert err[0].startswith("sleuth: error: ") and str(tmp_path / "missing") in err[0]
    assert err[1].startswith("sleuth: error: search provider 'local' needs a documents folder")


def test_a_folder_with_nothing_on_the_question_says_so(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_network: list[Any]
) -> None:
    """The report said "see Gaps" and Gaps said every source could be read: now it says
    that nothing in the folder matched (or that the folder holds nothing to read)."""
    out = tmp_path / "report.json"
    for docs, said in (
        (folder, f"nothing in the documents folder {folder} matched the question"),
        (
            tmp_path / "empty",
            f"the documents folder {tmp_path / 'empty'} holds no file sleuth can read",
        ),
    ):
        docs.mkdir(exist_ok=True)
        assert (
            run(
                [
                    "--docs",
                    str(docs),
                    "--home",
                    str(tmp_path / "home"),
                    "--no-llm",
                    "--quiet",
                    "--format",
                    "json",
                    "-o",
                    str(out),
                    "How does the Rust borrow checker work?",
                ]
            )
            == 1
        )
        report = json.loads(out.read_text(encoding="utf-8"))
        assert report["sources"] == []
        assert [f["reason"] for f in report["failures"]] == [said]
        gaps = _gaps(report)
        assert "Every source that was tried could be read" not in gaps
        assert said.replace(str(tmp_path), "") in gaps.replace(
            str(tmp_path).replace("_", "\\_"), ""
        )
    assert no_network == []
