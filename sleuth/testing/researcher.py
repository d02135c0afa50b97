"""``ScriptedResearcher``: replies shaped like a real model's, for every research prompt.

It installs one reply function per prompt of :mod:`sleuth.prompts` on a
:class:`~sleuth.testing.llm.ScriptedLLM`, each computed from the request, so a
whole LLM research runs against the offline web::

    ScriptedResearcher().install(web.llm)
    report = sleuth.research_sync(topic.question, base_url=web.llm_url, model="m", ...)

The replies look like what models send: JSON arrays in code fences, a sentence of
preamble, ``<think>`` blocks (``think=True``), summaries that quote the page,
a Markdown report with ``##`` sections and ``[n]`` citations drawn from the notes
it was given. Steps added to the ScriptedLLM *before* ``install`` win, so a test
scripts only the reply it cares about.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sleuth.testing.llm import ScriptedLLM

__all__ = ["MARKERS", "PLANTED_CITATION", "PLANTED_URL", "PROMPTS", "ScriptedResearcher", "section"]

#: A phrase of each prompt's user message, to script replies per prompt with ``contains``.
MARKERS = {
    "plan": "web search queries that together cover",
    "refine": "new web search queries for what the results above do not cover",
    "select": "Choose at most",
    "summarize": "A part of a web page:",
    "merge": "Notes taken from the parts of one web page:",
    "report": "Write a structured Markdown report",
    "verify": "Does the passage support the statement?",
    # deep mode
    "subquestions": "sub-questions that together cover",
    "learn": "Write the learnings:",
    "outline": "Plan the body of the report",
    "section": "Write the body of this section",
    "frame": "an introduction of about",
    # sleuth eval
    "judge": "Grade the response with one of three words",
}
#: Every prompt the researcher answers, in the order its replies are installed.
PROMPTS = (
    "plan",
    "refine",
    "select",
    "summarize",
    "merge",
    "report",
    "verify",
    "subquestions",
    "learn",
    "outline",
    "section",
    "frame",
    "judge",
)
#: What ``plant=True`` puts into every section reply: a citation of a source that does not
#: exist and a link to a page nobody read (the citation check must remove both).
PLANTED_URL = "https://planted.invalid/fabricated-study"
PLANTED_CITATION = "[99]"

_STOP_WORDS = """a an and are as at be by do does for from has have how in is it its of on
or that the their this to was were what when where which who why will with about into than
worth"""
_STOP = frozenset(_STOP_WORDS.split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def section(prompt: str, name: str) -> str:
    """The text of a ``<<<NAME … NAME>>>`` block of a prompt ("" if absent)."""
    match = re.search(rf"<<<{name}\n(.*?)\n{name}>>>", prompt, re.DOTALL)
    return match.group(1) if match else ""


def _last_user(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _content_words(text: str) -> list[str]:
    words = re.findall(r"[A-Za-z][A-Za-z'’-]+", text)
    return [w.strip("'’") for w in words if w.lower() not in _STOP and len(w) > 2]


def _sentences(text: str, limit: int) -> list[str]:
    lines = [" ".join(line.split()) for line in text.split("\n")]
    prose = " ".join(line for line in lines if len(line) > 60)
    found = [s for s in _SENTENCE.split(prose) if 40 <= len(s) <= 400 and s[-1:] in ".!?"]
    return found[:limit]


@dataclass
class ScriptedResearcher:
    """Reply functions for every research prompt; see the module docstring.

    ``usage=False`` leaves token counts out of the replies, so sleuth counts them
    itself (as for servers that report none) — closer to real tokens than the
    ScriptedLLM's word counts. ``language="zh"`` writes summaries and the report in
    Chinese, quoting the page's figures and names. ``plant=True`` adds a fabricated
    citation and URL to every section of a deep report (:data:`PLANTED_URL`).
    """

    think: bool = False
    usage: bool = True
    language: str = "en"
    picks: int = 4
    plant: bool = False

    def install(self, llm: ScriptedLLM) -> ScriptedLLM:
        """Add a reply for every prompt (used forever: ``times=None``)."""
        for name in PROMPTS:
            llm.add(getattr(self, name), contains=MARKERS[name], times=None, usage=self.usage)
        return llm

    def _wrap(self, text: str) -> str:
        if not self.think:
            return text
        return (
            f"<think>\nThe user wants this done well. Let me think step by step.\n</think>\n{text}"
        )

    # -- one function per prompt ---------------------------------------------------------
    def plan(self, body: dict[str, Any]) -> str:
        question = section(_last_user(body), "QUESTION").rstrip("?")
        words = _content_words(question)
        queries = [
            question,
            " ".join(words[:3]),
            " ".join(words[-3:]),
            " ".join([*words[:2], "news"]),
        ]
        unique = list(dict.fromkeys(q for q in queries if q.strip()))
        return self._wrap(
            "Here are the search queries:\n```json\n"
            + json.dumps(unique, ensure_ascii=False, indent=2)
            + "\n```"
        )

    def refine(self, body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        words = _content_words(section(prompt, "QUESTION"))
        asked = re.search(r"Write at most (\d+) new", prompt)
        follow = [
            " ".join(words[:4]) + " analysis",
            " ".join(words[1:4]) + " latest",
            " ".join(words[-2:]) + " explained",
            " ".join(words[:2]) + " criticism",
            " ".join(words[2:5]) + " data",
            " ".join(words[-3:]) + " history",
        ]
        return self._wrap(
            json.dumps(follow[: int(asked.group(1)) if asked else 4], ensure_ascii=False)
        )

    def select(self, body: dict[str, Any]) -> str:
        results = section(_last_user(body), "RESULTS")
        count = len(re.findall(r"^\d+\. ", results, re.MULTILINE))
        chosen = list(range(1, min(self.picks, count) + 1))
        return self._wrap(f"```json\n{json.dumps(chosen)}\n```")

    def summarize(self, body: dict[str, Any]) -> str:
        page = section(_last_user(body), "PAGE")
        text = page.split("\n\n", 1)[1] if "\n\n" in page else page
        found = _sentences(text, 3)
        if not found:
            return self._wrap("Not relevant.")
        if self.language == "zh":
            return self._wrap("该页面指出：" + " ".join(found))
        return self._wrap("According to the page, " + " ".join(found))

    def merge(self, body: dict[str, Any]) -> str:
        notes = section(_last_user(body), "NOTES").split("\n\n", 1)[-1]
        return self._wrap(" ".join(_SENTENCE.split(" ".join(notes.split()))[:4]))

    def report(self, body: dict[str, Any]) -> str:
        notes = _notes(section(_last_user(body), "SOURCES"))
        if self.language == "zh":
            lines = ["以下根据所读来源回答该问题。", "", "## 主要发现", ""]
            lines += [f"- {s[0]} [{n}]" for n, s in notes.items() if s]
            lines += ["", "## 尚未确定的问题", "", "来源没有回答该问题的所有方面。"]
            return self._wrap("\n".join(lines))
        lines = [
            "The sources read for this question agree on a few points and leave others open.",
            "",
            "## Key points",
            "",
        ]
        lines += [f"- {s[0].rstrip('.')} [{n}]." for n, s in notes.items() if s]
        lines += ["", "## Details", ""]
        lines += [f"{s[1].rstrip('.')} [{n}]." for n, s in notes.items() if len(s) > 1]
        lines += [
            "",
            "## What remains open",
            "",
            "The sources do not settle every part of the question.",
        ]
        return self._wrap("\n".join(lines))

    def verify(self, body: dict[str, Any]) -> str:
        return "SUPPORTED"

    # -- deep mode -----------------------------------------------------------------------
    def subquestions(self, body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        question = section(prompt, "QUESTION").rstrip("?")
        asked = re.search(r"Write (\d+) sub-questions", prompt)
        words = _content_words(question)
        subs = [
            question,
            f"What is {' '.join(words[:3])}?",
            f"{' '.join(words[-3:])} history",
            f"{' '.join(words[:2])} latest developments",
            f"{' '.join(words[1:4])} criticism",
            f"{' '.join(words[2:5])} data",
        ]
        unique = list(dict.fromkeys(q for q in subs if q.strip()))
        return self._wrap(
            "```json\n"
            + json.dumps(unique[: int(asked.group(1)) if asked else 4], ensure_ascii=False)
            + "\n```"
        )

    def learn(self, body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        notes = _notes(section(prompt, "SOURCES"))
        asked = re.search(r"Write at most (\d+) follow-up", prompt)
        learnings = [f"{s[0].rstrip('.')} [{n}]." for n, s in notes.items() if s]
        known = section(prompt, "QUESTION") + " " + section(prompt, "SUBQUESTION")
        names = [
            w
            for s in notes.values()
            for w in re.findall(r"\b[A-Z][a-z]{3,}\b", " ".join(s))
            if w not in known and w.lower() not in _STOP
        ]
        follow = [f"What is known about {name}?" for name in dict.fromkeys(names)]
        count = int(asked.group(1)) if asked else 2
        return self._wrap(
            json.dumps({"learnings": learnings, "follow_ups": follow[:count]}, ensure_ascii=False)
        )

    def outline(self, body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        lines = [line for line in section(prompt, "LEARNINGS").split("\n") if line.strip()]
        asked = re.search(r"at most (\d+) sections", prompt)
        count = max(1, min(3, int(asked.group(1)) if asked else 3, len(lines)))
        plan: list[dict[str, Any]] = []
        for i in range(count):
            chunk = lines[i::count]
            ids = list(
                dict.fromkeys(int(n) for line in chunk for n in re.findall(r"\[(\d+)\]", line))
            )
            words = _content_words(re.sub(r"\[\d+\]", "", chunk[0]))[:4] if chunk else []
            title = f"{i + 1}. {' '.join(words) or 'Findings'}"
            plan.append(
                {"title": title, "covers": f"what the sources say on {title}", "sources": ids}
            )
        return self._wrap(json.dumps(plan, ensure_ascii=False))

    def section(self, body: dict[str, Any]) -> str:
        notes = _notes(section(_last_user(body), "SOURCES"))
        lines = [f"- {s[0].rstrip('.')} [{n}]." for n, s in notes.items() if s]
        lines += [""] + [f"{s[1].rstrip('.')} [{n}]." for n, s in notes.items() if len(s) > 1]
        if self.plant:
            lines += [
                "",
                f"A later study confirmed this {PLANTED_CITATION}; see "
                f"[the study]({PLANTED_URL}) and {PLANTED_URL} for details.",
            ]
        return self._wrap("\n".join(lines))

    def frame(self, body: dict[str, Any]) -> str:
        prompt = _last_user(body)
        lines = [
            line.lstrip("- ") for line in section(prompt, "LEARNINGS").split("\n") if line.strip()
        ]
        intro = lines[0] if lines else "The sources answer parts of the question."
        end = lines[-1] if len(lines) > 1 else "The sources leave parts of the question open."
        return self._wrap(f"[INTRODUCTION]\n{intro}\n\n[CONCLUSION]\n{end}")

    # -- sleuth eval ---------------------------------------------------------------------
    def judge(self, body: dict[str, Any]) -> str:
        """CORRECT when the response holds a form of the gold answer (lower case, no
        punctuation), NOT_ATTEMPTED when it is empty, else INCORRECT; after a sentence
        of preamble, as models write."""
        prompt = _last_user(body)
        response = _plain(section(prompt, "RESPONSE"))
        golds = [_plain(g) for g in section(prompt, "GOLD").split(" | ")]
        if not response.strip():
            verdict = "NOT_ATTEMPTED"
        elif any(g.strip() and g in response for g in golds):
            verdict = "CORRECT"
        else:
            verdict = "INCORRECT"
        return self._wrap(f"Comparing the response with the gold answer.\n{verdict}")


def _plain(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split()) + " "


def _notes(sources: str) -> dict[int, list[str]]:
    """Each numbered source of a SOURCES block: its notes, as sentences."""
    notes: dict[int, list[str]] = {}
    for block in sources.split("\n\n"):
        head = re.match(r"\[(\d+)\] .*\nURL: \S+\n(.*)", block, re.DOTALL)
        if head:
            text = head.group(2).replace("According to the page, ", "")
            notes[int(head.group(1))] = _SENTENCE.split(" ".join(text.split()))
    return notes
