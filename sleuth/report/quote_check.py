"""The quotes a report shows, and the check that each is whole and clean.

:func:`quotes_of` reads a Markdown report's quotes (its block quotes and its answers'
lines); :func:`quote_faults` says what is wrong with one, against the text it quotes
when that is at hand: cut inside a sentence without "…", or a reference, backlink,
template, heading, cookie or navigation line, a headline or a link's text.
``python -m bench.answer`` runs the check over every report it writes, and the tests
over theirs.
"""

from __future__ import annotations

import re

from sleuth._headline import COPYRIGHT, after_dateline, headline

__all__ = ["answer_section", "quote_faults", "quotes_of"]

_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_CITES = re.compile(r"(?:\s*\[\d+\])+\s*$")
_SUBJECT_LABEL = re.compile(r"^\*\*[^*]+:\*\* ")


def answer_section(markdown: str) -> str:
    """The text of the report's first ``## Answer`` section ("" when it has none)."""
    heads = list(_SECTION.finditer(markdown))
    for n, head in enumerate(heads):
        if head.group(1).strip() == "Answer":
            end = heads[n + 1].start() if n + 1 < len(heads) else len(markdown)
            return markdown[head.end() : end].strip()
    return ""


def quotes_of(markdown: str) -> list[str]:
    """Every quote a report shows: its block quotes and the lines of its Answer sections
    (``**Answer:**`` paragraphs in a deep report's sections too), Markdown escapes
    resolved and citations dropped."""
    out: list[str] = []
    body = re.split(r"^## Confidence\b", markdown, maxsplit=1, flags=re.MULTILINE)[0]
    in_answer = False
    for line in body.split("\n"):
        if line.startswith(("#", "**")):
            in_answer = line.strip() in ("## Answer", "**Answer:**")
            continue
        text = ""
        if line.startswith("> "):
            text = line[2:]
        elif in_answer and line.startswith("- "):
            text = _SUBJECT_LABEL.sub("", line[2:])  # whom a pronoun means: not quoted
        if text.strip():
            out.append(_CITES.sub("", _MD_ESCAPE.sub(r"\1", text)).strip())
    return out


_FOOTNOTE = re.compile(r"\[\s*(?:\d+|citation needed|note \d+|[a-z])\s*\]", re.IGNORECASE)
_JUNK = [
    (re.compile(r"^\s*[\^↑]"), "reference or backlink line"),
    (
        re.compile(r"Archived from the original|\bRetrieved (?:on )?\d|\bRetrieved \w+ \d"),
        "reference",
    ),
    (re.compile(r"\bTemplate:\w"), "wiki template"),
    (re.compile(r"^\s*\\?#{1,6}\s"), "Markdown heading syntax"),
    (
        re.compile(r"\bcookies?\b.{0,80}\b(?:accept|consent|agree|settings|policy)\b", re.I),
        "cookie",
    ),
    (re.compile(r"(?:[^|·•»]{1,30}\s[|·•»]\s){3,}"), "navigation list"),
    (COPYRIGHT, "copyright line"),
]
_END = ".!?…:;\"'”’)]"
_OPEN = "\"'“‘([¿¡"


def _flat(text: str) -> str:
    return " ".join(_FOOTNOTE.sub("", text).split())


def quote_faults(quote: str, source: str | None = None) -> list[str]:
    """What is wrong with one quote (nothing: ``[]``).

    A quote must be whole sentences: it starts where a sentence starts and ends where one
    ends, unless it says it was shortened with "…" at that end. With the ``source`` text
    it quotes, both ends are checked against it (a sentence starts after the start of a
    line, after ". " or after a news story's dateline; it ends with its punctuation, or a
    line that has none ends); without it, only by how the quote itself begins and ends.
    Reference, backlink, template, heading, cookie and navigation lines, headlines, links'
    texts and captions are faults wherever they come from.
    """
    faults = [why for rule, why in _JUNK if rule.search(quote)]
    if headline(quote):
        faults.append("headline, link or caption line")
    text = _flat(quote)
    if not text:
        return faults
    head_cut, tail_cut = text.startswith("…"), text.endswith("…")
    core = text.strip("… ").strip()
    if not core:  # nothing but "…": cut at both ends
        return faults
    found = _ends_in(core, source) if source is not None else None
    starts, ends = found if found is not None else _ends_alone(core)
    if not starts and not head_cut:
        faults.append("starts inside a sentence without …")
    if not ends and not tail_cut:
        faults.append("ends inside a sentence without …")
    return faults


def _ends_in(core: str, source: str) -> tuple[bool, bool] | None:
    """Whether ``core`` starts and ends where a sentence of ``source`` does (a sentence
    starts after the start of a line or after ". "; it ends with its punctuation, or a
    line that has none ends); None when ``source`` does not hold it."""
    flat = _flat(source)
    at = flat.find(core)
    if at < 0:
        return None
    lines = {" ".join(line.split()) for line in source.split("\n")}
    starts_line = any(line.startswith(core[:40]) for line in lines)
    ends_line = any(line.endswith(core[-40:]) for line in lines)
    before = flat[:at].rstrip()
    starts = (
        starts_line
        or not before
        or before[-1] in '.!?…:;"”)'
        or core[0] in _OPEN
        or after_dateline(before)
    )
    return starts, ends_line or core[-1] in _END


def _ends_alone(core: str) -> tuple[bool, bool]:
    """Whether ``core`` starts and ends as a sentence does, by itself."""
    return core[0].isupper() or core[0].isdigit() or core[0] in _OPEN, core[-1] in _END
