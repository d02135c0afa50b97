"""Stage 7, check citations: an LLM-written report keeps only the citations that hold.

1. **URLs.** The model may only point at sources by number. A link or bare URL to a
   source read in this run becomes its ``[n]``; any other URL was invented (or
   copied from a page) and is removed, keeping a link's text.
2. **Numbers.** ``[n]``, ``[1, 2]``, ``[1-3]``, ``[^1]`` are normalised to ``[1][2]``;
   a number that is not a source of this run is removed.
3. **Claims.** Every sentence that carries a citation is checked against the text of
   the sources it cites (the page's passages and its summary):

   * ``lexical`` (default): every figure in the sentence (numbers of two digits or
     more, decimals, percentages) must occur in a cited source, and at least half
     of its key terms (stemmed words without stop words; character pairs for
     Chinese and Japanese) must occur together in one passage (two adjacent
     paragraphs) or in the summary;
   * ``llm``: the summary model reads the sentence and the cited source's most
     similar passages (and its summary) and answers SUPPORTED or UNSUPPORTED.

   Unsupported sentences are removed. A sentence whose every citation was an unknown
   number is an invented claim: removed, and counted apart. A sentence is *marked*
   unverified instead when it cannot be judged: the model's verdict was unreadable,
   or it is a table row (cells cannot be removed). A heading left with nothing under
   it is removed too.

The counts go to :class:`~sleuth.models.CitationCheck` and the report's footer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError
from sleuth.lang import Labels, labels_for
from sleuth.llm.parse import parse_verdict
from sleuth.llm.tokens import chunk_text
from sleuth.models import Candidate, CitationCheck, Claim, Page, Source
from sleuth.stages.evidence import Evidence, key_terms, lexical_support, split_sentences
from sleuth.stages.write import escape_inline
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = [
    "Evidence",
    "check_citations",
    "claims_of",
    "evidence_of",
    "footer",
    "key_terms",
    "lexical_support",
    "removed_section",
    "split_sentences",
]

# -- URLs ------------------------------------------------------------------------------
_LINK = re.compile(r"(!?)\[([^\]\n]{0,300})\]\(\s*<?([^)\s>]{1,2000})>?(?:\s+\"[^\"\n]*\")?\s*\)")
_REF_DEF = re.compile(r"^[ \t]{0,3}\[[^\]\n]{1,100}\]:[ \t]*<?(\S+?)>?(?:[ \t].*)?$", re.MULTILINE)
# Both take the blanks before the URL along, so a removed URL leaves no " ." behind.
_NEXT = r"(?=([.,;:!?。，；：！？])?)"
_AUTOLINK = re.compile(r"([ \t]*)<((?:https?|ftp)://[^>\s]{1,2000})>" + _NEXT, re.IGNORECASE)
_BARE_URL = re.compile(
    r"([ \t]*)((?:https?|ftp)://[^\s<>\[\]()\"'`]{1,2000}"
    r"|\bwww\.[a-z0-9-]+\.[^\s<>\[\]()\"'`]{2,2000})" + _NEXT,
    re.IGNORECASE,
)
#: Link texts that say nothing of their own: the link becomes just its citation.
_GENERIC_LINK = frozenset(
    {
        "source",
        "sources",
        "link",
        "here",
        "this",
        "ref",
        "reference",
        "more",
        "read more",
        "来源",
        "链接",
        "这里",
        "参考",
    }
)
_URL_TAIL = ".,;:!?。，；：！？"
_NUMBER_ONLY = re.compile(r"\s*\[?\s*\d{1,4}\s*\]?\s*")

# -- citations -------------------------------------------------------------------------
_CITE = re.compile(
    r"\[\^?\s*(\d{1,4}(?:\s*(?:[,;，、]|[-–—])\s*\^?\d{1,4}){0,30})\s*\]"
    r"|【\s*(\d{1,4})\s*】"
)
_RANGE = re.compile(r"(\d{1,4})\s*[-–—]\s*(\d{1,4})")
_MAX_RANGE = 20
_LINE_PREFIX = re.compile(r"^(\s*(?:>\s*)*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?)")


# -- the report body ----------------------------------------------------------------------
@dataclass
class _Unit:
    """One cited sentence (or table row) awaiting its verdict."""

    line: int
    index: int
    claim: str
    ids: list[int]
    table: bool
    verdict: bool | None = None

    @property
    def invented(self) -> bool:
        """Every citation was to a source that does not exist: an invented claim (a table
        row is marked instead, its cells cannot be removed)."""
        return not self.ids and not self.table


@dataclass
class _Counts:
    unknown: int = 0
    invented: int = 0


def _url_id(url: str, known: dict[str, int]) -> int | None:
    url = url.rstrip(_URL_TAIL)
    if url.lower().startswith("www."):
        url = "https://" + url
    return known.get(canonicalize(url))


def clean_urls(body: str, known: dict[str, int], counts: _Counts) -> str:
    """Links and URLs to sources become ``[n]``; every other URL is removed."""

    def link(match: re.Match[str]) -> str:
        text, url = match.group(2).strip(), match.group(3)
        n = _url_id(url, known)
        if n is None:
            counts.invented += 1
            return "" if match.group(1) else text
        if (
            not text
            or _NUMBER_ONLY.fullmatch(text)
            or text.lower() in _GENERIC_LINK
            or canonicalize(text) == canonicalize(url)
        ):
            return f"[{n}]"
        return f"{text} [{n}]"

    def ref(match: re.Match[str]) -> str:
        if _url_id(match.group(1), known) is None:
            counts.invented += 1
        return ""

    def bare(match: re.Match[str]) -> str:
        lead, raw = match.group(1), match.group(2)
        tail = raw[len(raw.rstrip(_URL_TAIL)) :] if match.re is _BARE_URL else ""
        n = _url_id(raw, known)
        if n is None:
            counts.invented += 1
            return tail or ("" if match.group(3) else lead)
        return f"{lead}[{n}]{tail}"

    body = _LINK.sub(link, body)
    body = _REF_DEF.sub(ref, body)
    body = _AUTOLINK.sub(bare, body)
    return _BARE_URL.sub(bare, body)


def _cited(sentence: str, ids: set[int], counts: _Counts) -> tuple[str, list[int], bool]:
    """The sentence with citations normalised, the valid ids, and whether it cited at all."""
    found: list[int] = []
    cited = False

    def fix(match: re.Match[str]) -> str:
        nonlocal cited
        cited = True
        numbers: list[int] = []
        for part in re.split(r"[,;，、]", match.group(1) or match.group(2)):
            span = _RANGE.fullmatch(part.strip().replace("^", ""))
            if span and 0 <= int(span.group(2)) - int(span.group(1)) <= _MAX_RANGE:
                numbers.extend(range(int(span.group(1)), int(span.group(2)) + 1))
            elif part.strip().replace("^", "").isdigit():
                numbers.append(int(part.strip().replace("^", "")))
        valid = [n for n in dict.fromkeys(numbers) if n in ids]
        counts.unknown += len(set(numbers)) - len(valid)
        found.extend(n for n in valid if n not in found)
        return "".join(f"[{n}]" for n in valid)

    text = _CITE.sub(fix, sentence)
    if cited:
        # A citation removed before punctuation leaves "claim ." behind.
        text = re.sub(r"[ \t]+(?=[.,;:!?。，；：！？])", "", text)
        text = re.sub(r"(?<=\S)[ \t]{2,}", " ", text).rstrip(" \t")
    return text, found, cited


def _claim(sentence: str) -> str:
    """The sentence as a claim: no citations, no bold, no blank before punctuation."""
    text = " ".join(_CITE.sub(" ", sentence).replace("**", "").replace("__", "").split())
    return re.sub(r" (?=[.,;:!?。，；：！？])", "", text)


@dataclass
class _Body:
    """The report body split into lines and sentences, with the cited ones listed."""

    lines: list[list[str]]
    prefixes: list[str | None]  # None: a line kept verbatim (code, blank)
    units: list[_Unit]
    counts: _Counts


def _parse(body: str, ids: set[int], counts: _Counts) -> _Body:
    lines: list[list[str]] = []
    prefixes: list[str | None] = []
    units: list[_Unit] = []
    fenced = False
    for number, line in enumerate(body.split("\n")):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.lstrip().startswith("```") or not line.strip():
            lines.append([line])
            prefixes.append(None)
            continue
        heading = line.lstrip().startswith("#")
        table = line.lstrip().startswith("|")
        found_prefix = _LINE_PREFIX.match(line)
        prefix = "" if heading or table or found_prefix is None else found_prefix.group(1)
        rest = line[len(prefix) :]
        pieces = [rest] if heading or table else split_sentences(rest)
        cleaned = []
        for index, piece in enumerate(pieces):
            text, found, cited = _cited(piece, ids, counts)
            cleaned.append(text)
            if cited and not heading:
                units.append(_Unit(number, index, _claim(text), found, table))
        lines.append(cleaned)
        prefixes.append(prefix)
    return _Body(lines, prefixes, units, counts)


def _render(parsed: _Body, marker: str) -> str:
    verdicts = {(u.line, u.index): u for u in parsed.units}
    out: list[str] = []
    for number, (prefix, pieces) in enumerate(zip(parsed.prefixes, parsed.lines, strict=True)):
        if prefix is None:
            out.append(pieces[0])
            continue
        kept: list[str] = []
        for index, piece in enumerate(pieces):
            unit = verdicts.get((number, index))
            if unit is not None and unit.invented:
                continue
            if unit is None or unit.verdict is True:
                kept.append(piece)
            elif unit.verdict is None or unit.table:
                at = piece.rstrip().rfind("|") if unit.table else -1
                if at > 0:
                    kept.append(f"{piece[:at].rstrip()} {marker} {piece[at:]}")
                else:
                    kept.append(f"{piece.rstrip()} {marker}" + piece[len(piece.rstrip()) :])
        text = "".join(kept).lstrip()
        if not text.strip():
            continue  # every sentence of the line was removed: drop the line
        out.append(prefix + text)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_without_empty_headings(out))).strip()


def _without_empty_headings(lines: list[str]) -> list[str]:
    """``lines`` without the headings left with nothing under them (an empty
    "## Conclusion" once its sentences were removed): a heading followed, past blank
    lines, by another heading of its level or a higher one, or by the end."""
    kept: list[str] = []
    after = 1  # the level of the next heading kept below (1 at the end: nothing follows)
    for line in reversed(lines):  # bottom-up: a section emptied of sub-headings goes too
        level = _heading_level(line)
        if level and after and after <= level:
            continue
        if line.strip():
            after = level
        kept.append(line)
    return kept[::-1]


def _heading_level(line: str) -> int:
    match = re.match(r"^\s{0,3}(#{1,6})\s", line)
    return len(match.group(1)) if match else 0


# -- verdicts ------------------------------------------------------------------------------
async def _llm_verdict(llm: RunLLM, unit: _Unit, evidence: dict[int, Evidence]) -> bool | None:
    """SUPPORTED by any cited source: True; by none: False; unreadable answers: None."""
    from sleuth.llm.run import reply_tokens

    reply = reply_tokens(5, llm.window("verify"), share=8)
    budget = llm.text_budget(
        "verify",
        llm.overhead("verify", "verify", sentence=unit.claim, passage=""),
        reply,
        minimum=64,
    )
    terms = key_terms(unit.claim)[0]
    unread = False
    for n in unit.ids:
        passage = "\n\n".join(evidence[n].best(terms, k=3)[::-1])
        passage = chunk_text(passage, budget, model=llm.model_for("verify"))[0] if passage else ""
        answer = await llm.ask(
            "verify", stage="verify", max_tokens=reply, sentence=unit.claim, passage=passage
        )
        verdict = parse_verdict(answer.text)
        if verdict:
            return True
        unread = unread or verdict is None
    return None if unread else False


async def _judge(
    units: list[_Unit], evidence: dict[int, Evidence], method: str, llm: RunLLM | None
) -> str:
    """Set each unit's verdict; the method actually used ("llm" or "lexical")."""
    for unit in units:
        if unit.ids:
            unit.verdict = lexical_support(unit.claim, [evidence[n] for n in unit.ids])
    if method != "llm" or llm is None or not llm.usable:
        return "lexical"
    cited = [u for u in units if u.ids]
    results = await asyncio.gather(
        *(_llm_verdict(llm, u, evidence) for u in cited), return_exceptions=True
    )
    used = False
    for unit, result in zip(cited, results, strict=True):
        if isinstance(result, LLMAuthError):
            raise result
        if isinstance(result, LLMError):
            llm.fell_back("verify", result, "the lexical check judged those sentences")
        elif isinstance(result, BaseException):
            raise result
        else:
            unit.verdict, used = result, True
    return "llm" if used else "lexical"


