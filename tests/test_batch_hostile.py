"""``sleuth batch`` meeting what an attacker can plant: a questions file written by someone
else (lines that set options, lines too long, input that never ends) and an output folder
holding links. Every case is one line and exit 2 before anything runs, or one question's
failure; nothing is written outside OUTDIR, no request goes where a line points.

Processes that would hang on the old code (a FIFO, a pipe never closed) run as
subprocesses with a generous liveness bound; nothing waits a fixed time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sleuth._names import fold_name
from sleuth.cli import run
from sleuth.testing import OfflineWeb

#: Seconds a subprocess batch may take before it is taken for hung (a liveness bound).
HUNG_S = 120.0
posix_only = pytest.mark.skipif(os.name != "posix", reason="links and FIFOs as POSIX has them")


def web_args(web: OfflineWeb, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        # Loopback pages, and a machine that may be loaded: no page should miss its deadline.
        "--timeout",
        "10",
        "--no-llm",
        *extra,
    ]


def batch(web: OfflineWeb, questions: Path | str, outdir: Path, *extra: str) -> int:
    return run(["batch", str(questions), "-o", str(outdir), *web_args(web, *extra)])


def cli(
    web: OfflineWeb, args: list[str], stdin: Any = subprocess.DEVNULL, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sleuth", "batch", *args, *web_args(web)],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
    )


def finish(proc: subprocess.Popen[bytes]) -> tuple[int, list[str]]:
    """The exit code and stderr lines of ``proc``; a hang past HUNG_S fails the test.
    Its stdin is left as it is (communicate() would close it)."""
    try:
        proc.wait(timeout=HUNG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the batch was still running after {HUNG_S:g} s") from None
    finally:
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stderr.close()
    return proc.returncode, err.decode("utf-8", "replace").strip().splitlines()


def lines_of(outdir: Path) -> list[dict[str, Any]]:
    text = (outdir / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sleuth: error: "), lines
    return lines[0]


# ---------------------------------------------------------------- links in OUTDIR


@posix_only
@pytest.mark.parametrize("planted", ["results.jsonl", ".lock", "reports"])
def test_a_link_planted_in_the_output_folder_is_refused_and_nothing_is_written_outside(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str
) -> None:
    qfile = tmp_path / "q.txt"
    qfile.write_text(web.topics[0].question + "\n", "utf-8")
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    victim = outside / ("victims-folder" if planted == "reports" else "victim.txt")
    if planted == "reports":
        victim.mkdir()
    else:
        victim.write_text("the user's own file\n", "utf-8")
    (out / planted).symlink_to(victim)
    capsys.readouterr()
    assert batch(web, qfile, out) == 2
    line = one_error_line(capsys.readouterr().err)
    assert planted in line and "link" in line
    if planted == "reports":
        assert list(victim.iterdir()) == []
    else:
        assert victim.read_text("utf-8") == "the user's own file\n"
    assert sorted(p.name for p in outside.iterdir()) == [victim.name]


@posix_only
def test_a_link_dangling_to_outside_is_never_created_through(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link to a file that does not exist yet: following it would create that file."""
    qfile = tmp_path / "q.txt"
    qfile.write_text(web.topics[0].question + "\n", "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.jsonl", ".lock"):
        (out / name).unlink(missing_ok=True)  # made by the batch the link before refused
        (out / name).symlink_to(tmp_path / f"created-by-{name}")
        assert batch(web, qfile, out) == 2
        assert name in one_error_line(capsys.readouterr().err)
        assert not (tmp_path / f"created-by-{name}").exists()
        (out / name).unlink()


