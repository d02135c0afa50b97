"""``sleuth batch`` and ``sleuth.research_many`` on the offline web: text, JSONL and CSV
questions, per-question options, bad lines and bad input, resuming after a kill, retrying
failed questions, the batch's budgets, and manners toward a site across questions.

A kill is detected by polling ``results.jsonl`` for a finished question, never by
sleeping a fixed time.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from killed import kill_after_lines

import sleuth
from sleuth.cli import run
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import ScriptedResearcher

CORPUS_DIR = Path(__file__).parent / "data" / "corpus"


def web_args(web: OfflineWeb, *extra: str) -> list[str]:
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "2",
        *extra,
    ]


def batch(web: OfflineWeb, questions: Path | str, outdir: Path, *extra: str) -> int:
    return run(["batch", str(questions), "-o", str(outdir), *web_args(web, *extra)])


def results(outdir: Path) -> list[dict[str, Any]]:
    text = (outdir / "results.jsonl").read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), "results.jsonl ends in a cut line"
    return [json.loads(line) for line in text.splitlines()]


def by_id(outdir: Path) -> dict[str, dict[str, Any]]:
    lines = results(outdir)
    ids = [line["id"] for line in lines]
    assert len(ids) == len(set(ids)), f"a question is in results.jsonl twice: {ids}"
    return {line["id"]: line for line in lines}


def page_requests(web: OfflineWeb) -> list[str]:
    main = urlsplit(web.base_url).netloc
    return [f"http://{r.host}{r.path}" for r in web.requests if r.host != main]


def questions(web: OfflineWeb, n: int) -> list[str]:
    return [topic.question for topic in web.topics[:n]]


# ---------------------------------------------------------------- inputs


@pytest.mark.slow
def test_a_text_file_gives_a_report_per_question_each_its_own_run(
    web: OfflineWeb, tmp_path: Path, sleuth_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = questions(web, 4)
    qfile = tmp_path / "questions.txt"
    qfile.write_text("# to research this week\n\n" + "\n\n".join(asked) + "\n", "utf-8")
    out = tmp_path / "out"
    web.reset_log()
    assert batch(web, qfile, out, "--no-llm", "--jobs", "4") == 0
    lines = results(out)
    assert sorted(line["question"] for line in lines) == sorted(asked)
    for line in lines:
        assert line["status"] == "done" and line["error"] is None
        assert line["sources"] == len(line["report"]["sources"]) > 0
        assert line["report"]["topic"] == line["question"]
        markdown = (out / line["report_file"]).read_text(encoding="utf-8")
        assert markdown == line["report"]["markdown"] and markdown.startswith("# Research")
    # Each question is its own run in the store, as `sleuth runs` lists them.
    with Store(sleuth_home) as store:
        runs = {r.id: r for r in store.list_runs()}
    assert {r.question for r in runs.values()} == set(asked)
    assert {line["report"]["run_id"] for line in lines} == set(runs)
    assert all(r.status == "done" for r in runs.values())
    # A page two questions need is fetched once (in flight together, or from the cache).
    corpus = [url for url in page_requests(web) if url in web.page_urls]
    assert corpus and len(corpus) == len(set(corpus)), Counter(corpus).most_common(3)
    err = capsys.readouterr().err
    assert "batch: 4 done, 0 failed, 0 skipped" in err


def test_jsonl_lines_carry_their_own_options_and_bad_lines_fail_alone(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = questions(web, 5)
    lines = [
        json.dumps({"id": "few", "question": q[0], "max_sources": 2}),
        json.dumps({"id": 7, "question": q[1], "depth": 1, "max-sources": 3}),
        "{not json",
        json.dumps({"id": "blank", "question": "   "}),
        json.dumps({"id": "typo", "question": q[2], "max_source": 3}),
        json.dumps({"id": "wide", "question": q[3], "home": str(tmp_path / "elsewhere")}),
        json.dumps({"id": "bad-value", "question": q[4], "depth": 9}),
        json.dumps(["a", "list"]),
    ]
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("\n".join(lines) + "\n", "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 1
    got = by_id(out)
    assert len(got) == len(lines)
    # Each line's own max_sources bounds its sources (the relevance gate may cite fewer).
    assert got["few"]["status"] == "done" and 0 < len(got["few"]["report"]["sources"]) <= 2
    assert got["7"]["status"] == "done" and got["7"]["report"]["depth"] == 1
    assert 2 <= len(got["7"]["report"]["sources"]) <= 3
    failures = {qid: line["error"] for qid, line in got.items() if line["status"] == "failed"}
    assert failures.keys() == {"line-3", "blank", "typo", "wide", "bad-value", "line-8"}
    assert "line 3: not JSON" in failures["line-3"]
    assert "no question" in failures["blank"]
    assert "unknown option 'max_source'" in failures["typo"]
    assert "--home applies to the whole batch" in failures["wide"]
    assert "invalid value for depth: must be at most 3" in failures["bad-value"]
    assert "not a JSON object" in failures["line-8"]
    assert not (tmp_path / "elsewhere").exists()
    reports = sorted(p.name for p in (out / "reports").iterdir())
    assert reports == ["7.md", "few.md"]
    assert "batch: 2 done, 6 failed" in capsys.readouterr().err


@pytest.mark.slow
def test_csv_from_stdin_with_id_and_option_columns(
    web: OfflineWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = questions(web, 2)
    data = (f'ID,Question,max_sources\nfirst,"{q[0]}",1\nsecond,"{q[1]}",\n').encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    out = tmp_path / "out"
    assert batch(web, "-", out, "--no-llm", "--format", "json") == 0
    got = by_id(out)
    assert len(got["first"]["report"]["sources"]) == 1
    # An empty cell is the batch's default (5; the relevance gate may cite fewer), not 1.
    assert 1 < len(got["second"]["report"]["sources"]) <= 5
    saved = json.loads((out / "reports" / "first.json").read_text("utf-8"))
    assert saved == got["first"]["report"] and (out / "reports" / "first.md").exists()


def test_the_same_question_twice_is_asked_once(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = questions(web, 1)[0]
    qfile = tmp_path / "q.txt"
    qfile.write_text(f"{q}\n{q}\n", "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 0
    assert len(results(out)) == 1
    assert "line 2 repeats line 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("", [], "holds no questions"),
        ("# only a comment\n\n", [], "holds no questions"),
        (None, [], "cannot read"),
        ("DIR", [], "it is a folder"),
        (
            '{"id": "a", "question": "one?"}\n{"id": "a", "question": "two?"}\n',
            [],
            "line 2: id 'a' is already used on line 1",
        ),
        ("id,topic\n1,what?\n", ["--format", "markdown"], "no 'question' column"),
        (b"caf\xe9 au lait?\n", [], "not UTF-8 text"),
        ("What is WAL?\n", ["OUTFILE"], "it is a file"),
        ("What is WAL?\n", ["--jobs", "0"], "--jobs"),
        ("What is WAL?\n", ["--batch-max-time", "soon"], "invalid duration"),
        ("What is WAL?\n", ["--batch-max-cost", "0"], "--batch-max-cost must be more than 0"),
        ("What is WAL?\n", ["--depth", "9"], "invalid value for --depth"),
        ("What is WAL?\n", ["--search", "nosuch"], "unknown search provider 'nosuch'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(
    web: OfflineWeb,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | bytes | None,
    extra: list[str],
    message: str,
) -> None:
    qfile = tmp_path / ("questions.csv" if "topic" in str(content) else "questions.txt")
    if content == "DIR":
        qfile.mkdir()
    elif isinstance(content, bytes):
        qfile.write_bytes(content)
    elif content is not None:
        qfile.write_text(content, "utf-8")
    out = tmp_path / "out"
    if extra == ["OUTFILE"]:
        out.write_text("not a folder", "utf-8")
        extra = []
    web.reset_log()
    assert batch(web, qfile, out, "--no-llm", *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sleuth: error: "), err
    assert message in err[0]
    assert not out.is_dir(), "OUTDIR was made for a batch that could not run"
    assert web.requests == []


# ---------------------------------------------------------------- resuming


@pytest.mark.slow
def test_a_rerun_skips_what_is_done_and_cuts_a_torn_last_line(
    web: OfflineWeb, tmp_path: Path, sleuth_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = questions(web, 3)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked[:2]) + "\n", "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 0
    first = by_id(out)
    # As a kill in the middle of writing the third line would leave it.
    whole = (out / "results.jsonl").read_bytes()
    torn = json.dumps(
        {"id": "x", "question": asked[2], "status": "done", "report": {"markdown": "# cut"}}
    ).encode()
    (out / "results.jsonl").write_bytes(whole + torn[: len(torn) // 2])
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    capsys.readouterr()
    web.reset_log()
    assert batch(web, qfile, out, "--no-llm") == 0
    got = by_id(out)
    assert set(got) == set(first) | {next(iter(set(got) - set(first)))} and len(got) == 3
    assert {line["question"] for line in got.values()} == set(asked)
    assert {k: got[k] for k in first} == first, "a question done before was redone"
    assert "batch: 1 done, 0 failed, 2 skipped (2 done before)" in capsys.readouterr().err
    with Store(sleuth_home) as store:
        assert Counter(r.question for r in store.list_runs()) == Counter(asked)


@pytest.mark.slow
def test_a_batch_killed_mid_way_completes_on_rerun_every_question_once(
    web: OfflineWeb, tmp_path: Path, sleuth_home: Path
) -> None:
    asked = questions(web, 6)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    out = tmp_path / "out"
    args = ["batch", str(qfile), "-o", str(out), *web_args(web, "--no-llm", "--jobs", "2")]
    web.latency = 0.3  # seconds a page: the batch is mid-way for a while
    try:
        kill_after_lines(args, out / "results.jsonl", 1, tmp_path)
    finally:
        web.latency = 0.0
    done_before = set(by_id(out))
    assert 1 <= len(done_before) < len(asked)
    assert run(args) == 0
    got = by_id(out)
    assert {line["question"] for line in got.values()} == set(asked)
    assert all(line["status"] == "done" for line in got.values())
    with Store(sleuth_home) as store:
        done = Counter(r.question for r in store.list_runs() if r.status == "done")
    # Finished before the kill: not researched again; in flight at the kill: once more.
    assert done == Counter(asked)


@pytest.mark.slow
def test_failed_questions_are_skipped_until_retry_failed(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    q = questions(web, 2)
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(
        json.dumps({"id": "ok", "question": q[0]})
        + "\n"
        + json.dumps({"id": "fix-me", "question": q[1], "depth": 7})
        + "\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 1
    assert by_id(out)["fix-me"]["status"] == "failed"
    # The user fixes the line; a plain rerun leaves the failed question alone.
    qfile.write_text(
        json.dumps({"id": "ok", "question": q[0]})
        + "\n"
        + json.dumps({"id": "fix-me", "question": q[1], "depth": 1})
        + "\n",
        "utf-8",
    )
    capsys.readouterr()
    web.reset_log()
    assert batch(web, qfile, out, "--no-llm") == 1
    assert web.requests == [] and by_id(out)["fix-me"]["status"] == "failed"
    assert "1 failed before (--retry-failed runs them again)" in capsys.readouterr().err
    assert batch(web, qfile, out, "--no-llm", "--retry-failed") == 0
    got = by_id(out)
    assert got["fix-me"]["status"] == "done" and got["fix-me"]["report"]["depth"] == 1
    assert got["ok"]["status"] == "done" and len(got) == 2


def test_a_question_without_sources_is_no_sources_counted_apart_and_retried(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A question no page answers is not "done": its line says ``no_sources``, the summary
    counts it apart, and --retry-failed runs it again (as a failed one)."""
    q = questions(web, 1)
    qfile = tmp_path / "q.jsonl"
    nothing = "Qwzxv plorbing frindlewack zzyzx?"  # no page of the offline web has these words
    qfile.write_text(
        json.dumps({"id": "ok", "question": q[0]})
        + "\n"
        + json.dumps({"id": "none", "question": nothing})
        + "\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 1  # not every question has a report
    got = by_id(out)
    assert got["ok"]["status"] == "done" and got["ok"]["sources"] >= 1
    assert got["none"]["status"] == "no_sources" and got["none"]["sources"] == 0
    assert got["none"]["error"].startswith("no sources")
    err = capsys.readouterr().err
    assert "batch: 1 done, 1 no sources, 0 failed, 0 skipped" in err
    assert re.search(r"\] done ok \([\d.]+ s, 1 source\b", err) or "sources)" in err
    assert "1 sources" not in err
    # A plain rerun leaves it; --retry-failed runs it again.
    assert batch(web, qfile, out, "--no-llm") == 1
    assert "1 failed before (--retry-failed runs them again)" in capsys.readouterr().err
    assert batch(web, qfile, out, "--no-llm", "--retry-failed") == 1
    assert "batch: 0 done, 1 no sources, 0 failed, 1 skipped (1 done before)" in (
        capsys.readouterr().err
    )
    assert by_id(out)["none"]["status"] == "no_sources"


def test_one_source_is_one_source_not_1_sources(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"question": questions(web, 1)[0], "max_sources": 1}) + "\n")
    assert batch(web, qfile, tmp_path / "out", "--no-llm") == 0
    err = capsys.readouterr().err
    assert ", 1 source)" in err and "1 sources" not in err