async def check_citations(
    body: str,
    *,
    ids: set[int],
    urls: dict[str, int],
    evidence: dict[int, Evidence],
    method: str = "lexical",
    llm: RunLLM | None = None,
    language: str = "English",
    claims: list[Claim] | None = None,
) -> tuple[str, CitationCheck]:
    """The checked body and what the check did; see the module docstring.

    ``urls`` maps canonical URLs of the run's sources to their numbers,
    ``evidence`` maps each number to its :class:`Evidence`. ``claims``, when given, is
    extended with every cited sentence, its verdict and the best span of each source
    it cites (:func:`claims_of`).
    """
    counts = _Counts()
    parsed = _parse(clean_urls(body, urls, counts), ids, counts)
    used = await _judge(parsed.units, evidence, method, llm)
    checked = len(parsed.units)
    kept = sum(1 for u in parsed.units if u.verdict is True)
    invented = sum(1 for u in parsed.units if u.invented)
    flagged = sum(
        1
        for u in parsed.units
        if not u.invented and (u.verdict is None or (u.table and not u.verdict))
    )
    result = CitationCheck(
        method="llm" if used == "llm" else "lexical",
        checked=checked,
        kept=kept,
        removed=checked - kept - flagged - invented,
        flagged=flagged,
        unknown_citations_removed=counts.unknown,
        invented_urls_removed=counts.invented,
        invented_claims_removed=invented,
    )
    if claims is not None:
        claims += claims_of(parsed.units, evidence)
    return _render(parsed, labels_for(language).unverified), result


