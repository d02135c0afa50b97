"""The words of a question: its key terms, its parts, and the search queries they make.

Shared by the planner (the queries a person would type), the relevance gate (which
pages bear on the question and on which of its parts) and the choice of sources (each
part covered before a second source for any part). English only: a question in another
script has key terms (its words, or character pairs for Chinese and Japanese) but no
parts.

A question's **parts** are the items of its main coordination: "the Moon, Jupiter's
moon Europa and Saturn's moon Titan", "markets and trade talks", "Mark King or Nick
Hexum". Each item reaches as far as a phrase does without a parser: over content words
and names, stopping at function words, punctuation, verb forms ("affecting", "fighting")
and adverbs; a name may hold small words between capitals ("First for Women"); an "and"
inside a title ("the film Kiss and Tell") is not a coordination. A possessive item
("its founder Adam Neumann") is read with the first item ("WeWork founder Adam Neumann").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

__all__ = [
    "Parsed",
    "content_terms",
    "is_subphrase",
    "keywords",
    "parse",
    "phrase_words",
    "stem",
    "terms_of",
]

# Words (with inner apostrophes, hyphens, dots: "US-China", "2.0"), initials ("E."), marks.
_TOKEN = re.compile(r"[^\W\d_]\.(?=\s+[^\W\d_])|[^\W_](?:[\w'’.\-&]*[^\W_])?|[^\w\s]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_FUNCTION_WORDS = """
a about above across after against all along also although am among an and any anyone are
around as at be because been before behind being below beneath between both but by can could
did do does doing done down during each either else even ever every for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just
let many may me might more most much must my myself near neither no nor not now of off on
once one only onto or other our ours out over own per rather same several she should since
so some such than that the their theirs them themselves then there these they this those
though through throughout thus to too toward towards under until up upon us very via was we
were what whatever when whenever where whether which while who whom whose why will with
within without would yet you your yours
"""
#: Words that carry no topic: function words and the vague words questions are made of.
STOP = frozenset(_FUNCTION_WORDS.split()) | frozenset(
    [
        "recently",
        "currently",
        "actually",
        "really",
        "first",
        "second",
        "third",
        "last",
        "latest",
        "new",
        "recent",
        "today",
        "now",
        "vs",
        "versus",
        "etc",
        "like",
        "including",
        "include",
        "includes",
    ]
)
#: Words that introduce a title: "the film Kiss and Tell" is one name, not two parts.
_TITLE_NOUNS = frozenset(
    [
        "album",
        "band",
        "book",
        "film",
        "movie",
        "musical",
        "novel",
        "opera",
        "play",
        "poem",
        "series",
        "show",
        "single",
        "song",
        "episode",
        "game",
        "magazine",
        "newspaper",
        "painting",
        "sitcom",
        "documentary",
    ]
)
_DETERMINERS = frozenset(["a", "an", "the"])
_POSSESSIVES = frozenset(["its", "their", "his", "her", "our", "my", "your"])
_CONJUNCTIONS = frozenset({"and", "or", "vs", "vs.", "versus", "&"})
_WH = frozenset(["how", "why", "what", "when", "where", "who", "which", "whom", "whose"])


def _is_word(token: str) -> bool:
    return token[:1].isalnum()


def _capital(token: str) -> bool:
    return token[:1].isupper() or (token[:1].isdigit() and any(c.isupper() for c in token))


@lru_cache(maxsize=1 << 16)  # a page's words repeat: each is stemmed once
def stem(word: str) -> str:
    """A light English suffix stripper (tariffs → tariff, moons → moon, talks → talk;
    release, released, releases, releasing → releas)."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    # "release" and "released" meet at "releas" (a silent e, then the suffix).
    return word[:-1] if len(word) > 4 and word.endswith("e") and not word.endswith("ee") else word


def terms_of(text: str) -> list[str]:
    """The stemmed content words of ``text`` in order (CJK: character pairs), repeats kept."""
    return [term for token in _TOKEN.findall(text) for term in _token_terms(token)]


