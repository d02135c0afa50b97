"""Names in a page's text: the things a question or a page names, and the second hops.

Deep research without a model (:mod:`sleuth.stages.explore`) splits a question into the
things it names and follows the names its pages give. This module finds them:

* :func:`named_things`: titles in quotes and runs of capitalised words, less sentence
  starts, labels ("Note 1:"), units, datelines ("Updated November 20") and a page's
  chrome ("SEE MORE"); :func:`quoted_titles` keeps quotes shaped like titles, not
  quoted speech.
* :func:`bridge_entities`: the names a branch's pages give that the question does not,
  scored by the pages that give them and how much of the question their sentence shares.
* :func:`terms`, :func:`repeats`, :func:`titled`, :func:`named_by`, :func:`mentions`,
  :func:`own_first`: the word-level comparisons the explorer makes with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sleuth.models import Candidate
from sleuth.stages.read import split_passages

__all__ = [
    "bridge_entities",
    "mentions",
    "named_by",
    "named_things",
    "own_first",
    "quoted_titles",
    "repeats",
    "terms",
    "titled",
]

_QUOTED = re.compile(r"[\"“]([^\"”\n]{2,80})[\"”]")
_TOKEN = re.compile(r"[^\W_][\w'’.-]*")
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
besides despite unlike like among against without within through across beyond toward towards
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
    """Titles in quotes in ``text`` (a film, a song, a book): short, and capitalised as
    titles are. Quoted speech ("this is a statewide problem, and…", said a governor)
    is not a title."""
    return [_clean_name(m.group(1)) for m in _QUOTED.finditer(text) if _title_like(m.group(1))]


def _title_like(quoted: str) -> bool:
    words = [w for w in quoted.split() if w.lower() not in _JOINERS]
    capitals = sum(1 for w in words if w[:1].isupper() or w[:1].isdigit())
    return 0 < len(words) <= 10 and capitals * 2 >= len(words)


_CALENDAR_WORDS = """
monday tuesday wednesday thursday friday saturday sunday
january february march april june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
"""
_WEEKDAYS = frozenset(_CALENDAR_WORDS.split()[:7])
_MONTHS = frozenset(_CALENDAR_WORDS.split()[7:])
_SAYS_WORDS = "says said say told tells writes wrote reports reported adds added"
_SAYS = frozenset(_SAYS_WORDS.split())


def _dateline_or_chrome(name: str) -> bool:
    """Whether a capitalised run is a date, a dateline, a speaker's tag or a page's chrome
    ("Updated November 20", "Twitter on Monday", "Ward says", "SEE MORE") rather than a name."""
    words = name.split()
    bare = [w.lower().strip(".,") for w in words]
    if any(w in _WEEKDAYS for w in bare) or bare[-1] in _SAYS:
        return True
    for i, w in enumerate(bare):
        dated = i + 1 < len(bare) and bare[i + 1][:1].isdigit()
        if w in _MONTHS and (dated or i == len(bare) - 1):
            return True
    if len(words) > 1 and name.isupper() and all(w.isalpha() for w in words):
        return True
    return bare[0].isdigit() and len(words) <= 2


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
        elif word == "and" and _office_runs_on(run, tokens[i + 1 : i + 2], text):
            run.append(token)
        else:
            close()
    close()
    names = [
        n
        for n in found
        if len(n) >= 3
        and n.lower() not in _STOP
        and not _dateline_or_chrome(n)
        and not _ROMAN.fullmatch(n)
    ]
    return list(dict.fromkeys(names))


#: A generation's numeral ("O'Neal, III"): a suffix of the name before it, not a name.
_ROMAN = re.compile(r"[IVX]+")


def _office_runs_on(run: list[re.Match[str]], following: list[re.Match[str]], text: str) -> bool:
    """Whether an "and" continues the name in ``run``: the name already runs on across
    a small word ("Minister for Mines and Energy", "Department of Health and Welfare")
    and a capitalised word follows at once. Two names side by side ("Ada Brill and Jon
    Arvel") are two."""
    joined = any(t.group(0) in _JOINERS for t in run[1:])
    return (
        joined
        and bool(following)
        and following[0].group(0)[:1].isupper()
        and not text[run[-1].end() : following[0].start()].replace(" and ", "").strip()
    )


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
