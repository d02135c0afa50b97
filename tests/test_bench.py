"""The benchmarks' own arithmetic and rules (bench/): what a figure in bench/README.md
means depends on them, and none of them needs the benchmark data."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # bench/ is beside the package, not installed with it
    sys.path.insert(0, str(REPO))

from bench.chain import PATH_PARTS, chain, path, waste  # noqa: E402


def _req(kind: str, key: str, start: float, end: float, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "key": key, "start": start, "end": end, **more}


def _llm(stage: str, key: str, start: float, end: float) -> dict[str, Any]:
    return {"kind": "llm", "stage": stage, "key": key, "start": start, "end": end}


# -- the chain and the waste (bench/chain.py) --------------------------------------------------
def test_the_chain_without_a_model_is_start_up_slowest_search_and_slowest_cited_page() -> None:
    log = [
        _req("search", "q1", 100.2, 100.7),
        _req("search", "q2", 100.2, 101.0),  # the slowest search: 0.8 s
        _req("search", "q3", 100.3, 103.0, left=True),  # left unanswered: not a search made
        _req("page", "A", 101.0, 102.0),
        _req("page", "B", 101.0, 103.5),  # the slowest cited page: 2.5 s
        _req("page", "C", 101.0, 108.0),  # slower, but not cited
    ]
    got = chain(log, ["A", "B"], started=100.0)
    assert got.parts == pytest.approx(
        {"start-up": 0.2, "plan": 0.0, "search": 0.8, "page": 2.5, "reading": 0.0, "report": 0.0}
    )
    assert got.total == pytest.approx(3.5)


def test_the_chain_with_a_model_takes_the_cited_page_slowest_with_its_reading() -> None:
    log = [
        _llm("plan", "", 10.1, 11.1),
        _req("search", "q1", 11.2, 11.8),
        _req("page", "A", 12.0, 15.0),  # 3.0 s, read in 0.5 s: 3.5
        _req("page", "B", 12.0, 13.0),  # 1.0 s, read in 1.5 + 1.0 s: 3.5 + merge = 4.0
        _llm("summarize", "A", 15.0, 15.5),
        _llm("summarize", "B", 13.0, 13.5),
        _llm("summarize", "B", 13.0, 14.5),  # chunks run at once: the slowest counts
        _llm("merge", "B", 14.5, 15.5),
        _llm("report", "", 16.0, 18.0),
    ]
    got = chain(log, ["A", "B"], started=10.0)
    assert got.parts == pytest.approx(
        {"start-up": 0.1, "plan": 1.0, "search": 0.6, "page": 1.0, "reading": 2.5, "report": 2.0}
    )
    assert got.total == pytest.approx(7.2)


def test_waste_counts_only_the_wait_for_uncited_pages_after_the_last_cited_one() -> None:
    log = [
        _req("page", "A", 0.0, 2.0),  # the last cited page arrives at 2.0
        _req("page", "C", 1.0, 5.0, left=True),  # not cited, waited for until 4.0 (read)
        _req("page", "D", 0.5, 1.5),  # not cited, but done before A arrived
    ]
    assert waste(log, ["A"], read_at=4.0) == pytest.approx(2.0)
    # Nothing was waited for once the sources were read.
    assert waste(log, ["A"], read_at=2.0) == pytest.approx(0.0)


def test_waste_does_not_count_time_a_cited_page_was_being_summarised() -> None:
    log = [
        _req("page", "A", 0.0, 2.0),
        _llm("summarize", "A", 2.0, 3.0),  # cited work: the run was not waiting in vain
        _req("page", "C", 1.0, 4.0),
        _llm("summarize", "C", 4.0, 4.5),  # read, then not cited: wasted too
    ]
    assert waste(log, ["A"], read_at=6.0) == pytest.approx(1.5)


def test_a_run_that_cites_nothing_wastes_nothing_by_this_measure() -> None:
    assert waste([_req("page", "C", 0.0, 5.0)], [], read_at=6.0) == 0.0


def test_the_path_of_the_last_cited_page_adds_up_to_the_wall_time() -> None:
    """The wall time cut along the last cited page read (B), from the run's events and the
    world's log: each part is the time between two of its marks, and they add up."""
    log = [_req("search", "q1", 100.1, 100.6), _req("page", "A", 100.7, 101.0)]
    log.append(_req("page", "B", 101.4, 102.0))
    span = {"kind": "extract", "name": "B", "start": 2.2, "end": 2.5}  # 0.3 s of extraction
    events = [
        (100.65, "fetch_start", {"url": "A"}),
        (101.2, "fetched", {"url": "A"}),
        (101.3, "fetch_start", {"url": "B"}),  # asked once A was read: 0.65 s later
        (102.5, "span", span),
        (102.55, "fetched", {"url": "B"}),
        (102.6, "read", {}),
        (102.9, "report", {}),
    ]
    got = path(log, events, ["A", "B"], started=100.0, ended=103.0)
    assert got is not None and list(got) == list(PATH_PARTS)
    assert got == pytest.approx(
        {
            "start-up": 0.1,
            "searching": 0.55,
            "asked later": 0.65,
            "download": 0.7,
            "extract wait": 0.2,
            "extract": 0.3,
            "gather end": 0.1,
            "answer+write": 0.3,
            "finish": 0.1,
        }
    )
    assert sum(got.values()) == pytest.approx(3.0)
    assert path(log, events, [], started=100.0, ended=103.0) is None


