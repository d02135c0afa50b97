"""``sleuth library``: list, search, export and forget, on a store a real run filled."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from records import no_model_cli

from sleuth.cli import run
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.urls import host_of

WEWORK = "Why is the New York attorney general investigating WeWork and its founder Adam Neumann?"


@pytest.fixture
def home(web: OfflineWeb, tmp_path: Path) -> Iterator[Path]:
    """A store one research on WeWork filled."""
    out = tmp_path / "report.json"
    assert run(no_model_cli(web, tmp_path, "--format", "json", "-o", str(out), WEWORK)) == 0
    yield tmp_path


def on_disk(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.glob("sleuth.db*")))


def investigation(home: Path) -> str:
    with Store(home) as store:
        return next(p.url for p in store.list_library() if "wework-investigation" in p.url)


def test_list_shows_each_page_with_its_age(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert run(["library", "list", "--home", str(home), "--format", "json"]) == 0
    pages = json.loads(capsys.readouterr().out)
    assert investigation(home) in {p["url"] for p in pages}
    assert all(p["age_s"] >= 0 and p["read_at"].endswith("Z") for p in pages)
    assert run(["library", "list", "--home", str(home)]) == 0
    table = capsys.readouterr().out
    assert re.search(r"^\s+\d+s\s+\d{4}-\d\d-\d\d\s+\d+\s+.*wework-investigation", table, re.M)


def test_list_filters_by_site_and_date(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = host_of(investigation(home))
    capsys.readouterr()
    run(["library", "list", "--home", str(home), "--site", site, "--format", "json"])
    assert {host_of(p["url"]) for p in json.loads(capsys.readouterr().out)} == {site}
    run(["library", "list", "--home", str(home), "--older-than", "2000-01-01"])
    assert capsys.readouterr().out == "no pages\n"


def test_search_finds_a_page_by_its_words(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert (
        run(
            [
                "library",
                "search",
                "attorney general WeWork",
                "--home",
                str(home),
                "--format",
                "json",
            ]
        )
        == 0
    )
    found = json.loads(capsys.readouterr().out)
    assert found and any("wework" in p["url"] for p in found[:3])
    assert all(p["snippet"] for p in found)


def test_export_jsonl_and_markdown(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "library.jsonl"
    assert run(["library", "export", "--home", str(home), "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    page = next(r for r in rows if r["url"] == investigation(home))
    assert "Neumann" in page["text"] and page["read_at"]
    folder = tmp_path / "md"
    assert (
        run(["library", "export", "--home", str(home), "--format", "markdown", "-o", str(folder)])
        == 0
    )
    files = sorted(folder.glob("*.md"))
    assert len(files) == len(rows)
    text = next(f for f in files if "wework-investigation" in f.name).read_text(encoding="utf-8")
    assert text.startswith("---\ntitle: ") and f'url: "{page["url"]}"' in text
    assert page["text"] in text


def test_forget_a_site_removes_its_text_from_the_database_file(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = investigation(home)
    with Store(home) as store:
        text = next(p.text for p in store.library_texts() if p.url == url)
        report = json.dumps(store.get_run(store.list_runs(1)[0].id).report, ensure_ascii=False)
    # Sentences of the page its report did not quote (a report keeps what it quoted).
    sentences = [
        s.strip()
        for s in re.split(r"(?<=[.!?])\s+", text)
        if len(s.strip()) > 40 and s.strip() not in report
    ][:8]
    assert len(sentences) >= 3
    before = on_disk(home)
    assert all(s.encode() in before for s in sentences)

    capsys.readouterr()
    assert run(["library", "forget", "--home", str(home), "--site", host_of(url)]) == 0
    assert capsys.readouterr().out.startswith("forgot 1 page")

    after = on_disk(home)
    assert [s for s in sentences if s.encode() in after] == []
    with Store(home) as store:
        assert (
            store.search_library("attorney general WeWork investigation", site=host_of(url)) == []
        )
        assert store.integrity_check() == "ok"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to forget"),
        (["--older-than", "last tuesday"], "invalid date or age 'last tuesday'"),
    ],
)
def test_forget_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["library", "forget", "--home", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_markdown_export_needs_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["library", "export", "--home", str(tmp_path), "--format", "markdown"]) == 2
    assert "--output DIR" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--library", "--no-library"], "invalid value for --library: not with --no-library"),
        (
            ["--library", "--no-store"],
            "invalid value for --library: it is in the store, which --no-store leaves out",
        ),
    ],
)
def test_library_options_that_contradict_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run([*args, "--no-llm", "What is WeWork?"]) == 2
    assert capsys.readouterr().err == f"sleuth: error: {message}\n"
