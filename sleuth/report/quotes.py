"""Each citation of the HTML report with the words of its source that back the sentence.

The citation check records, for every sentence it keeps, the best-matching span of each
source the sentence cites (:class:`~sleuth.models.Claim`). :class:`Quotes` finds the
claim a citation marker belongs to (the words just before the marker, in its own
sentence, found in the claim's text) and renders the marker with a popover holding
that span: shown on hover, and on click while the marker has the focus (a click
elsewhere closes it; the marker is a focusable element, not a link that would scroll the
page away), with a link on to the source's entry. A quote shown on hover lets the
pointer through, so it never hides the next citation. No script: the popover is CSS.
Citations without a recorded span link to the source. A span that is the sentence itself
(the words are the source's own) is not written twice: its marker links to the source
and says on hover or focus that the sentence is word for word in it.

A report written without a model quotes its sources in its Answer: each of those
sentences (:class:`~sleuth.models.AnswerSentence`) shows, on its first source's marker, the
sentence as that source has it, and on each other source's marker that source's own
sentence saying the same (from its quoted passages).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from html import escape

from sleuth.models import AnswerSentence, Claim, Source, Support
from sleuth.report.waterfall import minify

__all__ = ["POPOVER_CSS", "QUOTE_CSS", "VERBATIM_CSS", "Quotes"]

_WORDS = re.compile(r"\w+")
_CITES = re.compile(r"\[\^?\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*\]")
#: Where a sentence ends: the words of the marker's own sentence are the ones that count.
_SENTENCE_END = re.compile(r"[.!?。！？]\s")
#: Where a passage splits into sentences (the words a twin source's quote is made of).
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+")
#: Words before a marker matched against the claims (fewer at a sentence's start).
_CONTEXT_WORDS = 6
#: Characters of a quote shown in its popover.
_SHOWN = 320

#: The quote popovers' stylesheet.
POPOVER_CSS = minify("""
.cw{position:relative}
.qt{display:none;position:absolute;left:-.6rem;top:1.5em;z-index:5;width:24rem;max-width:88vw;
padding:.5rem .7rem;font:400 .87rem/1.45 system-ui,sans-serif;text-align:left;
background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:6px;
box-shadow:0 4px 14px #0003;pointer-events:none}
.cw:hover .qt,.cw:focus-within .qt{display:block}
.cw:focus-within .qt{pointer-events:auto}
.qt q{display:block;margin-bottom:.3rem}
.qt a{font-size:.8rem}
.cw .cite{cursor:pointer}
""")
#: The stylesheet of markers whose sentence is the source's own words.
VERBATIM_CSS = minify("""
a.v{position:relative;text-decoration:underline dotted}
.v:hover:after,.v:focus:after{content:"word for word in this source";position:absolute;left:0;
top:1.5em;z-index:5;white-space:nowrap;padding:.2rem .5rem;font:400 .8rem system-ui;
background:var(--fg);color:var(--bg);border-radius:4px}
""")
#: Both: what the web page, which shows any report, carries.
QUOTE_CSS = POPOVER_CSS + VERBATIM_CSS


class Quotes:
    """The spans of a report's kept claims, looked up by citation marker."""

    def __init__(
        self,
        claims: Iterable[Claim] | None,
        sources: Mapping[int, Source],
        answer: Iterable[AnswerSentence] = (),
    ) -> None:
        self.sources = sources
        self.claims: list[tuple[str, dict[int, Support]]] = [
            (_words(_CITES.sub(" ", claim.text)), {s.source: s for s in claim.support})
            for claim in claims or ()
            if claim.verdict in ("kept", "unverified") and claim.support
        ]
        self.claims += [(_words(said.text), _answer_support(said, sources)) for said in answer]
        self._shown = 0

    def at(self, src: str, pos: int, numbers: Iterable[int]) -> dict[int, Support]:
        """The spans for the markers ``numbers`` of the citation at ``pos`` in ``src``
        (the inline text of one paragraph or list item)."""
        if not self.claims:
            return {}
        before = _CITES.sub(" ", src[max(0, pos - 400) : pos])
        # The marker's own sentence: the one it ends ("… next year. [1]"), or is in.
        before = _SENTENCE_END.split(before.rstrip())[-1]
        needle = _words(" ".join(_WORDS.findall(before)[-_CONTEXT_WORDS:]))
        if needle == " ":
            return {}
        for text, spans in self.claims:
            if needle in text:
                # A span that is the sentence itself is not written twice: its quote is
                # left empty, and the marker says the sentence is the source's words.
                return {
                    n: spans[n].model_copy(update={"quote": ""})
                    if _words(spans[n].quote) == text
                    else spans[n]
                    for n in numbers
                    if n in spans
                }
        return {}

    def marker(self, n: int, support: Support | None) -> str:
        """The HTML of marker ``n``: a link to its quote's popover, or to the source."""
        source = self.sources[n]
        if support is None:
            title = escape(source.title, quote=True)
            return f'<a class="cite" href="#source-{n}" title="{title}">{n}</a>'
        if not support.quote:  # the sentence is the source's own words (see at())
            return f'<a class="cite v" href="#source-{n}">{n}</a>'
        self._shown += 1
        anchor = f"q{self._shown}"
        quote = support.quote if len(support.quote) <= _SHOWN else support.quote[:_SHOWN] + "…"
        # A marker without an address: a click focuses it (showing the quote) and does not
        # scroll the page to somewhere else; the quote's own link goes on to the source.
        return (
            f'<span class="cw"><a class="cite" tabindex="0" role="button" '
            f'aria-describedby="{anchor}">{n}</a>'
            f'<span class="qt" id="{anchor}" role="tooltip"><q>{escape(quote)}</q>'
            f'<a href="#source-{n}">source [{n}]</a></span></span>'
        )


def _answer_support(said: AnswerSentence, sources: Mapping[int, Source]) -> dict[int, Support]:
    """What each source an answer sentence cites says: the sentence itself for the source
    it was quoted from (the first), and for each other one the sentence of its quoted
    passages that shares the most words with it (its own wording of the same thing)."""
    out: dict[int, Support] = {}
    for n in said.sources:
        if not out:
            out[n] = Support(source=n, quote=said.text, score=1.0)
            continue
        source = sources.get(n)
        found = _closest(said.text, source.passages if source is not None else [])
        if found is not None:
            out[n] = found.model_copy(update={"source": n})
    return out


def _closest(text: str, passages: Iterable[str]) -> Support | None:
    wanted = set(_words(text).split())
    best, score = "", 0.0
    for passage in passages:
        for sentence in _SENTENCES.split(passage):
            shared = len(wanted & set(_words(sentence).split())) / max(1, len(wanted))
            if shared > score:
                best, score = sentence.strip(), shared
    return Support(source=0, quote=best, score=round(score, 3)) if score >= 0.5 else None


def _words(text: str) -> str:
    """``text`` as its lower-case words, space-separated and space-padded."""
    return " " + " ".join(_WORDS.findall(text.lower())) + " "