# -- the splits (bench/splits.py) --------------------------------------------------------------
def test_every_question_is_in_one_split_and_the_new_test_questions_are_frozen() -> None:
    from bench.splits import HOTPOTQA, RELEVANCE_CORPUS, RELEVANCE_TEST, TIMING_TEST
    from bench.topics import CANDIDATES, TIMING_SETS

    indices = [i for split in ("tune", "dev", "test") for i in HOTPOTQA[split]]
    assert sorted(indices) == list(range(100))
    corpus = [q for ids in RELEVANCE_CORPUS.values() for q in ids]
    assert len(corpus) == len(set(corpus)) == 4 + 3 + 11
    assert len(RELEVANCE_TEST) >= 15 and len({aeb for aeb, _ in RELEVANCE_TEST}) == 20
    timing = [label for label, _ in TIMING_SETS["heavy"] + TIMING_SETS["heldout"]]
    assert not set(TIMING_TEST) & set(timing)
    assert set(TIMING_TEST) <= {label for label, _, _ in CANDIDATES}


def test_the_test_split_runs_only_through_final(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import answer_baseline, batch, determinism, extraction, relevance, run
    from bench.splits import TestSplitRefused, chosen

    with pytest.raises(TestSplitRefused):
        chosen(["dev", "test"])
    assert chosen(["dev", "test"], final=True) == ("dev", "test")
    mains = (run.main, relevance.main, extraction.main, batch.main, determinism.main)
    for main in (*mains, answer_baseline.main):
        assert main(["--split", "test"]) == 2
        err = capsys.readouterr().err
        assert "--final" in err and "Traceback" not in err


def test_the_answer_table_shows_the_bar_beside_the_whole_report() -> None:
    from bench.answer import Row, table

    row = Row("deep", "dev", questions=25, scored=19, answer_holds=17, whole_holds=19)
    row.answer_tokens, row.report_tokens = [200], [2700]
    plain = table([row])
    assert "before the Answer" not in plain
    row.before = "18/19"
    lines = table([row]).splitlines()
    assert "whole report before the Answer" in lines[0]
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[3:6] == ["17/19 (89%)", "19/19 (100%)", "18/19"]
    assert len(cells) == lines[1].count("|") - 1


def test_extraction_sites_keep_tune_and_cut_the_old_held_out_in_two() -> None:
    import hashlib

    from bench.splits import site_split

    hosts = [f"site{n}.example" for n in range(2000)]
    got = [site_split(f"https://www.{h}/page", "id") for h in hosts]
    for host, split in zip(hosts, got, strict=True):
        bucket = int(hashlib.sha256(host.encode()).hexdigest()[:8], 16) % 100
        assert (split == "tune") == (bucket < 70)  # the tune split the model was trained on
    assert 0.12 < got.count("dev") / len(got) < 0.18
    assert 0.12 < got.count("test") / len(got) < 0.18


# -- the world's hosts (bench/hosts.py, bench/world.py) ----------------------------------------
def test_pages_go_to_their_real_sites_host() -> None:
    from dataclasses import dataclass

    from bench.hosts import assign_sites

    @dataclass
    class Page:
        kind: str
        key: str
        origin: str = ""
        site: str = ""

    pages = [
        Page("hotpotqa", "Demon Dice", "https://en.wikipedia.org/wiki/Demon_Dice"),
        Page("readability", "wikipedia-2", "https://en.wikipedia.org/wiki/Mozilla"),
        Page("aeb", "a1", "https://www.nytimes.com/2019/11/18/business/x.html"),
        Page("postlight", "nytimes.com", "https://nytimes.com"),
        Page("readability", "nytimes-4"),  # no URL: its name says nytimes
        Page("readability", "rtl-2"),  # no URL, and no site of that name
    ]
    assign_sites(pages)
    assert [p.site for p in pages] == [
        "wikipedia.org",
        "wikipedia.org",
        "nytimes.com",
        "nytimes.com",
        "nytimes.com",
        "rtl.example",
    ]


def _corpus_world(tmp_path: Path, hosts: str) -> Any:
    from bench.latency import Latency
    from bench.world import World

    # No shared data: the tests' corpus of saved articles alone, latencies off.
    w = World(Latency(scale=0.0), data=tmp_path, kinds=("corpus",), hosts=hosts)
    w.bind()
    return w


async def test_the_world_serves_a_sites_pages_from_one_host(tmp_path: Path) -> None:
    import httpx

    w = _corpus_world(tmp_path, "site")
    try:
        space = [p for p in w.pages if p.site == "space.com"]
        assert len(space) == 2  # NASA's moon landers and Europa's water vapour
        hosts = {httpx.URL(p.url).netloc for p in space}
        assert len(hosts) == 1  # one address and port: one host to sleuth's per-host rules
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=w.app)) as client:
            for page in space:
                got = await client.get(page.url)
                assert got.status_code == 200 and got.content == page.body()
            missing = await client.get(f"http://{hosts.pop().decode()}/no-such-page")
            assert missing.status_code == 404
        assert len({httpx.URL(p.url).netloc for p in w.pages}) < len(w.pages)
    finally:
        for sock in w.sockets:
            sock.close()