def _verdict(unit: _Unit) -> str:
    if unit.invented:
        return "invented"
    if unit.verdict is None or (unit.table and not unit.verdict):
        return "unverified"
    return "kept" if unit.verdict else "removed"


def claims_of(units: Sequence[_Unit], evidence: dict[int, Evidence]) -> list[Claim]:
    """Each checked sentence as a :class:`Claim`: its verdict, and for each source it
    cites the span of that source's text that best backs it (best first)."""
    claims = []
    for unit in units:
        found = (evidence[n].support(unit.claim, n) for n in unit.ids if n in evidence)
        support = sorted((s for s in found if s is not None), key=lambda s: -s.score)
        claims.append(
            Claim(
                text=unit.claim,
                sources=list(unit.ids),
                verdict=_verdict(unit),  # type: ignore[arg-type]
                support=support,
            )
        )
    return claims


def removed_section(claims: Sequence[Claim], language: str = "English") -> list[str]:
    """The report's appendix listing the sentences the check removed as not supported by
    the sources they cited (none: no lines), each with the numbers it cited."""
    removed = [c for c in claims if c.verdict == "removed"]
    if not removed:
        return []
    lines = [f"## {labels_for(language).removed}", ""]
    for claim in removed:
        cited = "".join(f"[{n}]" for n in claim.sources)
        lines.append(f"- “{escape_inline(claim.text)}” {cited}")
    return [*lines, ""]


