"""Deep research's exploring step: sub-questions, learnings and follow-up questions.

A deep research (:mod:`sleuth.pipeline.deep`) researches a tree of questions. This
stage writes its parts:

* **Sub-questions** (the first level). With a model, the ``subquestions`` prompt; without
  one, :func:`rule_subquestions`: the question itself, then the things it names (titles
  in quotes, capitalised names) and the sides of a comparison, each researched on its own.
* **Learnings and follow-ups** of a branch once its pages are read. With a model, the
  ``learn`` prompt: short cited statements, and follow-up questions for what the sources
  leave open. Without one, :func:`bridge_entities`: the names and titles the branch's
  pages mention and the question does not (the bridge of a multi-hop question: the film
  a town page names, the publisher an author's page names), to be searched as a second
  hop.
* **What is known already** (:func:`repeats`): a follow-up whose words all appear in a
  question already asked, or that shares most of them with one, is not explored.

Replies are parsed tolerantly; when no usable answer comes back the rule-based path is
taken and the run's Gaps say why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sleuth.errors import LLMAuthError, LLMError, ParseError
from sleuth.llm.parse import expect_list, json_values, parse_list, strip_think
from sleuth.models import Candidate, Failure, Source
from sleuth.stages.judge import Judge
from sleuth.stages.plan import MAX_QUERY_CHARS, dedupe
from sleuth.stages.read import split_passages
from sleuth.stages.write import sources_block
from sleuth.terms import parse
from sleuth.urls import canonicalize

if TYPE_CHECKING:
    from sleuth.llm.run import RunLLM

__all__ = [
    "Learning",
    "bridge_entities",
    "learn",
    "llm_subquestions",
    "mentions",
    "named_by",
    "named_things",
    "own_first",
    "quoted_titles",
    "repeats",
    "rule_subquestions",
    "terms",
    "titled",
]

#: Learnings kept per branch (the prompt asks for at most 8).
MAX_LEARNINGS = 8
_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|\s+(?:and|or|vs\.?|versus)\s+|,\s*)", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,80})[\"”]")
_TOKEN = re.compile(r"[^\W_][\w'’.-]*")
_CITE = re.compile(r"\[(\d{1,3})\]")
#: Lower-case words allowed inside a name ("Recovery of Aristotle", "Ludwig van Beethoven").
_JOINERS = frozenset(
    {
        "of",
        "the",
        "de",
        "del",
        "della",
        "der",
        "van",
        "von",
        "da",
        "la",
        "le",
        "du",
        "y",
        "al",
        "bin",
        "on",
        "upon",
        "for",
    }
)
_SUFFIXES = ("ing", "ed", "es", "s")
#: Capitalised words that are not names: sentence starts, question words, calendar words.
_NOT_NAME_WORDS = """
a an the this that these those it its he she his her they their them we our you your i
in on at by for from to of and or but if when where while who whom whose which what why how
is are was were be been do does did has have had can could should would will may might must
there here then than as also after before during since until into over under about between
both either neither each every all some any many most more such other another one two three
not no yes so very according however although though because first second third last
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
mr mrs ms dr st mt
"""
_NOT_NAMES = frozenset(_NOT_NAME_WORDS.split())
_COMMON_WORDS = """
named name known called based located born died made found new old same own well much
film song book band album novel town city county state country year years people person
wikipedia
"""
#: Nationality and like adjectives: capitalised, but a description ("an American actress"),
#: not a thing to research on its own.
_ADJECTIVES = """
american british english german french italian spanish portuguese welsh scottish irish
canadian australian chinese japanese korean indian russian european african asian
olympic christian catholic jewish muslim swedish norwegian danish dutch polish greek
roman mexican brazilian hawaiian argentine austrian swiss belgian turkish persian arab
arabic latin egyptian israeli soviet
"""
_STOP = _NOT_NAMES | frozenset(_COMMON_WORDS.split()) | frozenset(_ADJECTIVES.split())


# -- words -------------------------------------------------------------------------------
def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """Lower-case content words of ``text``, crudely stemmed ("filmed" and "films" are
    "film")."""
    out = set()
    for word in re.findall(r"[^\W_]+", text.lower()):
        if (len(word) < 3 and not word.isdigit()) or word in _STOP:
            continue
        out.add(_stem(word))
    return out


def repeats(question: str, known: Iterable[str]) -> bool:
    """Whether ``question`` asks what a question in ``known`` already asked.

    It does when it has no content words, when all its content words are in one known
    question, or when it shares at least three quarters of the two questions' words
    with one (Jaccard).
    """
    mine = terms(question)
    if not mine:
        return True
    for other in known:
        theirs = terms(other)
        if mine <= theirs or len(mine & theirs) >= 0.75 * len(mine | theirs):
            return True
    return False


def _clean_name(name: str) -> str:
    name = " ".join(name.split()).strip(" .,;:'’-")
    return re.sub(r"['’]s$", "", name)


def quoted_titles(text: str) -> list[str]:
    """Titles in quotes in ``text`` (a film, a song, a book), those with a capital."""
    return [
        _clean_name(m.group(1))
        for m in _QUOTED.finditer(text)
        if any(ch.isupper() for ch in m.group(1))
    ]


def _starts_sentence(text: str, at: int) -> bool:
    before = text[:at].rstrip(" \t\"'“‘(")
    return not before or before[-1] in ".!?:;#\n"


#: Short words whose period does not end a sentence.
_ABBREVIATIONS = frozenset(
    {"st", "mt", "dr", "jr", "sr", "mr", "mrs", "ms", "no", "vs", "co", "inc", "ltd"}
)


def _ends_sentence(word: str) -> bool:
    """Whether a capitalised token's final period ends its sentence ("Alexander." yes;
    "St.", "D.III", an initial "M." no)."""
    bare = word[:-1]
    return (
        word.endswith(".")
        and len(bare) > 2
        and "." not in bare
        and bare.lower() not in _ABBREVIATIONS
    )


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` (a result's title and snippet) has every content word of ``name``."""
    words = terms(name)
    return bool(words) and words <= terms(text)


