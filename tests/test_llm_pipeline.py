"""The LLM pipeline end to end: the offline web plus its scripted OpenAI-compatible endpoint.

Every model reply is scripted (``web.llm``, a ScriptedLLM mounted at ``/v1`` on the
offline web's main host); ``ScriptedResearcher`` answers each prompt the way real
models do, and each test overrides only the replies it is about.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.responses import JSONResponse, Response

import sleuth
from sleuth.cli import run
from sleuth.models import Report
from sleuth.progress import Event
from sleuth.stages.plan import SAME_PAGES
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import RecordedRequest, ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher, section

PAGE_TIMEOUT = 5.0
MODEL = "scripted-model"


#: The tests here are about every model call of a run, so the model is asked to choose
#: the results and to summarise each page whatever the judgement and the context would
#: decide (tests/test_fewer_calls.py: the default, which asks it less).
EVERY_CALL = {"summaries": "always", "select": "model"}


def options(web: OfflineWeb, **extra: Any) -> dict[str, Any]:
    """research() keywords for a run against the offline web and its model."""
    return {
        **EVERY_CALL,
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": PAGE_TIMEOUT,
        "base_url": web.llm_url,
        "model": MODEL,
        **extra,
    }


def cli_args(web: OfflineWeb, *extra: str, model: bool = True) -> list[str]:
    args = [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        str(PAGE_TIMEOUT),
    ]
    if model:
        args += ["--base-url", web.llm_url, "--model", MODEL]
        args += ["--summaries", EVERY_CALL["summaries"], "--select", EVERY_CALL["select"]]
    return [*args, *extra]


def stage_of(request: RecordedRequest) -> str:
    """Which prompt a request was (by the phrase each prompt's user message holds)."""
    for name, marker in MARKERS.items():
        if marker in request.last_user:
            return name
    return "other"


def by_stage(llm: ScriptedLLM) -> Counter[str]:
    return Counter(stage_of(r) for r in llm.requests)


def page_requests(web: OfflineWeb) -> Counter[str]:
    main = urlsplit(web.base_url).netloc
    return Counter(
        f"http://{r.host}{r.path}" for r in web.requests if r.method == "GET" and r.host != main
    )


def research(
    web: OfflineWeb, question: str, events: list[Event] | None = None, **extra: Any
) -> Report:
    return sleuth.research_sync(
        question, on_event=events.append if events is not None else None, **options(web, **extra)
    )


def report_body(report: Report) -> str:
    """The model-written part of an LLM report (between the title and the confidence)."""
    return report.markdown.split("\n", 1)[1].split("\n## Confidence", 1)[0]


# -- a whole run ---------------------------------------------------------------------------


@pytest.mark.slow
def test_llm_run_end_to_end_cli_json(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> None:
    ScriptedResearcher().install(llm)
    topic = web.topics[0]
    web.reset_log()
    out = tmp_path / "report.json"
    code = run(cli_args(web, "--quiet", "--format", "json", "-o", str(out), topic.question))
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["planner"], report["writer"]) == ("llm", "llm")
    assert not llm.unmatched

    # MetaGPT's shape, with one select call per round of queries instead of one per
    # query: plan, search, select, refine, search, select, summaries, one report.
    stages = by_stage(llm)
    assert llm.requests[0].last_user.count(MARKERS["plan"]) == 1
    assert stages["plan"] == stages["refine"] == stages["report"] == 1
    assert stages["select"] == 2 < len(report["queries"])
    assert stages["summarize"] >= len(report["sources"]) >= 3
    planned = re.search(r"\[.*\]", ScriptedResearcher().plan(llm.requests[0].body), re.S)
    assert planned is not None
    plan_queries = json.loads(planned.group(0))
    # The question as asked was searched first (issue 26), then the model's queries.
    assert report["queries"][: len(plan_queries) + 1] == [topic.question, *plan_queries]

    # Every source was read once, summarised, and cited by a number sleuth assigned.
    fetched = page_requests(web)
    for n, source in enumerate(report["sources"], start=1):
        assert source["id"] == n and fetched[source["url"]] == 1
        assert source["summary"].startswith("According to the page")
        assert f"[{n}]" in report["markdown"]
        assert f"[{n}] [{source['quality']}]" in report["markdown"].split("## Sources", 1)[1]
    assert f"[{len(report['sources']) + 1}]" not in report["markdown"]

    # Several queries found the same pages: each was shown to the model once, with
    # every query of its round, and fetched once.
    shown: Counter[str] = Counter()
    for request in llm.requests:
        if stage_of(request) == "select":
            shown.update(re.findall(r"URL: (\S+)", section(request.last_user, "RESULTS")))
            assert len(section(request.last_user, "QUERIES").splitlines()) > 1
    found: Counter[str] = Counter()
    for query in report["queries"]:
        reply = httpx.get(web.url("/search"), params={"q": query, "format": "json"})
        found.update({hit["url"] for hit in reply.json()["results"][:8]})
    assert max(found.values()) >= 3  # the same page under three queries or more
    assert shown and max(shown.values()) == 1 and max(fetched.values()) == 1
    # The refine prompt, too, lists each page once, under the first query to find it.
    refine = next(r for r in llm.requests if stage_of(r) == "refine")
    listed = [
        line
        for line in section(refine.last_user, "RESULTS").splitlines()
        if line.startswith("- ") and line != SAME_PAGES
    ]
    assert listed and len(listed) == len(set(listed))

    # Every call and its tokens are counted (ScriptedLLM reports words as tokens).
    stats = report["stats"]
    assert stats["llm_calls"] == len(llm.requests)
    assert stats["prompt_tokens"] == sum(
        len(str(m["content"]).split()) for r in llm.requests for m in r.messages
    )
    assert stats["completion_tokens"] > 0 and stats["cached_llm_calls"] == 0
    check = report["citations"]
    assert check["method"] == "lexical" and check["checked"] >= 3
    assert check["kept"] == check["checked"] and check["removed"] == 0
    assert "_Citation check (lexical):" in report["markdown"]


@pytest.mark.slow
def test_subprocess_llm_run_writes_a_cited_report(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    ScriptedResearcher(think=True).install(llm)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLEUTH_", "OPENAI_"))}
    env["OPENAI_BASE_URL"] = web.llm_url
    env["SLEUTH_HOME"] = str(tmp_path / "home")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sleuth",
            *cli_args(web, model=False),
            "--model",
            MODEL,
            "--max-sources",
            "3",
            web.topics[3].question,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"# Research: {web.topics[3].question}")
    assert "## Key points" in out and "<think>" not in out
    assert re.search(r"^- .+ \[1\]\.$", out, re.M)
    assert "## Sources" in out and "Citation check (lexical)" in out
    assert f"LLM: model '{MODEL}' at {web.llm_url}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert by_stage(llm)["report"] == 1


@pytest.mark.slow
def test_every_model_call_is_a_progress_event_with_its_tokens(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """Live counters (sleuth serve, MCP progress) see each call's tokens as it is answered."""
    ScriptedResearcher().install(llm)
    events: list[Event] = []
    # A model whose price sleuth knows, so each call's cost is in its event too.
    report = research(web, web.topics[0].question, events, model="gpt-4o-mini")
    calls = [e for e in events if e.kind == "llm"]
    assert len(calls) == report.stats.llm_calls == len(llm.requests)
    assert sum(e.data["prompt_tokens"] for e in calls) == report.stats.prompt_tokens
    assert sum(e.data["completion_tokens"] for e in calls) == report.stats.completion_tokens
    assert {e.data["stage"] for e in calls} >= {"plan", "select", "report"}
    priced = [e.data["cost_usd"] for e in calls if "cost_usd" in e.data]
    assert report.stats.cost_usd is not None
    assert sum(priced) == pytest.approx(report.stats.cost_usd, abs=1e-6)  # (rounded there)
    assert len(priced) == len(calls)


def test_each_stage_reaches_its_own_model(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    report = research(
        web,
        web.topics[3].question,
        model="all-stages",
        plan_model="planner",
        summary_model="reader",
        report_model="writer",
        verify="llm",
        max_sources=3,
    )
    assert report.writer == "llm" and report.citations is not None
    assert report.citations.method == "llm"
    expected = {
        "plan": "planner",
        "refine": "planner",
        "select": "planner",
        "summarize": "reader",
        "merge": "reader",
        "verify": "reader",
        "report": "writer",
    }
    seen: dict[str, set[str | None]] = {}
    for request in llm.requests:
        seen.setdefault(stage_of(request), set()).add(request.model)
    assert {"plan", "refine", "select", "summarize", "verify", "report"} <= set(seen)
    for stage, models in seen.items():
        assert models == {expected[stage]}, stage


def searches(web: OfflineWeb) -> list[str]:
    """The queries the offline web's search engine was asked, in the order they came."""
    return [q for r in web.requests if r.path == "/search" for q in parse_qs(r.query).get("q", [])]


def test_the_question_is_searched_before_the_model_is_asked_to_plan(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    """Issue 26: a model run's first request is the search for the question as asked; it
    goes out before the planning call (while the OpenAI SDK loads), is searched once, and
    its results join the first round the model ranks."""
    question = web.topics[0].question
    researcher = ScriptedResearcher()
    seen_by_plan: list[str] = []

    def plan(body: dict[str, Any]) -> str:
        seen_by_plan.extend(searches(web))  # what the web had been asked when the plan came
        return researcher.plan(body)

    llm.add(plan, contains=MARKERS["plan"])
    researcher.install(llm)
    web.reset_log()
    report = research(web, question, max_sources=3)
    assert (report.planner, report.writer) == ("llm", "llm")
    asked = searches(web)
    assert seen_by_plan[:1] == [question] and asked[0] == question
    assert asked.count(question) == 1 and len(asked) == len(set(asked)) == report.stats.searches
    assert report.queries[0] == question and report.queries.count(question) == 1
    first_select = next(r for r in llm.requests if stage_of(r) == "select")
    assert section(first_select.last_user, "QUERIES").splitlines()[0] == question


# -- replies that are not clean ---------------------------------------------------------------


def test_think_blocks_and_chatty_lists_are_parsed(web: OfflineWeb, llm: ScriptedLLM) -> None:
    llm.add(
        "<think>\nThe user asks about Hong Kong. I should cover Beijing's response, the "
        "troops and the markets.\n</think>\nSure! Here are some queries:\n\n"
        "1. **China response Hong Kong protests**\n2. Beijing troops Hong Kong\n"
        "3. Hong Kong protests markets Alibaba listing\n\nLet me know if you need more.",
        contains=MARKERS["plan"],
    )
    llm.add(
        "<think>Results 2 and 1 look official.</think>\nThe most relevant are:\n"
        "- Result 2\n- Result 1",
        contains=MARKERS["select"],
        times=None,
    )
    ScriptedResearcher(think=True).install(llm)
    report = research(web, web.topics[3].question, max_sources=3)
    assert report.planner == "llm"
    # After the question as asked, searched first (issue 26): the model's queries.
    assert report.queries[1:4] == [
        "China response Hong Kong protests",
        "Beijing troops Hong Kong",
        "Hong Kong protests markets Alibaba listing",
    ]
    assert not [f for f in report.failures if f.stage == "llm"], report.failures
    assert report.writer == "llm" and "<think>" not in report.markdown
    assert all(s.summary and "<think>" not in s.summary for s in report.sources)


def test_unusable_plan_falls_back_to_rules_and_says_why(web: OfflineWeb, llm: ScriptedLLM) -> None:
    llm.add("Sure! I'd be happy to help you research that question.", contains=MARKERS["plan"])
    llm.add("These all look great to me.", contains=MARKERS["select"], times=None)
    ScriptedResearcher().install(llm)
    question = web.topics[2].question
    report = research(web, question, max_sources=3)
    assert report.planner == "rules" and report.queries[0] == question
    gaps = report.markdown.split("## Gaps", 1)[1]
    assert "LLM plan: the model's reply had no list of search queries" in gaps
    assert "the rule-based queries were used" in gaps
    assert "LLM select: the model's reply picked no valid search results" in gaps
    # Without picks the quality ranking decides; the rest of the run still uses the model.
    assert report.sources and report.writer == "llm"
    assert by_stage(llm)["refine"] == 0


def test_rate_limit_is_retried_then_the_run_goes_on(web: OfflineWeb, llm: ScriptedLLM) -> None:
    llm.fail(
        429, message="Rate limit reached for requests", retry_after=0, contains=MARKERS["plan"]
    )
    ScriptedResearcher().install(llm)
    events: list[Event] = []
    # Every page is read to the end: a summary cut while in flight reaches the server
    # but is no reply, and would make the count below depend on timing.
    report = research(web, web.topics[3].question, events, max_sources=20, depth=1)
    assert by_stage(llm)["plan"] == 2 and report.planner == "llm"
    assert any("429" in e.message and "retry 1 in 0.0 s" in e.message for e in events)
    assert not [f for f in report.failures if f.stage == "llm"]
    assert report.stats.llm_calls == len(llm.requests) - 1  # the 429 is not a reply


def test_context_overflow_reads_the_page_in_smaller_chunks(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    researcher = ScriptedResearcher()
    failed: list[str] = []

    def overflow_once(body: dict[str, Any]) -> str | Response:
        """The first long chunk is refused as a real server refuses an overlong prompt."""
        prompt = body["messages"][-1]["content"]
        if failed or len(section(prompt, "PAGE")) < 3000:
            return researcher.summarize(body)
        failed.append(section(prompt, "PAGE"))
        message = (
            "This model's maximum context length is 2048 tokens. However, your "
            "messages resulted in 2301 tokens. Please reduce the length of the messages."
        )
        return JSONResponse(
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            status_code=400,
        )

    llm.add(overflow_once, contains=MARKERS["summarize"], times=None)
    researcher.install(llm)
    events: list[Event] = []
    # More sources wanted than there are pages: every page is read to the end, none cut.
    report = research(
        web, web.topics[3].question, events, max_sources=20, depth=1, context_window=2048
    )

    def text(page: str) -> str:
        return " ".join(page.split("\n\n", 1)[1].split())

    assert failed, "no chunk was long enough to be refused"
    url = re.search(r"^URL: (\S+)", failed[0], re.M).group(1)  # type: ignore[union-attr]
    summaries = [section(r.last_user, "PAGE") for r in llm.requests if stage_of(r) == "summarize"]
    # The chunk that overflowed was read again as smaller pieces that together hold it all.
    whole = text(failed[0])
    pieces = [text(p) for p in summaries if text(p) in whole and len(text(p)) < len(whole)]
    assert len(pieces) >= 2
    assert sum(len(p.split()) for p in pieces) == len(whole.split())
    assert any("reading in chunks of" in e.message for e in events)
    assert any(stage_of(r) == "merge" and f"URL: {url}\n" in r.last_user for r in llm.requests)
    assert url in {s.url for s in report.sources if s.summary}


def test_a_context_too_small_for_any_chunk_falls_back_instead_of_looping(
    web: OfflineWeb, llm: ScriptedLLM
) -> None:
    ScriptedResearcher().install(llm)
    report = research(web, web.topics[3].question, max_sources=2, context_window=512)
    assert report.sources and all(s.summary is None and s.passages for s in report.sources)
    assert any(
        f.stage == "llm" and "context window (512 tokens) is too small" in f.reason
        for f in report.failures
    )
    assert by_stage(llm)["summarize"] == 0


# -- the citation check ---------------------------------------------------------------------


def _notes(prompt: str) -> dict[int, tuple[str, str]]:
    """Source number -> (URL, first sentence of its notes), from a report prompt."""
    found = {}
    for block in section(prompt, "SOURCES").split("\n\n"):
        head = re.match(
            r"\[(\d+)\] .*\nURL: (\S+)\n(?:According to the page, )?(.*?[.!?])\s", block + " ", re.S
        )
        if head:
            found[int(head.group(1))] = (head.group(2), " ".join(head.group(3).split()))
    return found


@pytest.mark.slow
def test_unknown_numbers_and_invented_urls_are_removed(web: OfflineWeb, llm: ScriptedLLM) -> None:
    second: list[str] = []

    def report(body: dict[str, Any]) -> str:
        notes = _notes(body["messages"][-1]["content"])
        assert len(notes) == 5, notes
        second.append(notes[2][1])
        return "\n".join(
            [
                "# Report",
                "",
                "The sources answer the question in part [1].",
                "",
                "## Findings",
                "",
                f"- {notes[1][1]} [1]",
                f"- {notes[2][1]} [9]",
                f"- {notes[3][1]} See [the full story](https://evil.example.com/story) [3].",
                f"- {notes[4][1]} More at https://fabricated.example.org/x?id=1.",
                f"- {notes[5][1]} ([source]({notes[5][0]}))",
                "",
                "## Conclusion",
                "",
                "A landmark 2031 study [9] was published at https://invented.example.net/study "
                "for anyone to verify.",
                "",
                "## References",
                "",
                "[1] https://evil.example.com/ref",
            ]
        )

    llm.add(report, contains=MARKERS["report"])
    ScriptedResearcher().install(llm)
    # The moons: five on-topic pages download, so five sources whatever order they come in.
    result = research(web, web.topics[1].question, max_sources=5)
    assert len(result.sources) == 5 and result.citations is not None
    body = report_body(result)
    assert "[9]" not in result.markdown and "example.com" not in result.markdown
    assert "example.org" not in result.markdown and "## References" not in body
    assert "example.net" not in result.markdown
    assert result.citations.unknown_citations_removed == 2
    assert result.citations.invented_urls_removed == 3
    # The link to a real source became its number; the sentences citing only [9] (an
    # invented claim) are gone, and so is the heading they leave empty.
    assert re.search(r"\(\[5\]\)|\[5\]", body.strip().split("\n")[-1])
    assert "2031" not in body and "## Conclusion" not in body
    assert second and second[0] not in body
    assert result.citations.invented_claims_removed == 2 and "*(unverified)*" not in body
    assert (
        "2 citations of an unknown source, 3 URLs not among the sources, 2 sentences "
        "citing only sources that do not exist"
    ) in result.markdown


@pytest.mark.parametrize("verify", ["lexical", "llm"])
def test_a_claim_the_cited_source_does_not_support_is_removed(
    web: OfflineWeb, llm: ScriptedLLM, verify: str
) -> None:
    false_claim = "Stadia sold 97 million consoles in its first week and replaced the PlayStation"

    def report(body: dict[str, Any]) -> str:
        notes = _notes(body["messages"][-1]["content"])
        return "\n".join(
            ["## Findings", ""]
            + [f"- {text} [{n}]" for n, (_, text) in notes.items()]
            + [f"- {false_claim} [1]."]
        )

    llm.add(report, contains=MARKERS["report"])
    llm.add(
        lambda body: (
            "UNSUPPORTED" if "97 million" in body["messages"][-1]["content"] else "SUPPORTED"
        ),
        contains=MARKERS["verify"],
        times=None,
    )
    ScriptedResearcher().install(llm)
    result = research(web, web.topics[0].question, max_sources=3, verify=verify)
    check = result.citations
    assert check is not None and check.method == verify
    assert check.removed == 1 and check.kept == check.checked - 1 >= 2
    body, removed = result.markdown.split("## Removed: not supported by the cited source")
    assert "97 million" not in body
    assert "1 removed as not supported by the cited source" in body
    # The reader sees what the model said that the source does not hold, and which source.
    assert removed.strip() == f"- “{false_claim}.” [1]"
    claims = result.claims or []
    assert [c.text for c in claims if c.verdict == "removed"] == [f"{false_claim}."]
    assert all(c.verdict == "kept" and c.support for c in claims if "97" not in c.text)
    assert (by_stage(llm)["verify"] > 0) == (verify == "llm")


def test_report_in_chinese(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher(language="zh").install(llm)
    result = research(web, web.topics[3].question, max_sources=3, lang="zh")
    for request in llm.requests:
        if stage_of(request) in ("plan", "refine", "summarize", "merge", "report"):
            assert "in Simplified Chinese" in request.last_user, stage_of(request)
    md = result.markdown
    assert md.startswith(f"# 研究: {web.topics[3].question}")
    assert "## 主要发现" in md and "## 可信度: " in md and "## 参考来源" in md
    assert "## 未能获取的内容" in md and "_引用核查（lexical）：" in md
    assert result.citations is not None and result.citations.removed == 0
    assert result.citations.kept >= 2


# -- choosing the model ---------------------------------------------------------------------


def test_without_a_model_the_no_llm_pipeline_runs_and_says_so(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = run(
        cli_args(
            web,
            "--format",
            "json",
            "-o",
            str(out),
            "--depth",
            "1",
            web.topics[3].question,
            model=False,
        )
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "no model configured" in err and "the no-LLM pipeline runs" in err
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["planner"], report["writer"], report["citations"]) == ("rules", "template", None)
    assert report["stats"]["llm_calls"] == 0 and not llm.requests


def test_no_llm_wins_over_a_configured_model(
    web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    ScriptedResearcher().install(llm)
    code = run(cli_args(web, "--no-llm", "--depth", "1", web.topics[3].question))
    assert code == 0 and not llm.requests
    assert "--no-llm: the no-LLM pipeline runs" in capsys.readouterr().err


def test_a_local_ollama_is_found_and_used(
    web: OfflineWeb, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedLLM.serve(models=["llama3.2:3b"]) as ollama:
        ScriptedResearcher().install(ollama)
        monkeypatch.setenv("OLLAMA_HOST", ollama.root_url.removeprefix("http://"))
        code = run(cli_args(web, "--max-sources", "2", web.topics[3].question, model=False))
        err = capsys.readouterr().err
        assert code == 0
        assert f"Ollama answers at {ollama.root_url}: using its model 'llama3.2:3b'" in err
        assert ollama.requests and {r.model for r in ollama.requests} == {"llama3.2:3b"}
        assert by_stage(ollama)["report"] == 1


def test_an_unreachable_server_means_the_no_llm_pipeline(
    web: OfflineWeb, closed_port: int, llm: ScriptedLLM
) -> None:
    report = sleuth.research_sync(
        web.topics[3].question,
        depth=1,
        **options(web, base_url=f"http://127.0.0.1:{closed_port}/v1", model=None),
    )
    assert report.writer == "template" and report.sources
    assert any(
        f.stage == "llm" and "cannot reach the LLM server" in f.reason for f in report.failures
    )


def test_a_server_found_unreachable_after_the_question_was_searched(
    web: OfflineWeb, closed_port: int, llm: ScriptedLLM
) -> None:
    """The question's search goes out before the model's server is found unreachable: the
    no-LLM pipeline that runs instead leads with its hits and searches nothing twice."""
    question = web.topics[3].question
    web.reset_log()
    report = sleuth.research_sync(
        question, depth=2, **options(web, base_url=f"http://127.0.0.1:{closed_port}/v1", model=None)
    )
    assert (report.planner, report.writer) == ("rules", "template") and report.sources
    asked = searches(web)
    assert asked[0] == question == report.queries[0]
    assert sorted(asked) == sorted(report.queries) and len(asked) == report.stats.searches > 1


def test_a_refused_key_exits_2_with_one_line(
    web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.fail(401, message="Incorrect API key provided: sk-abc***", times=None)
    code = run(cli_args(web, "--quiet", "--depth", "1", web.topics[3].question))
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("sleuth: error: the LLM server at") and "(401)" in err
    assert len(err.strip().splitlines()) == 1


def test_the_token_budget_stops_model_calls(web: OfflineWeb, llm: ScriptedLLM) -> None:
    ScriptedResearcher().install(llm)
    report = research(web, web.topics[3].question, max_sources=3, max_tokens=1500)
    assert report.stats.prompt_tokens + report.stats.completion_tokens >= 1500
    assert any(
        f.stage == "budget" and "token budget reached (--max-tokens 1500)" in f.reason
        for f in report.failures
    )
    assert by_stage(llm)["report"] == 0 and report.writer == "template"


def test_a_page_with_nothing_relevant_is_replaced(web: OfflineWeb, llm: ScriptedLLM) -> None:
    doc = web.doc("hollywoodreporter-stadia-launch")
    llm.add("Not relevant.", contains=f"Title: {doc.title}\nURL: {doc.url}", times=None)
    ScriptedResearcher().install(llm)
    web.reset_log()
    # Two sources wanted: of the topic's other on-topic pages, one is over the size cap,
    # one is slow and the relevance judgement leaves the WSJ comparison out.
    report = research(web, web.topics[0].question, max_sources=2)
    assert page_requests(web)[doc.url] == 1, "the page was not read at all"
    assert doc.url not in {s.url for s in report.sources} and len(report.sources) == 2
    assert any(
        f.url == doc.url and f.reason == "not relevant to the question (summary model)"
        for f in report.failures
    )
