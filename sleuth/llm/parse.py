"""Tolerant parsers for model replies.

Models wrap answers in reasoning (``<think>``), code fences and prose. These parsers
find the answer in all the shapes seen in practice, and never raise on any input:

* ``parse_list`` / ``parse_indices`` / ``parse_verdict`` return an empty result
  (``[]`` / ``None``) when the reply holds nothing usable;
* ``expect_list`` / ``expect_indices`` / ``expect_verdict`` raise
  :class:`~sleuth.errors.ParseError` instead, with a one-line reason and the
  reply's start, so the pipeline can fall back *and record why* (MetaGPT turned an
  unparsed reply into an empty list and then an empty report).

An explicit empty answer (``[]``, ``{"queries": []}``) is "nothing usable" too;
:func:`is_empty_answer` tells it apart from garbage where that matters (a refine
step answering ``[]`` means "no more searches needed", not "the model failed").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from sleuth.errors import ParseError

__all__ = [
    "expect_indices",
    "expect_list",
    "expect_verdict",
    "is_empty_answer",
    "is_not_relevant",
    "json_values",
    "parse_indices",
    "parse_list",
    "parse_verdict",
    "strip_think",
]

#: Replies longer than this are cut before parsing: parsing stays linear and fast.
MAX_PARSE_CHARS = 200_000
#: How many "[" / "{" positions are tried as the start of a JSON value.
_MAX_JSON_STARTS = 50

_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSES = {
    tag: re.compile(rf"</{tag}>", re.IGNORECASE) for tag in ("think", "thinking", "reasoning")
}
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_ITEM_LINE = re.compile(
    r"^\s*(?:(?:\(?\d{1,3}[.)]|[-*•+–])\s+|#{1,6}\s+\d{1,3}[.)]\s+)(?P<item>\S.*)$"
)
_QUOTED = re.compile(r'"([^"\n]*)"|“([^”\n]*)”|\'([^\'\n]*)\'')
_QUOTES_ONLY_LINE = re.compile(r'^\s*(?:(?:"[^"\n]*"|“[^”\n]*”)\s*[,;]?\s*)+$')
_WRAPPERS = "\"'“”‘’`"
_EMPHASIS = re.compile(r"^(\*\*|__)(.+)\1$")
_LIST_KEYS = (
    "queries",
    "items",
    "results",
    "list",
    "urls",
    "selected",
    "indices",
    "answer",
    "data",
)


def _cap(text: object) -> str:
    return text[:MAX_PARSE_CHARS] if isinstance(text, str) else ""


def strip_think(text: str) -> str:
    """The reply without reasoning blocks.

    Removes every ``<think>…</think>`` (also ``<thinking>``, ``<reasoning>``), a
    reply that *starts* with an opening tag that is never closed (the model ran out
    of tokens while reasoning: nothing is left), and everything before a closing tag
    whose opening tag the server's chat template swallowed (DeepSeek-R1 style).
    """
    text = _cap(text)
    kept: list[str] = []
    pos = 0
    # A scan rather than one regex: ".*?" with many unclosed tags is quadratic.
    while (opened := _THINK_OPEN.search(text, pos)) is not None:
        closed = _THINK_CLOSES[opened.group(1).lower()].search(text, opened.end())
        if closed is None:
            break
        kept.append(text[pos : opened.start()])
        pos = closed.end()
    kept.append(text[pos:])
    text = "".join(kept).strip()
    leading = _THINK_OPEN.match(text)
    if leading:
        return ""
    stray_close = _THINK_CLOSE.search(text)
    if stray_close:
        text = text[stray_close.end() :]
    return text.strip()


def _excerpt(text: str, limit: int = 80) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _clean_item(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        strings = [v for v in value.values() if isinstance(v, str)]
        return _clean_item(strings[0]) if len(strings) >= 1 else ""
    if not isinstance(value, str):
        return ""
    item = value.strip().rstrip(",;").strip()
    emphasis = _EMPHASIS.match(item)
    if emphasis:
        item = emphasis.group(2).strip()
    while len(item) >= 2 and item[0] in _WRAPPERS and item[-1] in _WRAPPERS:
        item = item[1:-1].strip()
    return item


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _json_values(text: str) -> Iterator[Any]:
    """JSON arrays and objects found in ``text``: fenced blocks first, then inline."""
    for block in _FENCE.findall(text):
        try:
            yield json.loads(block)
        except (ValueError, RecursionError):
            yield from _inline_json(block)
    yield from _inline_json(text)


def json_values(text: str) -> Iterator[Any]:
    """Every JSON array or object in a reply (fenced blocks first, then inline), for
    replies shaped as objects (deep mode's learnings and outline). Never raises."""
    return _json_values(_cap(text))


def _inline_json(text: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    tried = 0
    for match in re.finditer(r"[\[{]", text):
        tried += 1
        if tried > _MAX_JSON_STARTS:
            return
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        yield value


def _list_in(value: Any) -> list[Any] | None:
    """The list a JSON value carries: itself, or an object's (preferred-key) list value."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in _LIST_KEYS:
            found = value.get(key)
            if isinstance(found, list):
                return found
        for found in value.values():
            if isinstance(found, list):
                return found
    return None


def _from_json(text: str) -> list[str]:
    for value in _json_values(text):
        found = _list_in(value)
        if found is not None:
            items = _unique([_clean_item(v) for v in found])
            if items:
                return items
    return []


def _from_brackets(text: str) -> list[str]:
    # Almost-JSON: ['a', 'b'] or ["a", "b",] — quoted strings inside one [...] span.
    for span in re.findall(r"\[([^\[\]]{1,20000})\]", text):
        items = _unique(
            [
                _clean_item(next(g for g in groups if g))
                for groups in _QUOTED.findall(span)
                if any(groups)
            ]
        )
        if items:
            return items
    return []


def _from_lines(text: str) -> list[str]:
    items = []
    for line in text.splitlines():
        match = _ITEM_LINE.match(line)
        if match:
            items.append(_clean_item(match.group("item")))
    return _unique(items)


def _from_quotes(text: str) -> list[str]:
    # Lines made only of quoted strings: "a", "b"  or one "a" per line.
    items: list[str] = []
    for line in text.splitlines():
        if _QUOTES_ONLY_LINE.match(line):
            items.extend(_clean_item(a or b) for a, b, _ in _QUOTED.findall(line))
    return _unique(items)


def parse_list(text: str) -> list[str]:
    """The list of strings in a reply, or ``[]`` when it holds none. Never raises.

    Accepted, in this order: a JSON array (also inside a code fence and among prose),
    a JSON object with a list value (``{"queries": [...]}``), an almost-JSON array of
    quoted strings (single quotes, trailing comma), numbered (``1. a``, ``1) a``) or
    bulleted (``- a``, ``* a``, ``• a``) lines, and lines made only of quoted strings.
    Items are stripped of quotes, ``**emphasis**`` and trailing commas; duplicates and
    empty items are dropped. Plain lines without a marker are *not* items: prose
    would otherwise become search queries.
    """
    text = strip_think(_cap(text))
    for strategy in (_from_json, _from_brackets, _from_lines, _from_quotes):
        items = strategy(text)
        if items:
            return items
    return []


def expect_list(text: str, *, what: str = "items") -> list[str]:
    """Like :func:`parse_list`, but raises ParseError naming ``what`` when empty."""
    items = parse_list(text)
    if not items:
        raise ParseError(
            f"the model's reply had no list of {what}",
            excerpt=_excerpt(strip_think(_cap(text)) or _cap(text)),
        )
    return items


def _as_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*\[?#?(\d{1,6})\]?\s*", value)
        return int(match.group(1)) if match else None
    if isinstance(value, dict):
        for key in ("index", "id", "n", "number", "result"):
            if key in value:
                return _as_index(value[key])
    return None


# Separators are required between numbers, so the pattern cannot backtrack badly.
_NUMBERS_LINE = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:(?:results?|sources?|choices?|selected|answer)\s*:?\s*)?"
    r"#?\d+(?:(?:\s*[,;&]\s*|\s+and\s+|\s+)#?\d+)*\s*\.?\s*$",
    re.IGNORECASE,
)
_CITED = re.compile(r"\[(\d{1,6})\]")


def _raw_indices(text: str) -> list[int]:
    single: list[int] = []
    for value in _json_values(text):
        found = _list_in(value)
        if found is not None:
            numbers = [n for n in map(_as_index, found) if n is not None]
            if len(numbers) > 1:
                return numbers
            # "[2]" may be one citation among several in prose: look further first.
            single = single or numbers
    numbers = []
    for line in text.splitlines():
        if _NUMBERS_LINE.match(line):
            numbers.extend(int(n) for n in re.findall(r"\d{1,6}", line))
    if numbers:
        return numbers
    return [int(n) for n in _CITED.findall(text)] or single


_NONE_ANSWER = re.compile(r"(?:none|nothing|no results?|no queries)\.?", re.IGNORECASE)


def is_empty_answer(text: str) -> bool:
    """True when the reply deliberately chose nothing: ``[]``, ``{"queries": []}``, "None".

    Never raises. Garbage is not an empty answer.
    """
    answer = strip_think(_cap(text)).strip().strip("`").strip()
    answer = answer.removeprefix("json").strip()
    if _NONE_ANSWER.fullmatch(answer):
        return True
    for value in _json_values(answer):
        found = _list_in(value)
        if found is not None:
            return not found
    return False


def parse_indices(text: str, n: int) -> list[int]:
    """The 1-based result numbers a "choose results" reply picked. Never raises.

    Reads a JSON array (``[1, 3]``, ``["1", "3"]``, also in an object or a fence),
    else lines made only of numbers (``1, 3 and 4``, ``Results: 2 5``), else ``[n]``
    references in prose. Numbers are returned as written (1-based, like the prompt's
    numbering), in the reply's order, de-duplicated; those outside ``1..n`` are
    ignored. ``[]`` when nothing valid was picked.
    """
    picked: list[int] = []
    for number in _raw_indices(strip_think(_cap(text))):
        if 1 <= number <= n and number not in picked:
            picked.append(number)
    return picked


def expect_indices(text: str, n: int, *, what: str = "results") -> list[int]:
    """Like :func:`parse_indices`, but raises ParseError when nothing valid was picked."""
    picked = parse_indices(text, n)
    if not picked:
        raise ParseError(
            f"the model's reply picked no valid {what} (1 to {n})",
            excerpt=_excerpt(strip_think(_cap(text)) or _cap(text)),
        )
    return picked


_VERDICT = re.compile(r"\b(UNSUPPORTED|NOT[\s_-]+SUPPORTED|SUPPORTED)\b", re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """The verify prompt's answer: True for SUPPORTED, False for UNSUPPORTED, else None.

    The first verdict word in the reply counts (``NOT SUPPORTED`` means unsupported).
    """
    match = _VERDICT.search(strip_think(_cap(text)))
    if match is None:
        return None
    return match.group(1).upper() == "SUPPORTED"


def expect_verdict(text: str) -> bool:
    """Like :func:`parse_verdict`, but raises ParseError when there is no verdict."""
    verdict = parse_verdict(text)
    if verdict is None:
        raise ParseError(
            "the model's reply had no SUPPORTED/UNSUPPORTED verdict",
            excerpt=_excerpt(strip_think(_cap(text)) or _cap(text)),
        )
    return verdict


_NOT_RELEVANT = re.compile(r"not\s+relevant", re.IGNORECASE)


def is_not_relevant(text: str) -> bool:
    """True when a summary reply is the summarize prompt's "Not relevant." answer.

    Tolerates case, quotes, punctuation, reasoning blocks and a short lead-in
    ("Answer: Not relevant"); a real summary that merely mentions the phrase is
    longer than that and does not count.
    """
    answer = strip_think(_cap(text)).strip().strip(_WRAPPERS + ".!*_ ")
    if not answer:
        return False
    return bool(_NOT_RELEVANT.search(answer)) and len(answer) <= len("Not relevant") + 12