def _tier(title: str, name: str) -> int:
    key = " ".join(name.lower().split())
    if " ".join(title.lower().split()) == key:
        return 0
    base = _base_title(title)
    # "Young, New South Wales": a place qualified by its region, as encyclopedias title them.
    return 1 if key in (base, base.split(", ", 1)[0]) else 2


def named_by(question: str, title: str) -> bool:
    """Whether ``question`` names the page titled ``title``: every content word of its
    title, qualifier aside, is in the question (a multi-hop question's first hop)."""
    words = terms(_base_title(title))
    return bool(words) and words <= terms(question)


def titled(title: str, name: str) -> bool:
    """Whether a page titled ``title`` is the page of ``name`` (a branch's question): its
    title is the name, but for a qualifier in brackets, after a dash or a comma ("Toad
    Hall (ANU)" for "Toad Hall", "Young, New South Wales" for "Young"; not "Toad Hall
    Records", nor any page for "What is known about Check?")."""
    return _tier(title, name) < 2


def own_first(name: str, ranked: Sequence[Candidate]) -> list[Candidate]:
    """``ranked`` with the page titled exactly ``name`` first, then those titled so
    but for a qualifier, then the others: a name's own page before the pages that also
    carry its words ("Audrey Williams" before "Audrey Williams (archaeologist)" before
    "Lee Roy Selmon's"); stable within each."""
    return sorted(ranked, key=lambda c: _tier(c.title, name))  # stable within a tier