def evidence_of(
    sources: list[Source], pages: list[tuple[Candidate, Page]]
) -> tuple[dict[str, int], dict[int, Evidence]]:
    """Each source's known URLs (canonical, to its number) and its text, for
    :func:`check_citations`: the page it was read from when at hand, else its passages."""
    by_url = {page.final_url or candidate.url: (candidate, page) for candidate, page in pages}
    urls: dict[str, int] = {}
    evidence: dict[int, Evidence] = {}
    for source in sources:
        candidate, page = by_url.get(source.url, (None, None))
        spellings = [source.url]
        if candidate is not None and page is not None:
            spellings += [candidate.url, page.url, page.final_url]
        for url in spellings:
            urls.setdefault(canonicalize(url), source.id)
        text = page.text if page is not None else "\n\n".join(source.passages)
        evidence[source.id] = Evidence.build(text, source.summary)
    return urls, evidence


def footer(check: CitationCheck, language: str = "English") -> str:
    """The report's last line: what the citation check did."""
    labels: Labels = labels_for(language)
    if language in ("Simplified Chinese", "Traditional Chinese"):
        text = (
            f"{labels.check_title}（{check.method}）：检查了 {check.checked} 个带引用的句子；"
            f"保留 {check.kept} 个，删除 {check.removed} 个（引用的来源不支持），"
            f"标记 {check.flagged} 个为未核实。另删除 {check.unknown_citations_removed} "
            f"个未知来源的引用、{check.invented_urls_removed} 个不在来源列表中的网址、"
            f"{check.invented_claims_removed} 个只引用不存在来源的句子。"
        )
        return f"_{text}_"

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return (
        f"_{labels.check_title} ({check.method}): {plural(check.checked, 'cited sentence')} "
        f"checked; {check.kept} kept, {check.removed} removed as not supported by the "
        f"cited source, {check.flagged} marked unverified. Also removed: "
        f"{plural(check.unknown_citations_removed, 'citation')} of an unknown source, "
        f"{plural(check.invented_urls_removed, 'URL')} not among the sources, "
        f"{plural(check.invented_claims_removed, 'sentence')} citing only sources that "
        "do not exist._"
    )