# ---------------------------------------------------------------- budgets


@pytest.mark.slow
def test_the_batch_time_budget_stops_starting_questions(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = questions(web, 4)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm", "--jobs", "1", "--batch-max-time", "0.001") == 1
    recorded = by_id(out)
    # At most the first question started (with what was left of the batch's time).
    assert len(recorded) <= 1
    # (it ends with its report, which the budget may have left without sources)
    assert all(line["status"] in ("done", "no_sources") for line in recorded.values())
    err = capsys.readouterr().err
    # The budget covers reading the questions too: spent before the file was read, it
    # says so; else the questions read but not started are counted as skipped.
    assert "stopped reading" in err or f"{4 - len(recorded)} skipped" in err
    # Skipped questions are not recorded: a rerun without the budget runs them (and one the
    # budget left without sources, with --retry-failed).
    assert batch(web, qfile, out, "--no-llm", "--retry-failed") == 0
    assert len(by_id(out)) == 4


@pytest.fixture
def priced_llm(web: OfflineWeb) -> Iterator[ScriptedLLM]:
    """A scripted model answering every research prompt as gpt-4o-mini (a known price)."""
    previous, web.llm = web.llm, ScriptedResearcher().install(ScriptedLLM(models=("gpt-4o-mini",)))
    try:
        yield web.llm
    finally:
        web.llm = previous


def test_the_batch_cost_budget_stops_starting_questions(
    web: OfflineWeb, priced_llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = questions(web, 3)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    out = tmp_path / "out"
    code = batch(
        web,
        qfile,
        out,
        "--base-url",
        web.llm_url,
        "--model",
        "gpt-4o-mini",
        "--jobs",
        "1",
        "--batch-max-cost",
        "0.0000001",
    )
    assert code == 1
    recorded = list(by_id(out).values())
    assert len(recorded) == 1, "a question started after the batch's budget was spent"
    report = recorded[0]["report"]
    assert report["stopped_by"] == "cost budget reached (--max-cost $1e-07)"
    assert recorded[0]["cost_usd"] > 0 and recorded[0]["tokens"] > 0
    assert re.search(r"(1 done|0 done, 1 no sources), 0 failed, 2 skipped", capsys.readouterr().err)


# ---------------------------------------------------------------- manners and sharing


@pytest.fixture(scope="module")
def site() -> Iterator[OfflineWeb]:
    """Every corpus page on one site: many pages of one host."""
    with OfflineWeb(CORPUS_DIR, one_site=True) as world:
        yield world


@pytest.mark.slow
def test_one_politeness_clock_per_host_across_questions(site: OfflineWeb, tmp_path: Path) -> None:
    asked = questions(site, 4)
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    out = tmp_path / "out"
    host = urlsplit(site.page_urls[0]).netloc
    site.reset_log()
    delay = 0.3
    assert (
        batch(
            site,
            qfile,
            out,
            "--no-llm",
            "--jobs",
            "4",
            "--host-delay",
            str(delay),
            "--max-pages-per-host",
            "1",
        )
        == 0
    )
    starts = sorted(r.time for r in site.requests if r.host == host)
    gaps = [b - a for a, b in pairwise(starts)]
    # Four questions at once, one site: its requests still come one --host-delay apart
    # (less a little for the time between sending and the server logging the arrival).
    assert len(starts) > 2 and min(gaps) > delay * 0.6, gaps
    # --max-pages-per-host counts the pages each question requests (as in a run, a page
    # already fetched costs the site nothing and is not counted): one each, more in all.
    paths = [r.path for r in site.requests if r.host == host and r.path != "/robots.txt"]
    assert len(paths) == len(set(paths)), "a page was requested twice"
    assert len(paths) > 1, "the cap was counted for the whole batch, not per question"
    lines = results(out)
    # (Whether a question still wants a page of its own once the others' pages are shared
    # depends on arrival order and the relevance gate, so the cap is checked on the log.)
    assert len(paths) <= len(lines), "a question requested more than its one page"
    assert all(line["status"] == "done" and line["report"]["sources"] for line in lines)


@pytest.mark.slow
async def test_research_many_yields_each_question_with_its_own_usage(
    web: OfflineWeb, tmp_path: Path
) -> None:
    web_llm, web.llm = web.llm, ScriptedResearcher().install(ScriptedLLM())
    try:
        asked = questions(web, 3)
        events: list[sleuth.Event] = []
        got = [
            result
            async for result in sleuth.research_many(
                [
                    asked[0],
                    {"id": "second", "question": asked[1], "max_sources": 2},
                    {"question": asked[2], "depth": "deep"},
                ],
                jobs=3,
                on_event=events.append,
                search="searxng",
                searxng_url=web.searxng_url,
                allow_private_urls=True,
                timeout=2,
                home=str(tmp_path / "home"),
                base_url=web.llm_url,
                model="scripted-model",
            )
        ]
        answered = len(web.llm.requests)
    finally:
        web.llm = web_llm
    assert len(got) == 3
    statuses = {r.question: r.status for r in got}
    assert statuses == {asked[0]: "done", asked[1]: "done", asked[2]: "failed"}
    second = next(r for r in got if r.id == "second")
    # Its own max_sources (2), not the batch's 5 (the relevance gate and a busy machine's
    # 2 s page timeout may leave fewer).
    assert second.report is not None and 0 < len(second.report.sources) <= 2
    # Each report counts its own model calls, not the batch's so far (counted so, the
    # second report would hold the first's too and the sum pass what the model answered).
    # A report counts the replies it received: a summary still on its way when gathering
    # ends is cut, sent but not counted, so the model may have answered one or two more.
    done = [r for r in got if r.report is not None]
    calls = [r.report.stats.llm_calls for r in done]  # type: ignore[union-attr]
    assert all(n > 0 for n in calls) and answered - 2 <= sum(calls) <= answered, (calls, answered)
    assert all(r.tokens > 0 for r in done)
    finished = [e.data["question_id"] for e in events if e.kind == "question_done"]
    assert sorted(finished) == sorted(r.id for r in done)
    tagged = {e.data.get("question_id") for e in events if e.kind == "fetched"}
    assert tagged == {r.id for r in done}


@pytest.mark.slow
def test_quiet_prints_the_summary_only(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(questions(web, 2)) + "\n", "utf-8")
    assert batch(web, qfile, tmp_path / "out", "--no-llm", "--quiet") == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("batch: 2 done, 0 failed, 0 skipped"), err


def test_ray_without_the_extra_is_one_line_and_exit_2(
    web: OfflineWeb,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    qfile = tmp_path / "q.txt"
    qfile.write_text("What is WAL?\n", "utf-8")
    assert batch(web, qfile, tmp_path / "out", "--no-llm", "--ray") == 2
    err = capsys.readouterr().err.strip().splitlines()
    # The hint is the command that adds the extra to this install (-e from a checkout).
    from sleuth._extras import install_hint

    hint = install_hint("ray")
    assert err == [f"sleuth: error: --ray needs the 'ray' extra (ray is not installed): {hint}"]
    assert hint.startswith("pip install -e ")
    assert not (tmp_path / "out").exists()


def test_an_id_naming_another_folder_stays_in_reports(web: OfflineWeb, tmp_path: Path) -> None:
    q = questions(web, 1)[0]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(json.dumps({"id": "../../escaped", "question": q}) + "\n", "utf-8")
    out = tmp_path / "out"
    assert batch(web, qfile, out, "--no-llm") == 0
    line = by_id(out)["../../escaped"]
    written = (out / line["report_file"]).resolve()
    assert written.parent == (out / "reports").resolve() and written.suffix == ".md"
    assert not list(tmp_path.glob("escaped*")) and not list(out.glob("escaped*"))


@pytest.mark.slow
def test_a_line_can_ask_for_deep_research_beside_quick_ones(
    web: OfflineWeb, tmp_path: Path
) -> None:
    """Per-line options are any research setting, so ``mode: deep`` works in a batch: that
    question gets its tree and sectioned report, the others stay quick, over one fetcher."""
    q = questions(web, 2)
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text(
        json.dumps(
            {
                "id": "deep",
                "question": q[0],
                "mode": "deep",
                "breadth": 2,
                "levels": 1,
                "max_sources": 4,
            }
        )
        + "\n"
        + json.dumps({"id": "quick", "question": q[1]})
        + "\n",
        "utf-8",
    )
    out = tmp_path / "out"
    web.reset_log()
    assert batch(web, qfile, out, "--no-llm", "--format", "json") == 0
    got = by_id(out)
    deep, quick = got["deep"]["report"], got["quick"]["report"]
    assert deep["mode"] == "deep" and deep["tree"], deep.keys()
    assert {node["level"] for node in deep["tree"]} == {1}
    assert 0 < len(deep["sources"]) <= 4
    assert not quick.get("tree") and quick.get("mode", "quick") == "quick"
    assert (out / "reports" / "deep.json").is_file()
    fetched = Counter(page_requests(web))
    assert not [url for url, n in fetched.items() if n > 1], "a page was fetched twice"


# ---------------------------------------------------------------- which pages are sources


def _corpus_sources(outdir: Path, web: OfflineWeb) -> list[str]:
    [line] = results(outdir)
    assert line["status"] == "done", line["error"]
    return sorted(s["url"] for s in line["report"]["sources"] if s["url"] in web.page_urls)


@pytest.mark.slow
def test_rank_not_the_cache_decides_a_batch_questions_sources(
    web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: the same question in two batches, one with a fresh store and one whose
    cache already holds pages ranked below the best two (read by an earlier run that could
    not reach those): both batches cite the same pages. Arrival order differs between the
    two (cached pages answer at once), so only rank can make them agree, as it must for an
    in-process batch (one shared cache) and Ray workers (a store each) to agree."""
    qfile = tmp_path / "q.txt"
    question = web.topics[0].question
    qfile.write_text(question + "\n", "utf-8")
    two = ("--no-llm", "--max-sources", "2", "--jobs", "1")
    fresh, warm = tmp_path / "fresh", tmp_path / "warm"
    assert batch(web, qfile, fresh, *two, "--home", str(tmp_path / "fresh-home")) == 0
    best = _corpus_sources(fresh, web)
    assert len(best) == 2
    # Another run, denied the best two pages' sites, reads (and caches) the pages below.
    report = sleuth.research_sync(
        question,
        search="searxng",
        searxng_url=web.searxng_url,
        allow_private_urls=True,
        timeout=2,
        home=str(tmp_path / "warm-home"),
        no_llm=True,
        max_sources=20,
        deny_domains=[urlsplit(url).hostname for url in best],
    )
    below = {s.url for s in report.sources}
    assert below and not below & set(best)
    capsys.readouterr()
    assert batch(web, qfile, warm, *two, "--home", str(tmp_path / "warm-home")) == 0
    [line] = results(warm)
    assert line["report"]["stats"]["cached_fetches"] > 0  # the cache answered in this one
    assert _corpus_sources(warm, web) == best
