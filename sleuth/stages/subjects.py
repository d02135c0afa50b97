"""Whom a sentence is about when it does not say in full.

A page's sentences name its subject by a pronoun ("He was a two-time Pro Bowl selection"
on Deltha O'Neal's page) or by part of a name ("Bach is widely known …" on the page
"Richard Bach"). Quoted alone, as the Answer quotes them (:mod:`sleuth.stages.answer`),
they need their subject said beside them: the page's title as another page would name it
(:func:`names_a_subject`), or the name the page's first sentence gives in full ("Richard
David Bach (born June 23, 1936) is …", :func:`full_name`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sleuth.stages.judge import title_core
from sleuth.stages.sentences import sentences
from sleuth.terms import content_terms

__all__ = [
    "GOES_ON",
    "PRONOUN",
    "SUBJECT",
    "full_name",
    "goes_on",
    "leaning",
    "leans_back",
    "names_a_subject",
    "subject_of",
]

#: A sentence opening with a pronoun that means its page's subject ("He", "Its", …).
SUBJECT = re.compile(r"^(He|She|It|They|His|Her|Its|Their)\b")
#: A sentence opening with any pronoun, a demonstrative too ("This", "These").
PRONOUN = re.compile(r"^(?:He|She|It|They|His|Her|Its|Their|This|These|Those)\b")
#: A sentence that goes on from the one before it: a connective, then a pronoun ("But it
#: may morph into something bigger", "And they …"): its page's title does not explain it.
GOES_ON = re.compile(
    r"^(?:But|And|Yet|So|Still|However|Instead|Also|Then|Meanwhile),?\s+"
    r"(?:he|she|it|they|his|her|its|their|this|these|those)\b"
)


#: A sentence joined to the one before it by its first word ("And Beijing's strategy …",
#: "Nor has …"), or whose subject points back at it ("That's much higher than …").
_JOINED = re.compile(
    r"^(?:And|But|Nor|Or|Yet)\b"
    r"|^(?:That|This|These|Those)(?:['’]s\b|\s+(?:is|was|are|were|has|had|have|means|meant"
    r"|would|will|could|can|may|might)\b)"
)
#: A sentence whose verb the one before it says ("Getting to the Moon has been done.
#: Staying there, however, hasn't."): it ends on a negated auxiliary ("as Chrome does."
#: is a comparison, said in full).
_ELLIPTICAL = re.compile(r"\b\w+n['’]t[.!][\"'”’)]*$")
#: A sentence whose subject is a name ("Rhino is …", "The Beatles were …").
_NAMED = re.compile(
    r"^((?:[A-Z][\w.'’&-]*\s+){0,3}?[A-Z][\w.'’&-]*)\s+(?:is|was|are|were|has|had)\b"
)


def goes_on(text: str) -> bool:
    """Whether ``text`` goes on from the sentence before it: a connective and a pronoun
    ("But it …"), a first word that joins it ("And …", "That's …"), or a negated
    auxiliary that ends it ("… however, haven't.")."""
    return bool(GOES_ON.match(text) or _JOINED.match(text) or _ELLIPTICAL.search(text))


def leans_back(text: str) -> bool:
    """Whether ``text`` opens with a pronoun, or goes on from the sentence before it."""
    return bool(PRONOUN.match(text)) or goes_on(text)


def leaning(texts: Sequence[str], blocks: Sequence[int], title: str) -> list[bool]:
    """For each of a page's sentences (in order, with the paragraph each is in), whether
    it says something only with the sentence before it: it goes on from it ("But it …",
    "And …", "That's …", "… however, haven't."), or it opens with "He", "It", … and
    means someone other than the page's subject: the page's title is a headline, not a
    name, or a sentence before it in its paragraph names another subject ("Rhino is a
    JavaScript engine. It is developed entirely in Java." on the page "Mozilla")."""
    core = names_a_subject(title)
    own = _words(core) if core else set()
    out: list[bool] = []
    other = False  # the paragraph's sentences so far are about someone else
    for n, said in enumerate(texts):
        if n and blocks[n] != blocks[n - 1]:
            other = False
        text = said.lstrip("\"'“‘")  # a quotation's "It will be …" means as much
        pronoun = SUBJECT.match(text) is not None
        out.append(goes_on(text) or (pronoun and (core is None or other)))
        named = _NAMED.match(text)
        if named and not PRONOUN.match(text):
            other = not (_words(named.group(1)) & own)
        elif not pronoun:
            other = False
    return out


#: A title that names something (a person, a place, a work), as a pronoun's referent:
#: a few words, not a headline's sentence.
NAME_WORDS = 6
#: The name a page's first sentence opens with, before "(born …", "," or "is"/"was".
_LEAD_NAME = re.compile(r"^([A-Z][^,()]{1,60}?)(?: \(|, | (?:is|was|are|were) )")


def names_a_subject(title: str) -> str | None:
    """The page's title as another page would name it, when it names something (at most
    :data:`NAME_WORDS` words, no ":", "?", "!" or "." of a headline); else None."""
    core = title_core(title)
    if not core or len(core.split()) > NAME_WORDS or any(m in core for m in ":?!."):
        return None
    return core


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def full_name(title: str, text: str | None) -> str | None:
    """The page's subject as its first sentence names it in full ("Waylon J. Smithers
    Jr., usually referred to as …" on the page "Waylon Smithers"), or None: a name of at
    most :data:`NAME_WORDS` words that holds every word of the title's."""
    core = names_a_subject(title)
    if core is None or not text:
        return None
    first = next(iter(sentences(text)), None)
    found = _LEAD_NAME.match(first.text) if first is not None else None
    if found is None:
        return None
    name = found.group(1).strip()
    if len(name.split()) > NAME_WORDS or any(m in name for m in ":?!"):
        return None
    return name if _words(core) <= _words(name) else None


def subject_of(sentence: str, title: str, text: str | None) -> str | None:
    """Whom ``sentence`` (of the page ``title`` whose text is ``text``) is about when it
    does not say in full: the page's subject, for a sentence opening with a pronoun ("He
    was …") or with part of the subject's name ("Bach is …" on the page "Richard Bach"),
    named as the page's first sentence names it where it does; else None."""
    core = names_a_subject(title)
    if core is None or not sentence.split():
        return None
    first_word = sentence.split()[0].strip("\"'“‘")
    partial = first_word in core.split() and bool(content_terms(first_word))
    pronoun = SUBJECT.match(sentence) is not None
    if not (pronoun or (partial and core not in sentence)):
        return None
    full = full_name(title, text)
    if full is not None and full not in sentence:
        return full
    return core if pronoun else None