@pytest.mark.slow
@posix_only
def test_a_link_in_place_of_a_report_is_replaced_not_followed(
    web: OfflineWeb, tmp_path: Path
) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "first", "question": web.topics[0].question}) + "\n")
    out = tmp_path / "out"
    (out / "reports").mkdir(parents=True)
    victim = tmp_path / "victim.md"
    victim.write_text("keep me\n", "utf-8")
    (out / "reports" / "first.md").symlink_to(victim)
    assert batch(web, qfile, out) == 0
    report = out / "reports" / "first.md"
    assert not report.is_symlink() and report.read_text("utf-8").startswith("# Research")
    assert victim.read_text("utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "q.jsonl", "victim.md"]


# ---------------------------------------------------------------- what a line may set


@pytest.mark.slow
def test_a_line_sets_only_its_own_research_options(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Settings that choose where requests go or what is read from disk belong to the
    whole batch: a line setting one fails alone, before any request of its own."""
    q = [topic.question for topic in web.topics]
    internal = web.base_url + "/internal"
    refused = {
        "searxng_url": internal,
        "search": "searxng,duckduckgo",
        "quality_rules": str(tmp_path / "rules.toml"),
        "base_url": internal + "/v1",
        "allow_domains": "example.org",
        "respect_robots": False,
        "user_agent": "another",
        "max_rounds": 3,
    }
    rows = [{"id": "allowed", "question": q[0], "depth": 1, "max_sources": 2, "words": 300}]
    rows += [{"id": name, "question": q[1], name: value} for name, value in refused.items()]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    out = tmp_path / "out"
    web.reset_log()
    assert batch(web, qfile, out) == 1
    got = {line["id"]: line for line in lines_of(out)}
    assert got["allowed"]["status"] == "done"
    for name in refused:
        assert got[name]["status"] == "failed", name
        assert "applies to the whole batch" in got[name]["error"], got[name]["error"]
    assert not [r for r in web.requests if r.path.startswith("/internal")]


@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("where", ["line", "batch"])
def test_quality_rules_that_are_not_a_regular_file_are_never_read(
    web: OfflineWeb, tmp_path: Path, where: str
) -> None:
    """A FIFO would hang the batch (nothing writes to it); /dev/zero would never end."""
    fifo = tmp_path / "rules.fifo"
    os.mkfifo(fifo)
    qfile = tmp_path / "q.jsonl"
    rows = [{"id": "ok", "question": web.topics[0].question}]
    if where == "line":
        rows.append({"id": "fifo", "question": web.topics[1].question, "quality_rules": str(fifo)})
    qfile.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    out = tmp_path / "out"
    extra = [] if where == "line" else ["--quality-rules", str(fifo)]
    code, err = finish(cli(web, [str(qfile), "-o", str(out), *extra]))
    if where == "line":
        assert code == 1, err
        got = {line["id"]: line for line in lines_of(out)}
        assert got["ok"]["status"] == "done"
        assert "--quality-rules applies to the whole batch" in got["fifo"]["error"]
        return
    assert code == 2 and len(err) == 1 and "not a regular file" in err[0], err
    code, err = finish(cli(web, [str(qfile), "-o", str(out), "--quality-rules", "/dev/zero"]))
    assert code == 2 and len(err) == 1 and "not a regular file" in err[0], err


# ---------------------------------------------------------------- long and endless input


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("q.txt", "x" * (200 * 1024) + "?\nWhat is WAL?\n", "line 1"),
        (
            "q.jsonl",
            '{"question": "What is WAL?"}\n{"question": "' + "y" * 140_000 + '"}\n',
            "line 2",
        ),
        ("q.csv", 'question\n"' + ("z" * 1000 + "\n") * 140 + '"\n', "line 2"),
        ("q.csv", "question,id\n" + "w" * 140_000 + ",1\n", "line 2"),
    ],
)
def test_a_line_too_long_is_one_line_and_exit_2(
    web: OfflineWeb,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: str,
    where: str,
) -> None:
    qfile = tmp_path / name
    qfile.write_text(content, "utf-8")
    out = tmp_path / "out"
    web.reset_log()
    assert batch(web, qfile, out) == 2
    line = one_error_line(capsys.readouterr().err)
    assert where in line and "128 KiB" in line, line
    assert not out.exists() and web.requests == []


def test_the_batch_time_budget_covers_reading_input_that_never_ends(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """Questions from a pipe whose writer never closes it: the batch ends at its budget."""
    out = tmp_path / "out"
    proc = cli(web, ["-", "-o", str(out), "--batch-max-time", "3"], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(f"{web.topics[0].question}\n".encode())
    proc.stdin.flush()
    try:
        code, err = finish(proc)
    finally:
        proc.stdin.close()
    assert code == 1, err
    assert any("stopped reading stdin at line 2" in line for line in err), err
    assert any("--batch-max-time 3s" in line for line in err), err
    assert not (out / "results.jsonl").exists() or lines_of(out) == []


def test_a_huge_input_past_the_budget_is_counted_not_listed(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """200,000 questions and a budget spent at once: one line says why the rest is not
    started (not a line each), and the summary counts them."""
    qfile = tmp_path / "q.txt"
    with qfile.open("w", encoding="utf-8") as handle:
        for n in range(200_000):
            handle.write(f"What happened in the year {n}?\n")
    out = tmp_path / "out"
    capsys.readouterr()
    code = batch(web, qfile, out, "--batch-max-time", "0.001")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) <= 3, err[:5]
    assert err[-1].startswith("batch: 0 done, 0 failed, ") and " skipped" in err[-1]


# ---------------------------------------------------------------- report names


@pytest.mark.slow
def test_report_names_are_unique_whatever_the_file_system(web: OfflineWeb, tmp_path: Path) -> None:
    """Ids whose report names are one name somewhere: a hash-suffixed name and the id it
    was made from, two ids apart only in case, in normalisation or an invisible character."""
    q = [topic.question for topic in web.topics]
    ids = ["../collide", "collide-599561b7", "Acme", "acme", "caf\u00e9", "cafe\u0301", "a\u200bb"]
    ids += ["ab"]
    rows = [{"id": qid, "question": q[n % len(q)], "max_sources": 1} for n, qid in enumerate(ids)]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--jobs", "4") == 0
    got = {line["id"]: line for line in lines_of(out)}
    assert set(got) == set(ids)
    files = [got[qid]["report_file"] for qid in ids]
    folded = Counter(fold_name(name) for name in files)
    assert max(folded.values()) == 1, folded
    for qid in ids:
        text = (out / got[qid]["report_file"]).read_text("utf-8")
        assert text == got[qid]["report"]["markdown"], qid
    # A rerun adding a question keeps the names and gives the new one its own.
    rows.append({"id": "ACME", "question": q[0], "max_sources": 1})
    qfile.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    assert batch(web, qfile, out) == 0
    again = {line["id"]: line for line in lines_of(out)}
    assert {qid: again[qid]["report_file"] for qid in ids} == dict(zip(ids, files, strict=True))
    assert fold_name(again["ACME"]["report_file"]) not in folded