def named_things(text: str) -> list[str]:
    """Titles in quotes and capitalised names in ``text``, in order of appearance.

    A name is a run of capitalised words, with lower-case joiners inside it ("Recovery
    of Aristotle") and the numbers that follow it ("Heinkel HD 23"); a single
    capitalised word that starts a sentence ("Note", "The") is not, as it is
    capitalised for that alone.
    """
    found: list[str] = quoted_titles(text)
    tokens = list(_TOKEN.finditer(text))
    run: list[re.Match[str]] = []

    def _after_number(token: re.Match[str]) -> bool:
        return bool(re.search(r"\d\s*$", text[: token.start()]))

    def close() -> None:
        if len(run) > 1 and len(run[0].group(0).rstrip(".")) == 1 and _after_number(run[0]):
            run.pop(0)  # "96 C. Light roasts": a unit, then a sentence's first word
            if len(run) == 1:
                run.clear()
        while run and run[-1].group(0).lower() in _JOINERS:
            run.pop()  # "Bank of" → "Bank"
        while (
            run
            and run[0].group(0).lower() in _NOT_NAMES
            and not (run[0].group(0) == "The" and len(run) > 1)
        ):
            run.pop(0)  # "In Akkadian" is "Akkadian"; "The Exies" keeps its "The"
        capitals = [t for t in run if t.group(0)[:1].isupper()]
        if len(run) == 1 and _starts_sentence(text, run[0].start()):
            run.clear()
        elif len(capitals) == 1 and text[run[-1].end() :].startswith(":"):
            run.clear()  # a label, "Note 1:", "Step 2:"
        if not any(len(t.group(0).rstrip(".")) > 1 for t in capitals):
            run.clear()  # "C for 1" (80 C for 1 minute): a unit, not a name
        if all(token.group(0).isdigit() for token in run):
            run.clear()  # "At 2011" is no name once "At" is gone
        if run:
            found.append(_clean_name(text[run[0].start() : run[-1].end()]))
        run.clear()

    for i, token in enumerate(tokens):
        word = token.group(0)
        gap = text[tokens[i - 1].end() : token.start()] if i else ""
        if run and (gap.strip() or "\n" in gap):  # punctuation or a line break ends a name
            close()
        # A number after a name is part of it: "Heinkel HD 23", "BWV 1033", "Apollo 11".
        if word[0].isupper() or (run and (word.lower() in _JOINERS or word.isdigit())):
            run.append(token)
            if _ends_sentence(word):  # "… Jane Alexander. It was" ends at "Alexander"
                close()
        else:
            close()
    close()
    names = [n for n in found if len(n) >= 3 and n.lower() not in _STOP]
    return list(dict.fromkeys(names))


# -- sub-questions -----------------------------------------------------------------------
def rule_subquestions(question: str, breadth: int) -> list[str]:
    """The sub-questions of ``question`` without a model, at most ``breadth``.

    The question itself comes first (its own search finds the pages that answer it
    most directly); then the parts it names, as it names them ("the Moon, Jupiter's moon
    Europa and Saturn's moon Titan": ``Moon``, ``Jupiter's moon Europa``, ``Saturn's moon
    Titan``; not the agency that found them); parts that are plain words ("markets and
    trade talks") are each the question asked of that part alone. Without parts, each
    thing it names (a film in quotes, a person, a place), researched on its own, which
    is how the first hop of a multi-hop question is found; then the sides of a
    comparison ("X or Y", "X vs Y") when it names nothing.
    """
    subs = [question.strip(), *_part_questions(question)]
    if len(subs) == 1:
        core = question.strip().rstrip("?!.。？！ ").strip()
        names = [n for n in named_things(core) if n.lower() != core.lower()]
        # A name inside a longer one ("York" in "New York") is researched as the longer one.
        names = [
            n
            for n in names
            if not any(n != other and n.lower() in other.lower() for other in names)
        ]
        parts = [p.strip() for p in _SPLIT.split(core) if len(terms(p)) >= 1]
        subs += names
        if len(subs) == 1 and len(parts) > 1:
            subs += parts
    return dedupe(subs)[: max(1, breadth)]