def test_the_old_world_gives_every_page_a_host_of_its_own(tmp_path: Path) -> None:
    import httpx

    w = _corpus_world(tmp_path, "page")
    try:
        assert len({httpx.URL(p.url).host for p in w.pages}) == len(w.pages)
    finally:
        for sock in w.sockets:
            sock.close()


# -- --final and the parts' registry (bench/run.py, bench/parts.py, bench/final.py) ------------
def _seen_part(ctx: Any) -> Any:
    """A registered part for the test below: it says what it was run with."""
    from bench.parts import Figures

    return Figures(
        f"{ctx.heading('Seen')}\n\nsplit={ctx.split} final={ctx.final}\n", {"limit": ctx.limit}
    )


def test_final_runs_a_registered_part_on_the_test_split_and_dates_its_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from bench import run
    from bench.parts import Part

    data = tmp_path / "data"
    (data / "hotpotqa").mkdir(parents=True)
    monkeypatch.setattr(run, "data_dir", lambda: data)
    monkeypatch.setattr(run, "verify", lambda names: None)
    # Adding a part is one registration:
    parts = (Part("seen", f"{__name__}:_seen_part", world=False),)
    monkeypatch.setattr(run, "PARTS", parts)
    monkeypatch.setattr("bench.parts.PARTS", parts)

    out = tmp_path / "figures"
    assert run.main(["--final", "--limit", "2", "--out", str(out)]) == 0
    assert "split=test final=True" in capsys.readouterr().out
    (json_file,) = out.glob("final-*.json")
    record = json.loads(json_file.read_text("utf-8"))
    p = record["provenance"]
    assert (p["split"], p["seed"], p["final"], p["limit"]) == ("test", 8, True, 2)
    assert p["command"] == f"python -m bench --final --limit 2 --out {out}"
    assert p["date"][:10] in json_file.name and len(p["commit"]) in (0, 40)
    assert record["parts"]["seen"]["data"] == {"limit": 2}
    markdown = json_file.with_suffix(".md").read_text("utf-8")
    assert "## Seen (test split; seed 8; --limit 2)" in markdown
    assert "not figures to quote" in markdown  # a run cut short says so

    # Without --final the same part gets the tune split, and writes nothing unasked.
    assert run.main(["--limit", "1"]) == 0
    assert "split=tune final=False" in capsys.readouterr().out


