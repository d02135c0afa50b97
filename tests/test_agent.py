"""Agent mode end to end: a scripted model (ScriptedLLM) driving the real tools on the
offline web, in a workspace under a temporary home.

Every exit the docs name is exercised here: all_finished, the dashboard's completion
marker, max rounds, the total time limit, consecutive failures; and the failure
paths: a round that times out, unknown tools, broken arguments, the JSON fallback.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import sleuth
from sleuth.agent import AgentResult, web_search
from sleuth.progress import Event
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import RecordedRequest, ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher

MODEL = "scripted-model"
_ids = itertools.count(1)


def _words(value: Any) -> int:
    return len(str(value or "").split())


def _usage(body: dict[str, Any], spoken: str) -> dict[str, int]:
    """Word counts as token counts: deterministic, and growing with the conversation."""
    prompt = 0
    for message in body.get("messages", []):
        prompt += _words(message.get("content"))
        for call in message.get("tool_calls") or []:
            prompt += _words(call["function"]["arguments"])
    completion = _words(spoken)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class Script:
    """Scripts the agent's model replies, in order, on a ScriptedLLM."""

    def __init__(self, llm: ScriptedLLM, model: str | None = None, *, usage: bool = True) -> None:
        self.llm = llm
        self.model = model
        self.usage = usage  # False: replies carry no usage, sleuth counts tokens itself

    def _body(
        self, body: dict[str, Any], message: dict[str, Any], finish: str, spoken: str
    ) -> dict[str, Any]:
        reply = {
            "id": "chatcmpl-agent",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model") or MODEL,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        }
        if self.usage:
            reply["usage"] = _usage(body, spoken)
        return reply

    def calls(
        self, *calls: tuple[str, Any], delay: float = 0.0, before: Callable[[], None] | None = None
    ) -> Script:
        """One reply holding these tool calls; ``arguments`` as a dict, or raw text."""

        def reply(body: dict[str, Any]) -> dict[str, Any]:
            if before is not None:
                before()
            made = [
                {
                    "id": f"call_{next(_ids)}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for name, args in calls
            ]
            spoken = " ".join(c["function"]["arguments"] for c in made)
            return self._body(
                body,
                {"role": "assistant", "content": None, "tool_calls": made},
                "tool_calls",
                spoken,
            )

        self.llm.add(reply, model=self.model, delay=delay)
        return self

    def say(self, text: str, delay: float = 0.0) -> Script:
        """One plain text reply (no tool call)."""

        def reply(body: dict[str, Any]) -> dict[str, Any]:
            return self._body(body, {"role": "assistant", "content": text}, "stop", text)

        self.llm.add(reply, model=self.model, delay=delay)
        return self


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM.serve(models=[MODEL]) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "SLEUTH_HOME",
        "SLEUTH_MODEL",
        "SLEUTH_BASE_URL",
        "SLEUTH_NO_STORE",
        "SLEUTH_MAX_TIME",
    ):
        monkeypatch.delenv(name, raising=False)


def agent_options(web: OfflineWeb, llm: ScriptedLLM, home: Path, **extra: Any) -> dict[str, Any]:
    return {
        "home": home,
        "base_url": llm.base_url,
        "model": MODEL,
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5,
        **extra,
    }


def round_starts(llm: ScriptedLLM) -> list[RecordedRequest]:
    """The first request of every round: a fresh conversation (system + task)."""
    return [r for r in llm.requests if len(r.messages) == 2]


def history(result: AgentResult) -> list[dict[str, Any]]:
    assert result.workspace is not None
    text = (Path(result.workspace) / "history.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def outside_home(root: Path, home: Path) -> list[Path]:
    """Every path under ``root`` but the home folder's, links not followed."""
    return sorted(
        p.relative_to(root) for p in root.rglob("*") if p != home and home not in p.parents
    )


def tool_messages(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def test_one_round_search_browse_finish(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    topic = web.topics[0]
    page = web.doc(topic.expected[0])
    Script(llm).calls(("search", {"query": "Google Stadia launch review"})).calls(
        ("browse", {"url": page.url})
    ).calls(("all_finished", {"result": f"Stadia launched thin. Source: {page.url}"}))
    events: list[Event] = []
    result = await web_search(
        topic.question, on_event=events.append, **agent_options(web, llm, tmp_path / "home")
    )

    assert result.status == "finished" and result.done
    assert result.result == f"Stadia launched thin. Source: {page.url}"
    assert (result.rounds, result.tool_calls, result.llm_calls) == (1, 3, 3)
    assert result.pages == [page.url] and result.queries == ["Google Stadia launch review"]
    assert result.tokens == result.prompt_tokens + result.completion_tokens > 0
    # The workspace sits where the docs say, and holds the dashboard, history and result.
    workspace = Path(result.workspace or "")
    assert workspace.parent == tmp_path / "home" / "workspaces" / "default" / "web_search"
    assert {"dashboard.md", "history.jsonl", "result.md"} <= files_in(workspace)
    kinds = [r["type"] for r in history(result)]
    assert kinds[0] == "start" and kinds[-1] == "finish" and kinds.count("tool") == 3
    # Search results and page text reach the model as marked, untrusted data.
    search_result, page_result = tool_messages(llm.requests[2])
    assert search_result.startswith("<<<RESULT\ntool: search\nstatus: ok")
    assert search_result.endswith("RESULT>>>") and page.url in search_result
    assert page_result.startswith("<<<RESULT\ntool: browse") and page.title in page_result
    # Function calling was used: every request offered the five tools.
    names = {t["function"]["name"] for t in llm.requests[0].body["tools"]}
    assert names == {"search", "browse", "file", "update_dashboard", "all_finished"}
    said = [e.message for e in events if e.kind in ("round", "tool", "agent")]
    assert said[0].startswith("round 1/20")
    assert any(m.startswith("round 1 · search Google Stadia") for m in said)
    assert said[-1].startswith("finished: the agent called all_finished in round 1")
    assert "Stadia launched thin" in (workspace / "result.md").read_text(encoding="utf-8")


async def test_a_second_search_reuses_the_stores_pages_and_searches(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """browse and search sit behind the run store, as a research's fetches do."""
    page = web.doc(web.topics[0].expected[0])
    home = tmp_path / "home"
    for _ in range(2):
        Script(llm).calls(("search", {"query": "Google Stadia launch review"})).calls(
            ("browse", {"url": page.url})
        ).calls(("all_finished", {"result": "done"}))
    web.reset_log()
    first = await web_search("Stadia?", **agent_options(web, llm, home))
    assert first.status == "finished" and len(web.requests_for(page.url)) == 1
    web.reset_log()
    second = await web_search("Stadia?", **agent_options(web, llm, home))
    assert second.status == "finished" and second.pages == [page.url]
    # Same page text for the model, and not one request to the page host or the search.
    assert web.requests == []
    assert page.title in tool_messages(llm.requests[-1])[-1]


def script_three_rounds(script: Script, doc_url: str) -> None:
    """The scripted three-round search (also what the README's measurement ran)."""
    # Round 1: search, write the finding down, end the round by replying in text.
    script.calls(("search", {"query": "Europa water vapor"})).calls(
        (
            "update_dashboard",
            {
                "content": "status: in progress\nFindings:\n- FINDING-ALPHA "
                "Europa has water vapour plumes\nNext: read"
            },
        )
    ).say("That is all for this round.")
    # Round 2: read a page, save notes, add to the dashboard.
    script.calls(
        ("browse", {"url": doc_url}),
        (
            "file",
            {
                "operation": "write",
                "path": "notes/europa.md",
                "content": "FINDING-BETA from " + doc_url,
            },
        ),
    ).calls(
        (
            "update_dashboard",
            {
                "content": "status: in progress\nFindings:\n- FINDING-ALPHA"
                f"\n- FINDING-BETA ({doc_url})\nNext: finish"
            },
        )
    ).say("Round done.")
    # Round 3: finish.
    script.calls(("file", {"operation": "read", "path": "notes/europa.md"})).calls(
        ("all_finished", {"result": f"Europa vents water vapour ({doc_url})."})
    )


async def test_three_rounds_carry_findings_through_the_dashboard(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    doc = web.doc(web.topics[1].expected[2])
    script_three_rounds(Script(llm), doc.url)
    result = await web_search(
        "What did astronomers find on Europa?", **agent_options(web, llm, tmp_path / "home")
    )

    assert result.status == "finished" and result.rounds == 3
    starts = round_starts(llm)
    assert len(starts) == 3
    assert "Round 3 of at most 20" in starts[2].last_user
    # Round 3's fresh conversation carries what round 1 and round 2 wrote.
    assert "FINDING-ALPHA Europa" not in starts[0].last_user
    assert "FINDING-ALPHA" in starts[2].last_user and "FINDING-BETA" in starts[2].last_user
    assert "FINDING-BETA from" in tool_messages(llm.requests[-1])[0]
    assert result.tool_calls == 7 and result.llm_calls == 8
    assert result.pages == [doc.url]
    assert result.prompt_tokens == sum(
        len(" ".join(str(m.get("content") or "") for m in r.messages).split())
        + sum(
            len(c["function"]["arguments"].split())
            for m in r.messages
            for c in m.get("tool_calls") or []
        )
        for r in llm.requests
    )
    print(f"\nscripted three-round run: {result.summary_line()}")


async def test_dashboard_marker_ends_the_search(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(
        ("update_dashboard", {"content": "## Status\n搜索完成\n\nFindings: none"}),
        ("search", {"query": "never run? it is: same reply"}),
    )
    result = await web_search("Anything about Titan?", **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "dashboard_complete"
    assert "搜索完成" in result.dashboard and result.rounds == 1
    assert len(llm.requests) == 1  # no second call, no second round


async def test_not_complete_is_not_complete(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    board = "status: not complete\n任务完成前还需要阅读"
    Script(llm).calls(("update_dashboard", {"content": board})).calls(
        ("all_finished", {"result": "done"})
    )
    result = await web_search("Titan map?", **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "finished" and len(llm.requests) == 2


async def test_max_rounds_stop(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> None:
    script = Script(llm)
    for n in (1, 2):
        script.calls(("search", {"query": f"tariffs round {n}"})).say("next round please")
    result = await web_search(
        "US-China tariffs?", max_rounds=2, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "max_rounds" and result.reason == "reached the limit of 2 rounds"
    assert result.rounds == 2 and len(llm.requests) == 4 and not llm.unmatched
    assert not result.done and result.result == ""


async def test_a_round_that_times_out_is_noted_and_the_next_one_runs(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    # The round may take 0.3 s; the model takes 3 s to answer its first request.
    Script(llm).say("too late", delay=3.0).calls(("all_finished", {"result": "round 2 did it"}))
    result = await web_search(
        "Hong Kong protests?", round_minutes=0.005, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "finished" and result.rounds == 2
    assert "round 1 failed: the round hit its 0s limit" in result.dashboard
    ends = [r for r in history(result) if r["type"] == "round_end"]
    assert [(e["outcome"], e["failed"]) for e in ends] == [("timeout", True), ("finished", False)]
    # Round 2's task message shows the note to the model.
    assert "round 1 failed" in round_starts(llm)[1].last_user


async def test_consecutive_failures_end_the_run(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    for _ in range(3):
        llm.fail(400, message="the model is confused")
    result = await web_search(
        "Stadia?", agent_protocol="tools", **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "failed" and result.rounds == 3
    assert result.reason.startswith("3 rounds in a row failed")
    assert result.dashboard.count("failed: the LLM server") == 3


async def test_unknown_tools_and_broken_arguments_get_readable_errors(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(
        ("fly_to_the_moon", {"speed": 9}),
        ("search", '{"query": "unterminated'),
        ("file", {"operation": "delete", "path": "notes.md"}),
        ("browse", {"link": "http://example.com"}),
        ("search", "[1, 2]"),
    ).calls(("all_finished", {"result": "recovered"}))
    result = await web_search("Europa?", **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "finished" and result.tool_calls == 6
    errors = tool_messages(llm.requests[1])
    assert len(errors) == 5 and all("status: error" in e for e in errors)
    assert "there is no tool named 'fly_to_the_moon'" in errors[0]
    assert "not valid JSON" in errors[1]
    assert "bad arguments for file" in errors[2] and "operation" in errors[2]
    assert "bad arguments for browse" in errors[3] and "link" in errors[3]
    assert "must be a JSON object" in errors[4]


async def test_sandbox_escapes_are_refused_and_nothing_is_written_outside(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret", encoding="utf-8")

    def plant_links() -> None:
        # Runs when the model is first asked: the workspace exists by then.
        (workspace,) = (home / "workspaces" / "default" / "web_search").iterdir()
        (workspace / "escape").symlink_to(outside, target_is_directory=True)
        (workspace / "secret-link.txt").symlink_to(outside / "secret.txt")

    before = outside_home(tmp_path, home)
    Script(llm).calls(
        (
            "file",
            {"operation": "write", "path": "../../etc/passwd", "content": "root::0:0::/:/bin/sh"},
        ),
        ("file", {"operation": "write", "path": str(outside / "abs.txt"), "content": "x"}),
        ("file", {"operation": "write", "path": "escape/pwned.txt", "content": "x"}),
        ("file", {"operation": "read", "path": "secret-link.txt"}),
        ("file", {"operation": "append", "path": "secret-link.txt", "content": "x"}),
        ("file", {"operation": "write", "path": "history.jsonl", "content": "{}"}),
        before=plant_links,
    ).calls(("all_finished", {"result": "stayed inside"}))
    result = await web_search("Titan?", **agent_options(web, llm, home))

    errors = tool_messages(llm.requests[1])
    assert all("status: error" in e for e in errors)
    assert "contains '..'" in errors[0]
    assert "absolute path refused" in errors[1]
    assert "escape is a symbolic link" in errors[2]
    assert "symbolic link" in errors[3] and "top secret" not in errors[3]
    assert "symbolic link" in errors[4]
    assert "kept by sleuth" in errors[5]
    assert outside_home(tmp_path, home) == before
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret"
    assert result.status == "finished" and history(result)[0]["type"] == "start"


async def test_a_folder_named_like_the_result_cannot_be_made(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Writing result.md/x.md would leave a folder where sleuth writes the result."""
    Script(llm).calls(
        ("file", {"operation": "write", "path": "result.md/x.md", "content": "x"})
    ).calls(("all_finished", {"result": "the answer is 42"}))
    result = await web_search("Titan?", **agent_options(web, llm, tmp_path / "home"))
    (error,) = tool_messages(llm.requests[1])
    assert "status: error" in error and "kept by sleuth" in error
    assert result.status == "finished" and result.result == "the answer is 42"
    written = Path(result.workspace or "") / "result.md"
    assert "the answer is 42" in written.read_text(encoding="utf-8")


async def test_the_result_survives_something_in_the_way_of_result_md(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    """A result.md that is a folder (an older sleuth let the agent make one) cannot lose
    the result: it comes back, with the reason result.md was not written."""
    Script(llm).say("end of round 1")
    first = await web_search("Titan?", max_rounds=1, **agent_options(web, llm, tmp_path / "h"))
    workspace = Path(first.workspace or "")
    (workspace / "result.md").unlink()
    (workspace / "result.md" / "x.md").parent.mkdir()
    (workspace / "result.md" / "x.md").write_text("in the way", encoding="utf-8")
    Script(llm).calls(("all_finished", {"result": "lakes of methane"}))
    events: list[Event] = []
    result = await web_search(resume=workspace, max_rounds=3, on_event=events.append)
    assert result.status == "finished" and result.result == "lakes of methane"
    assert result.result_note is not None and "result.md" in result.result_note
    assert "lakes of methane" in result.to_markdown()
    assert any("result.md" in e.message and "not written" in e.message for e in events)
    assert (workspace / "result.md" / "x.md").read_text(encoding="utf-8") == "in the way"
    # A dashboard.md that is a folder: the search cannot go on, and says so in one line.
    (workspace / "dashboard.md").unlink()
    (workspace / "dashboard.md").mkdir()
    with pytest.raises(sleuth.ConfigError, match=r"dashboard\.md cannot be read"):
        await web_search(resume=workspace, max_rounds=4)


async def test_dashboard_limit_is_enforced(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(("update_dashboard", {"content": "x" * 5000})).calls(
        ("all_finished", {"result": "ok"})
    )
    result = await web_search("Stadia?", **agent_options(web, llm, tmp_path / "h"))
    (error,) = tool_messages(llm.requests[1])
    assert "at most 4,000 characters; this one has 5,000 (1,000 too many)" in error
    assert "x" * 100 not in result.dashboard
    assert result.dashboard.startswith("status: in progress")


async def test_browse_goes_through_the_ssrf_guard(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(
        ("browse", {"url": web.docs[0].url}), ("browse", {"url": "file:///etc/passwd"})
    ).calls(("all_finished", {"result": "blocked"}))
    result = await web_search(
        "Stadia?", **agent_options(web, llm, tmp_path / "h", allow_private_urls=False)
    )
    blocked, scheme = tool_messages(llm.requests[1])
    assert "could not read" in blocked and "blocked" in blocked
    assert "only http(s) URLs" in scheme
    assert result.pages == []


async def test_json_action_fallback(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> None:
    page = web.docs[0]
    script = Script(llm)
    action = json.dumps({"tool": "browse", "arguments": {"url": page.url}})
    script.say(f"```json\n{action}\n```")
    script.say('{"tool": "search", "arguments": {"query": "stadia"}, "note": "extra"}')
    script.say('{"tool": "all_finished", "arguments": {"result": "JSON works"}}')
    result = await web_search(
        "Stadia?", agent_protocol="json", **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "finished" and result.result == "JSON works"
    assert result.protocol == "json" and result.pages == [page.url]
    assert all("tools" not in r.body for r in llm.requests)
    system = llm.requests[0].messages[0]["content"]
    assert "exactly one JSON object and nothing else" in system and '"query"' in system
    # Results come back as user messages; a malformed action gets an error, not a crash.
    assert llm.requests[1].last_user.startswith("<<<RESULT\ntool: browse\nstatus: ok")
    assert "unexpected keys ['note']" in llm.requests[2].last_user


async def test_free_text_never_fires_a_tool(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    # Tool names in prose are just words: the round ends, nothing runs.
    Script(llm).say("I will search for it, browse the results and call all_finished.").calls(
        ("all_finished", {"result": "second round"})
    )
    result = await web_search(
        "Europa?", agent_protocol="json", **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "finished" and result.rounds == 2 and result.tool_calls == 1
    assert "round 1 failed: the model made no tool call" in result.dashboard


async def test_auto_protocol_falls_back_to_json(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.fail(400, message="this model does not support tools")
    Script(llm).say('{"tool": "all_finished", "arguments": {"result": "via JSON"}}')
    events: list[Event] = []
    result = await web_search(
        "Titan?", on_event=events.append, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "finished" and result.protocol == "json"
    assert "tools" in llm.requests[0].body and "tools" not in llm.requests[1].body
    assert "exactly one JSON object" in llm.requests[1].messages[0]["content"]
    assert any("refused function calling" in e.message for e in events)
    assert result.rounds == 1  # the fallback is not a failed round


async def test_total_time_limit(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> None:
    now = [1000.0]

    def tick() -> None:
        now[0] += 40.0  # every model call "takes" 40 s on the injected clock

    Script(llm).calls(("search", {"query": "titan"}), before=tick).say("end of round").calls(
        ("search", {"query": "titan map"}), before=tick
    ).say("end of round")
    result = await web_search(
        "Titan?", max_time="60s", clock=lambda: now[0], **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "time_limit" and result.rounds == 2
    assert result.reason == "the total time limit (1m00s) is used up"
    assert "time left in all: 20s" in round_starts(llm)[1].last_user


async def test_tool_call_limit_per_round(web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path) -> None:
    Script(llm).calls(*[("search", {"query": f"q{n}"}) for n in range(3)]).calls(
        ("all_finished", {"result": "round 2"})
    )
    result = await web_search(
        "Stadia?", max_tool_calls=2, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.rounds == 2 and result.tool_calls == 3
    ends = [r for r in history(result) if r["type"] == "round_end"]
    assert ends[0]["outcome"] == "tool_limit" and not ends[0]["failed"]


async def test_report_from_the_pages_read(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    topic = web.topics[1]
    docs = [web.doc(d) for d in topic.expected[:2]]
    Script(llm).calls(*[("browse", {"url": d.url}) for d in docs]).calls(
        ("all_finished", {"result": "two pages"})
    )
    ScriptedResearcher().install(llm)  # the pipeline's summaries and report, by the model
    result = await web_search(
        topic.question, report=True, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.report is not None and result.report.startswith("# Research:")
    for n, doc in enumerate(docs, start=1):
        assert f"[{n}]" in result.report and doc.url in result.report
    assert result.report_note == (
        "The report below cites the 2 pages the agent read; written by the model."
    )
    # The report was written from the pages the agent read, not from a new search.
    assert not any(MARKERS["plan"] in r.last_user for r in llm.requests)
    assert any(MARKERS["report"] in r.last_user for r in llm.requests)
    assert (Path(result.workspace or "") / "report.md").is_file()
    assert result.report in result.to_markdown()


async def test_resuming_a_finished_search_changes_nothing(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(("all_finished", {"result": "final"}))
    first = await web_search("Titan?", **agent_options(web, llm, tmp_path / "h"))
    again = await web_search(resume=first.workspace, base_url=llm.base_url)
    assert (again.status, again.result, again.rounds) == ("finished", "final", 1)
    assert len(llm.requests) == 1


async def test_no_store_leaves_nothing_behind(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    Script(llm).calls(("file", {"operation": "write", "path": "n.md", "content": "x"})).calls(
        ("all_finished", {"result": "gone"})
    )
    result = await web_search("Titan?", no_store=True, **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "finished" and result.workspace is None
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "h").exists()


async def test_bad_input_is_a_config_error(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    with pytest.raises(sleuth.ConfigError, match="agent mode needs a model"):
        await web_search("Titan?", home=tmp_path, no_llm=True)
    with pytest.raises(sleuth.ConfigError, match="question is empty"):
        await web_search("   ", **agent_options(web, llm, tmp_path))
    with pytest.raises(sleuth.ConfigError, match="cannot resume"):
        await web_search(resume=tmp_path / "nowhere")
    with pytest.raises(sleuth.ConfigError, match="invalid session name"):
        await web_search("Titan?", session="../x", **agent_options(web, llm, tmp_path))
    with pytest.raises(sleuth.ConfigError, match="invalid value for max_rounds: "):
        await web_search("Titan?", max_rounds=0, **agent_options(web, llm, tmp_path))
    assert llm.requests == []


@pytest.mark.parametrize(("window", "reply_tokens"), [(None, 1024), (32768, 4096)])
async def test_a_local_ollama_gets_the_context_window_asked_for(
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    window: int | None,
    reply_tokens: int,
) -> None:
    """With no model configured, agent mode finds Ollama as a research does, and with it
    the same settings: --context-window 32768 was ignored (4096, Ollama's own default)."""
    with ScriptedLLM.serve(models=["llama3.2:3b"]) as ollama:
        Script(ollama).calls(("all_finished", {"result": "done"}))
        monkeypatch.setenv("OLLAMA_HOST", ollama.root_url.removeprefix("http://"))
        options = {
            k: v
            for k, v in agent_options(web, ollama, tmp_path / "h").items()
            if k not in ("base_url", "model")
        }
        result = await web_search("Titan?", context_window=window, **options)
    assert result.status == "finished"
    [request] = ollama.requests
    assert request.model == "llama3.2:3b"
    # The agent keeps a quarter of the context (at most 4096 tokens) for each reply.
    assert request.body["max_tokens"] == reply_tokens


async def test_old_tool_results_are_dropped_to_fit_a_small_context(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    docs = web.docs[:3]
    Script(llm).calls(("browse", {"url": docs[0].url})).calls(
        ("browse", {"url": docs[1].url})
    ).calls(("browse", {"url": docs[2].url})).calls(
        ("all_finished", {"result": "read three long pages"})
    )
    result = await web_search(
        "Stadia?", context_window=4096, **agent_options(web, llm, tmp_path / "h")
    )
    assert result.status == "finished" and len(result.pages) == 3
    last = tool_messages(llm.requests[-1])
    assert "removed to fit the model's context" in last[0]
    assert last[-1].startswith("<<<RESULT\ntool: browse\nstatus: ok")
    # A page comes in parts no larger than the context allows, with the offset for more.
    assert re.search(
        r"Characters 0-1,\d{3} of [\d,]+ \(call browse with offset=1\d{3} for the "
        r"next part\)",
        last[-1],
    )


def test_replay_counts_an_interrupted_round_only_when_it_did_something() -> None:
    from sleuth.agent.loop import replay

    start = {"type": "start", "t": 0.0, "goal": "g", "limits": {"max_rounds": 3}}
    done = [
        start,
        {"type": "round_start", "round": 1, "t": 1.0},
        {"type": "llm", "round": 1, "prompt_tokens": 10, "completion_tokens": 2, "t": 2.0},
        {"type": "tool", "round": 1, "tool": "browse", "ok": True, "url": "http://a/", "t": 3.0},
        {"type": "round_end", "round": 1, "elapsed_s": 2.5, "failed": False, "t": 3.5},
    ]
    idle = replay([*done, {"type": "round_start", "round": 2, "t": 4.0}])
    assert (idle.rounds, idle.interrupted, idle.elapsed_s) == (1, None, 2.5)
    busy = replay(
        [
            *done,
            {"type": "round_start", "round": 2, "t": 4.0},
            {"type": "llm", "round": 2, "prompt_tokens": 5, "completion_tokens": 1, "t": 9.0},
        ]
    )
    assert (busy.rounds, busy.interrupted, busy.elapsed_s) == (2, 2, 7.5)
    assert (busy.prompt_tokens, busy.completion_tokens, busy.pages) == (15, 3, ["http://a/"])
    with pytest.raises(sleuth.ConfigError, match="no start record"):
        replay([{"type": "round_start", "round": 1}])


async def test_resume_after_a_round_cut_off_midway(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(("search", {"query": "titan lakes"})).say("end of round 1")
    first = await web_search("Titan?", max_rounds=1, **agent_options(web, llm, tmp_path / "h"))
    assert first.status == "max_rounds"
    # As if the process had died during round 2, after a model call and a tool call.
    workspace = Path(first.workspace or "")
    append_records(
        workspace / "history.jsonl",
        [
            {"type": "round_start", "round": 2, "t": 100.0},
            {"type": "llm", "round": 2, "prompt_tokens": 7, "completion_tokens": 3, "t": 101.0},
            {
                "type": "tool",
                "round": 2,
                "tool": "search",
                "ok": True,
                "query": "titan seas",
                "t": 104.0,
            },
        ],
    )
    Script(llm).calls(("all_finished", {"result": "lakes of methane"}))
    result = await web_search(resume=workspace, max_rounds=4)
    assert result.status == "finished" and result.rounds == 3
    assert "Round 3 of at most 4" in round_starts(llm)[-1].last_user
    assert "round 2 was interrupted (the process stopped); resumed" in result.dashboard
    assert result.queries == ["titan lakes", "titan seas"] and result.tool_calls == 3
    assert result.prompt_tokens == first.prompt_tokens + 7 + llm_prompt_tokens(llm, -1)
    ends = [r for r in history(result) if r["type"] == "round_end"]
    assert [(e["round"], e["outcome"], e["elapsed_s"]) for e in ends][1] == (2, "interrupted", 4.0)


async def test_a_resumed_search_keeps_its_domain_rules(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    page = web.docs[0]
    host = urlsplit(page.url).hostname or ""
    Script(llm).say("end of round 1")
    first = await web_search(
        "Stadia?", max_rounds=1, deny_domains=host, **agent_options(web, llm, tmp_path / "h")
    )
    Script(llm).calls(("browse", {"url": page.url})).calls(("all_finished", {"result": "x"}))
    web.reset_log()
    result = await web_search(resume=first.workspace, max_rounds=3)
    assert result.status == "finished"
    assert "is denied (--deny-domains" in tool_messages(llm.requests[-1])[-1]
    assert web.requests_for(page.url) == []


def llm_prompt_tokens(llm: ScriptedLLM, index: int) -> int:
    return _usage(llm.requests[index].body, "")["prompt_tokens"]


def append_records(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


async def test_a_tool_crash_fails_the_round_not_the_run(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("provider plugin bug")

    monkeypatch.setattr("sleuth.agent.tools.run_searches", broken)
    Script(llm).calls(("search", {"query": "x"})).calls(("all_finished", {"result": "ok"}))
    result = await web_search("Stadia?", **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "finished" and result.rounds == 2
    assert (
        "round 1 failed: tool search crashed: RuntimeError: provider plugin bug" in result.dashboard
    )


async def test_token_budget_stops_the_search(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    Script(llm).calls(("search", {"query": "titan"})).calls(("search", {"query": "more"}))
    result = await web_search("Titan?", max_tokens=50, **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "budget" and result.reason.startswith("the token budget is spent")
    assert len(llm.requests) == 1 and result.tokens >= 50


async def test_refused_credentials_end_the_run_at_once(
    web: OfflineWeb, llm: ScriptedLLM, tmp_path: Path
) -> None:
    llm.fail(401, message="invalid api key")
    result = await web_search("Titan?", **agent_options(web, llm, tmp_path / "h"))
    assert result.status == "failed" and result.rounds == 1 and "refused" in result.reason
    assert len(llm.requests) == 1


async def test_llm_client_tool_calls_and_cache_bypass(llm: ScriptedLLM) -> None:
    from sleuth.llm.client import LLMClient
    from sleuth.llm.config import LLMConfig

    class Cache:
        def __init__(self) -> None:
            self.puts = 0

        def get(self, key: str) -> None:
            return None

        def put(self, key: str, reply: object) -> None:
            self.puts += 1

    cache = Cache()
    Script(llm).calls(("search", {"query": "q"}), ("browse", '{"url": "http://a"}'))
    llm.add("plain")
    async with LLMClient(LLMConfig(base_url=llm.base_url, model=MODEL), cache=cache) as client:
        reply = await client.chat(
            [{"role": "user", "content": "go"}],
            stage="agent",
            tools=[{"type": "function", "function": {"name": "search"}}],
            tool_choice="auto",
        )
        plain = await client.chat([{"role": "user", "content": "go"}], stage="agent")
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("search", '{"query": "q"}'),
        ("browse", '{"url": "http://a"}'),
    ]
    assert reply.tool_calls[0].id.startswith("call_") and reply.text == ""
    assert llm.requests[0].body["tool_choice"] == "auto" and "tools" not in llm.requests[1].body
    assert plain.tool_calls == () and cache.puts == 1  # only the request without tools