def _part_questions(question: str) -> list[str]:
    """The parts of the question's main coordination as sub-questions: each part as the
    question names it when every part is a name, else the question asked of each part
    alone; [] without parts, or when names and plain words are mixed."""
    parsed = parse(question)
    if len(parsed.parts) < 2:
        return []
    named = [any(w[:1].isupper() for w in item) for item in parsed.items]
    if all(named):
        return list(parsed.parts)
    if any(named):
        return []
    tokens, (start, end) = parsed.tokens, parsed.span
    before, after = list(tokens[:start]), list(tokens[end + 1 :])
    out = []
    for part in parsed.parts:
        text = " ".join([*before, part, *after])
        out.append(re.sub(r"\s+([?!.,;:])", r"\1", text))
    return out


def _clean_questions(items: Sequence[str], count: int) -> list[str]:
    kept = [" ".join(item.split()) for item in items]
    return dedupe([q for q in kept if q and len(q) <= MAX_QUERY_CHARS])[:count]


async def llm_subquestions(
    question: str, breadth: int, llm: RunLLM
) -> tuple[list[str], str | None]:
    """The question itself, then the model's sub-questions that bear on it (judged as a
    page would be, :mod:`sleuth.stages.judge`), and a note; the rule-based sub-questions
    when the call fails or none of the model's relates to the question (a small model
    that plans badly never makes the research worse than no model)."""
    from sleuth.llm.run import reply_tokens

    try:
        reply = await llm.ask(
            "subquestions",
            stage="subquestions",
            max_tokens=reply_tokens(40 * breadth, llm.window("subquestions")),
            today=llm.today,
            question=question,
            count=breadth,
            language=llm.language,
        )
        subs = _clean_questions(expect_list(reply.text, what="sub-questions"), breadth)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("subquestions", exc, "the rule-based sub-questions were used")
        return rule_subquestions(question, breadth), f"LLM sub-questions failed: {exc}"
    judge = Judge(question)
    own = _key(question)
    related = [q for q in subs if " ".join(q.lower().split()) != own and judge.page("", q).on_topic]
    if subs and not related:
        note = "the model's sub-questions do not bear on the question"
        llm.failures.append(
            Failure(
                url="",
                stage="llm",
                reason=f"LLM sub-questions: {note}; the rule-based sub-questions were used",
            )
        )
        return rule_subquestions(question, breadth), note
    subs = dedupe([question.strip(), *related])[: max(1, breadth)]
    llm.info(f"LLM plan: {len(subs)} sub-questions", subquestions=subs)
    return subs, None


def _key(question: str) -> str:
    return " ".join(question.lower().rstrip("?!.。？！ ").split())


# -- learnings and follow-ups ------------------------------------------------------------
@dataclass(frozen=True)
class Learning:
    """A statement a branch's sources make, and the canonical URLs of those sources."""

    text: str
    urls: tuple[str, ...] = field(default_factory=tuple)


def _fallback_learnings(sources: Sequence[Source]) -> list[Learning]:
    """Each source's summary (or first passage) as one learning: the path without a model."""
    out = []
    for source in sources:
        text = source.summary or (source.passages[0] if source.passages else "")
        if text.strip():
            out.append(Learning(" ".join(text.split())[:600], (canonicalize(source.url),)))
    return out[:MAX_LEARNINGS]


def _parse_learn(text: str) -> tuple[list[str], list[str]]:
    """(learnings, follow-ups) of a learn reply; ParseError when it has neither."""
    answer = strip_think(text)
    for value in json_values(answer):
        if isinstance(value, dict):
            lists = {
                str(k).lower().replace("-", "_").replace(" ", "_"): v
                for k, v in value.items()
                if isinstance(v, list)
            }
            learned = [str(v) for v in lists.get("learnings", []) if isinstance(v, str)]
            follow = [
                str(v)
                for v in lists.get("follow_ups", lists.get("followups", []))
                if isinstance(v, str)
            ]
            if learned or follow or "learnings" in lists:
                return learned, follow
    learned = parse_list(answer)
    if not learned:
        raise ParseError("the model's reply had no learnings", excerpt=answer[:80])
    return learned, []