@lru_cache(maxsize=1 << 16)  # a page's words repeat, and pages share most of theirs
def _token_terms(token: str) -> tuple[str, ...]:
    """The terms of one token of :data:`_TOKEN` (see :func:`terms_of`)."""
    if _CJK.search(token):
        run = "".join(c for c in token if _CJK.match(c))
        return tuple(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    if not _is_word(token):
        return ()
    return tuple(
        stem(piece)
        for piece in _PIECES.split(token)
        if piece and piece.lower() not in STOP and (len(piece) > 1 or piece.isdigit())
    )


_PIECES = re.compile(r"[-&.]")


#: Texts up to this long (a sentence, a title, a query) are remembered by
#: :func:`content_terms`: the answer's scorers ask for a sentence's terms several times,
#: and a run's pages are scored as they arrive, then again together.
CACHED_CHARS = 400


def content_terms(text: str) -> frozenset[str]:
    """The set of :func:`terms_of` ``text``."""
    if len(text) <= CACHED_CHARS:
        return _short_terms(text)
    return frozenset(terms_of(text))


@lru_cache(maxsize=1 << 13)
def _short_terms(text: str) -> frozenset[str]:
    return frozenset(terms_of(text))


def phrase_words(text: str) -> list[str]:
    """``text``'s words, lower-cased, for comparing phrases (punctuation dropped)."""
    return [t.lower().replace("’", "'") for t in _TOKEN.findall(text) if _is_word(t)]


def is_subphrase(short: str, long: str) -> bool:
    """Whether the words of ``short`` occur in ``long`` as one run, in order."""
    small, big = phrase_words(short), phrase_words(long)
    if not small or len(small) > len(big):
        return False
    return any(big[i : i + len(small)] == small for i in range(len(big) - len(small) + 1))


@dataclass(frozen=True)
class Parsed:
    """A question split into tokens, with its main coordination (if any).

    ``parts`` are the items of the main coordination as a reader would name them
    (determiners dropped, a possessive item read with the first one); ``span`` is
    the tokens the coordination covers; ``others`` the spans and items of the other
    coordinations.
    """

    tokens: tuple[str, ...]
    parts: tuple[str, ...] = ()
    items: tuple[tuple[str, ...], ...] = ()
    span: tuple[int, int] = (0, 0)
    others: tuple[tuple[tuple[int, int], tuple[tuple[str, ...], ...]], ...] = ()


def _breaks(tokens: list[str], i: int, first: int) -> bool:
    """Whether token ``i`` ends a phrase (outside a name)."""
    token = tokens[i]
    if not _is_word(token):
        return token not in ("'", "’")
    low = token.lower()
    if _capital(token) and i != first:
        return False
    if low in STOP or low in _CONJUNCTIONS:
        return True
    return _verb_like(token)


def _verb_like(token: str) -> bool:
    low = token.lower()
    return (
        not _capital(token)
        and len(low) > 4
        and (low.endswith(("ing", "ly")) or (low.endswith("ed") and not low.endswith("eed")))
    )


def _inside_name(tokens: list[str], i: int) -> bool:
    """A small word between two capitalised words: "First for Women", "Act of War"."""
    return (
        0 < i < len(tokens) - 1
        and tokens[i].lower() in ("of", "for", "the", "in", "de", "von", "van", "la", "le", "del")
        and _capital(tokens[i - 1])
        and _capital(tokens[i + 1])
    )


def _extent(tokens: list[str], start: int, step: int) -> tuple[int, int]:
    """The item that begins next to a conjunction at ``start``, read in direction ``step``."""
    i = _item_start(tokens, start, step)
    if i is None:
        return start, start - step
    if _verb_like(tokens[i]):
        return (start, i) if step > 0 else (i, start)
    j = _item_end(tokens, i, step)
    return (start, j) if step > 0 else (j, start)


def _item_start(tokens: list[str], start: int, step: int) -> int | None:
    """Where the item next to a conjunction starts (past a determiner), or None when no
    item begins there."""
    n = len(tokens)
    i = start
    if step > 0 and i < n and tokens[i].lower() in _DETERMINERS | _POSSESSIVES:
        i += 1
    if (
        not (0 <= i < n)
        or not _is_word(tokens[i])
        or (_breaks(tokens, i, 0) and not _verb_like(tokens[i]))
    ):
        return None
    return i


def _item_end(tokens: list[str], i: int, step: int) -> int:
    """Where the item that starts at ``i`` ends, read in direction ``step``."""
    n = len(tokens)
    j = i
    while 0 <= j + step < n and (
        not _breaks(tokens, j + step, 0) or _inside_name(tokens, j + step)
    ):
        j += step
    if step < 0 and j - 1 >= 0 and tokens[j - 1].lower() in _DETERMINERS | _POSSESSIVES:
        j -= 1
    # "tents, sleeping bags and camp stoves": a word like a verb that opens a list item
    # (right after its comma or colon) names the item with the noun after it.
    if step < 0 and j >= 2 and tokens[j - 2] in (",", ":") and _verb_like(tokens[j - 1]):
        j -= 1
    return j


def _title_and(tokens: list[str], left: tuple[int, int]) -> bool:
    """ "the film Kiss and Tell": an "and" after a title noun and a capitalised word."""
    return any(
        tokens[k].lower() in _TITLE_NOUNS and _capital(tokens[k + 1])
        for k in range(max(0, left[0] - 1), left[1])
    )


def _coordinations(tokens: list[str]) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Every coordination: (its span, its items' spans), left to right."""
    found = []
    for c, token in enumerate(tokens):
        if token.lower() not in _CONJUNCTIONS or c == 0:
            continue
        end = c - 1 if tokens[c - 1] == "," else c
        left = _extent(tokens, end - 1, -1)
        right = _extent(tokens, c + 1, +1)
        if left[1] < left[0] or right[1] < right[0] or _title_and(tokens, left):
            continue
        items = [left, right]
        capital = any(_capital(t) for t in tokens[right[0] : right[1] + 1])
        while token.lower() == "and" and items[0][0] >= 2 and tokens[items[0][0] - 1] == ",":
            more = _extent(tokens, items[0][0] - 2, -1)
            named = any(_capital(t) for t in tokens[more[0] : more[1] + 1])
            if more[1] < more[0] or named != capital:
                break
            items.insert(0, more)
        found.append(((items[0][0], items[-1][1]), items))
    return found


def _item_words(tokens: list[str], span: tuple[int, int], owner: list[str]) -> list[str]:
    words = [t for t in tokens[span[0] : span[1] + 1] if t not in (",", "'", "’")]
    if words and words[0].lower() in _POSSESSIVES:
        return owner + words[1:]
    if words and words[0].lower() in _DETERMINERS and len(words) > 1:
        return words[1:]
    return words


@cache
def parse(question: str) -> Parsed:
    """The question's tokens and coordinations; see the module docstring."""
    tokens = _TOKEN.findall(question)
    if _CJK.search(question):
        return Parsed(tuple(tokens))
    found = _coordinations(tokens)
    if not found:
        return Parsed(tuple(tokens))

    def weight(entry: tuple[tuple[int, int], list[tuple[int, int]]]) -> tuple[int, int, int]:
        span, items = entry
        named = any(_capital(t) for a, b in items for t in tokens[a : b + 1])
        return (len(items), int(named), span[0])

    main = max(found, key=weight)
    resolved: list[tuple[str, ...]] = []
    for span in main[1]:
        owner = _head(tokens, resolved[0]) if resolved else []
        resolved.append(tuple(_item_words(tokens, span, owner)))
    others = tuple(
        (span, tuple(tuple(_item_words(tokens, s, [])) for s in items))
        for span, items in found
        if span != main[0]
    )
    return Parsed(
        tuple(tokens),
        tuple(" ".join(words) for words in resolved),
        tuple(resolved),
        main[0],
        others,
    )


def _head(tokens: list[str], words: tuple[str, ...]) -> list[str]:
    """The name an item is known by (its capitalised words), for a possessive item after it."""
    named = [w for w in words if _capital(w)]
    return named or list(words[-1:])


def keywords(tokens: list[str] | tuple[str, ...], start: int = 0) -> list[str]:
    """``tokens`` as a keyword query: content words and names, function words dropped.

    ``start``: the position of ``tokens[0]`` in the question (a capital at 0 is no name).
    """
    out = []
    listed = list(tokens)
    for i, token in enumerate(listed):
        if not _is_word(token):
            continue
        small = token.lower() in STOP or token.lower() in _CONJUNCTIONS
        if small and not (_capital(token) and i + start > 0) and not _inside_name(listed, i):
            continue
        out.append(token)
    return out