def test_page_times_are_printed_against_trafilatura_with_defaults_and_fast() -> None:
    from bench.pagetime import PageTime, table

    times = [
        PageTime("u1", 1_000, sleuth=0.012, trafilatura=0.010, trafilatura_fast=0.006),
        PageTime("u2", 900_000, sleuth=0.100, trafilatura=0.200, trafilatura_fast=0.125),
    ]
    text = table(times)
    assert "trafilatura fast median" in text
    # all pages: medians 56 / 105 / 65.5 ms: sleuth / trafilatura 0.53, / fast 0.85
    assert "| all fetched | 2 | 56 / 100 / 100 | 105 / 200 / 200 | 66 / 125 / 125 |" in text
    assert "**0.53**, **0.50** | **0.85**, **0.80** |" in text


def test_a_batch_asks_only_questions_of_its_split(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench import batch
    from bench.topics import split_questions

    def hotpot_split(split: str, limit: int | None = None) -> list[dict[str, Any]]:
        return [
            {"question": f"{split} q{n}?", "context": [[f"{split} P{n}", []], ["Shared", []]]}
            for n in range(2)
        ]

    monkeypatch.setattr(batch, "hotpot_split", hotpot_split)
    got = batch.batch_questions(10, "dev")
    timing = [q for _, q in split_questions("dev")]
    assert got[: len(timing)] == timing
    assert (
        got[len(timing) :]
        == [
            "dev q0?",
            "dev q1?",
            "What is known about dev P0?",
            "What is known about Shared?",
            "What is known about dev P1?",
        ][: 10 - len(timing)]
    )


def test_batch_manners_count_the_starts_closer_than_the_host_delay() -> None:
    from bench.batch_log import manners

    log = [
        _req("page", "http://127.10.0.1:80/a", 0.00, 1.0),
        _req("page", "http://127.10.0.1:80/b", 0.25, 1.0),
        _req("page", "http://127.10.0.1:80/c", 0.30, 1.0),  # 0.05 s after b: too close
        _req("page", "http://127.10.0.1:80/a", 0.60, 1.0),  # a again: a duplicate
        _req("page", "http://127.10.0.2:80/x", 0.31, 1.0),  # another host: no gap to count
        {"kind": "search", "key": "q", "start": 0.0, "end": 1.0},
    ]
    got = manners(log, host_delay=0.2)
    assert (got.fetches, got.duplicates, got.pairs, got.close) == (5, 1, 3, 1)
    assert got.smallest == pytest.approx(0.05)
    assert got.busiest == ("127.10.0.1", 4)