async def learn(
    llm: RunLLM, question: str, subquestion: str, sources: Sequence[Source], count: int
) -> tuple[list[Learning], list[str]]:
    """What a branch's ``sources`` established (cited), and at most ``count`` follow-ups.

    ``sources`` are numbered as the branch read them (1, 2, …); a learning's citations
    become the canonical URLs of those sources, and one that cites none is dropped. On a
    model failure each source's summary is a learning and there are no follow-ups.
    """
    from sleuth.llm.run import reply_tokens

    if not sources:
        return [], []
    local = [s.model_copy(update={"id": n}) for n, s in enumerate(sources, start=1)]
    urls = {s.id: canonicalize(s.url) for s in local}
    values: dict[str, object] = {
        "question": question,
        "subquestion": subquestion,
        "count": count,
        "language": llm.language,
    }
    try:
        reply_size = reply_tokens(60 * MAX_LEARNINGS, llm.window("learn"))
        budget = llm.text_budget(
            "learn", llm.overhead("learn", "learn", sources="", **values), reply_size
        )
        reply = await llm.ask(
            "learn",
            stage="learn",
            max_tokens=reply_size,
            sources=sources_block(local, llm, budget, stage="learn"),
            **values,
        )
        learned, follow = _parse_learn(reply.text)
    except LLMAuthError:
        raise
    except LLMError as exc:
        llm.fell_back("learn", exc, "each source's summary stands as what the branch learned")
        return _fallback_learnings(sources), []
    out = []
    for text in learned[:MAX_LEARNINGS]:
        cited = tuple(dict.fromkeys(urls[n] for n in map(int, _CITE.findall(text)) if n in urls))
        statement = " ".join(_CITE.sub("", text).split())
        if cited and statement:
            out.append(Learning(statement, cited))
    return out, _clean_questions(follow, count)


# -- the second hop without a model ------------------------------------------------------
def _base_title(title: str) -> str:
    """A page title without its disambiguation or site suffix ("Lilu (mythology)" → "lilu")."""
    title = re.sub(r"\s*\([^)]*\)\s*$", "", title)
    return " ".join(re.split(r"\s+[-|–—]\s+", title)[0].lower().split())


def bridge_entities(
    question: str, pages: Sequence[tuple[str, str]], count: int, known: Iterable[str] = ()
) -> list[str]:
    """Names and titles the ``pages`` mention that the question does not: second hops.

    ``pages`` are (title, text) in the branch's rank order. Each name is scored by the
    pages it appears in (better-ranked pages count more) and by how much of the question
    the sentence around it shares, so the name a page gives in answer to the question
    comes first. Names already asked about (``known``), named in the question, or the
    title of a page already read are left out. At most ``count``.
    """
    asked = terms(question)
    known_list = list(known)
    read = {_base_title(title) for title, _ in pages}
    read_terms = [terms(title) for title, _ in pages]
    scores: dict[str, float] = {}
    shown: dict[str, str] = {}  # first spelling seen, in order of appearance
    for rank, (title, text) in enumerate(pages):
        weight = 1.0 / (1 + rank)
        own = _base_title(title)
        own_terms = terms(own)
        for sentence in split_passages(text)[:12]:
            overlap = len(terms(sentence) & asked)
            titles = {t.lower() for t in quoted_titles(sentence)}
            for name in named_things(sentence):
                words = terms(name)
                key = name.lower()
                if (
                    not words
                    or words <= asked
                    or key == own
                    or key in read
                    or any(words <= seen for seen in read_terms)
                    or repeats(name, known_list)
                ):
                    continue
                # A title in quotes is a work (film, song, book): the commonest bridge. A
                # name sharing the words of the page's own title is more often a sibling
                # of what was read ("Act of War: Gold Edition" on "Act of War: Direct
                # Action") than the next hop.
                bonus = (1.5 if len(name.split()) > 1 else 1.0) * (1.5 if key in titles else 1.0)
                bonus *= 0.5 if words & own_terms else 1.0
                scores[key] = scores.get(key, 0.0) + weight * bonus * (1 + overlap)
                shown.setdefault(key, name)
    order = list(shown)
    best = sorted(scores, key=lambda k: (-scores[k], order.index(k)))
    return [shown[key] for key in best[: max(0, count)]]
