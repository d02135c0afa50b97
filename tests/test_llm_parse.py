"""Reply parsers: the shapes real models answer in, and garbage that must fail loudly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth.errors import LLMError, ParseError
from sleuth.llm.parse import (
    expect_indices,
    expect_list,
    expect_verdict,
    is_empty_answer,
    is_not_relevant,
    parse_indices,
    parse_list,
    parse_verdict,
    strip_think,
)

QUERIES = ["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]


@pytest.mark.parametrize(
    "reply",
    [
        '["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]',
        '```json\n["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]\n```',
        'Here are the queries:\n```\n["oauth authorization code flow", "pkce explained", '
        '"oauth 2.1 changes"]\n```\nThese cover the main aspects.',
        'Sure! ["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"] '
        "should help.",
        '{"queries": ["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]}',
        '{"reasoning": "three angles", "search_terms": ["oauth authorization code flow", '
        '"pkce explained", "oauth 2.1 changes"]}',
        '<think>The user wants OAuth. ["not this"]</think>\n'
        '["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]',
        "Okay, let me think.</think>"
        '["oauth authorization code flow", "pkce explained", "oauth 2.1 changes"]',
        "['oauth authorization code flow', 'pkce explained', 'oauth 2.1 changes']",
        '["oauth authorization code flow", "pkce explained", "oauth 2.1 changes",]',
        "1. oauth authorization code flow\n2. pkce explained\n3. oauth 2.1 changes",
        'Queries:\n1) "oauth authorization code flow"\n2) "pkce explained"\n'
        '3) "oauth 2.1 changes"\nGood luck!',
        "- oauth authorization code flow\n- pkce explained\n- oauth 2.1 changes",
        "* **oauth authorization code flow**\n* `pkce explained`\n* oauth 2.1 changes",
        "• oauth authorization code flow\n• pkce explained\n• oauth 2.1 changes",
        '"oauth authorization code flow"\n"pkce explained"\n"oauth 2.1 changes"',
        '"oauth authorization code flow", "pkce explained", "oauth 2.1 changes"',
        '[{"query": "oauth authorization code flow"}, {"query": "pkce explained"}, '
        '{"query": "oauth 2.1 changes"}]',
        '["oauth authorization code flow", "pkce explained", "pkce explained", "", '
        '"oauth 2.1 changes"]',
    ],
)
def test_parse_list_shapes(reply: str) -> None:
    assert parse_list(reply) == QUERIES
    assert expect_list(reply) == QUERIES


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "I'm sorry, I can't help with that.",
        "The best approach is to search for OAuth flows.\nThen read the RFC.",
        "<think>planning the queries forever",
        "[]",
        '{"queries": []}',
        '["unclosed',
        "{{{{",
    ],
)
def test_parse_list_finds_nothing(reply: str) -> None:
    assert parse_list(reply) == []
    with pytest.raises(ParseError, match="no list of queries") as info:
        expect_list(reply, what="queries")
    assert isinstance(info.value, LLMError)
    assert len(info.value.excerpt) <= 80


def test_parse_error_carries_an_excerpt_of_the_reply() -> None:
    with pytest.raises(ParseError) as info:
        expect_list("I cannot   answer\nthis " + "x" * 200)
    assert info.value.excerpt.startswith("I cannot answer this xxx")
    assert info.value.excerpt.endswith("…")


def test_strip_think_forms() -> None:
    assert strip_think("<think>hmm</think>Answer") == "Answer"
    assert strip_think("<THINK>a</THINK> x <thinking>b</thinking> y") == "x  y"
    assert strip_think("<think>never finished") == ""
    assert strip_think("<think>a</think><think>cut off") == ""
    assert strip_think("reasoning without an opening tag</think>\nAnswer") == "Answer"
    assert strip_think("Plain answer.") == "Plain answer."
    assert strip_think("Answer mentions <think> later") == "Answer mentions <think> later"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("[1, 3, 4]", [1, 3, 4]),
        ("[3, 1, 3, 99, 0, -2]", [3, 1]),
        ('["2", "5"]', [2, 5]),
        ('{"selected": [2, 4]}', [2, 4]),
        ("```json\n[4, 2]\n```", [4, 2]),
        ("<think>maybe [5]?</think>[1, 2]", [1, 2]),
        ("1, 3", [1, 3]),
        ("1, 3 and 5", [1, 3, 5]),
        ("Results: 2 4", [2, 4]),
        ("I would read [2] and [4] first.", [2, 4]),
        ("- 3\n- 1", [3, 1]),
        ("[1.0, 2]", [1, 2]),
        ('[{"index": 2}, {"index": 3}]', [2, 3]),
    ],
)
def test_parse_indices_shapes(reply: str, expected: list[int]) -> None:
    assert parse_indices(reply, 5) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "[]",
        "none of them",
        "[7, 8]",
        "",
        "[true, false]",
        "I chose 2 results because they are good",
    ],
)
def test_parse_indices_nothing_valid(reply: str) -> None:
    assert parse_indices(reply, 5) == []
    with pytest.raises(ParseError, match="1 to 5"):
        expect_indices(reply, 5)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("SUPPORTED", True),
        ("unsupported", False),
        ("Verdict: **SUPPORTED**.", True),
        ("NOT SUPPORTED", False),
        ("<think>is it SUPPORTED?</think>UNSUPPORTED", False),
        ("I am not sure.", None),
        ("", None),
    ],
)
def test_parse_verdict(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict
    if verdict is None:
        with pytest.raises(ParseError):
            expect_verdict(reply)
    else:
        assert expect_verdict(reply) is verdict


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Not relevant.", True),
        ("not relevant", True),
        ('"Not relevant."', True),
        ("<think>nothing here</think>\nNot relevant.", True),
        ("**Not relevant.**", True),
        ("Answer: Not relevant", True),
        ("", False),
        (
            "The page says the protocol is not relevant for public clients, because PKCE "
            "replaces the client secret.",
            False,
        ),
        ("OAuth 2.0 uses an authorization code.", False),
    ],
)
def test_is_not_relevant(reply: str, expected: bool) -> None:
    assert is_not_relevant(reply) is expected


# -- fuzzing: these parsers must never raise ------------------------------------------

_ALPHABET = st.sampled_from([*"[]{}\",:'`-*•0123456789.) \n\tabc<>/think", "```"])
_REPLIES = st.one_of(st.text(), st.lists(_ALPHABET, max_size=200).map("".join))


@given(_REPLIES)
def test_parsers_never_raise(reply: str) -> None:
    items = parse_list(reply)
    assert all(isinstance(i, str) and i for i in items)
    assert len(items) == len(set(items))
    assert isinstance(strip_think(reply), str)
    picked = parse_indices(reply, 5)
    assert all(1 <= i <= 5 for i in picked) and len(picked) == len(set(picked))
    assert parse_verdict(reply) in (True, False, None)
    assert isinstance(is_not_relevant(reply), bool)
    assert isinstance(is_empty_answer(reply), bool)


_WORDS = (
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzäöü0123456789 .-?", min_size=1, max_size=40)
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)


@given(st.lists(_WORDS, min_size=1, max_size=8, unique=True), st.sampled_from(["", "Sure:\n"]))
def test_json_arrays_round_trip(items: list[str], lead_in: str) -> None:
    import json

    reply = lead_in + json.dumps(items, ensure_ascii=False) + "\nHope this helps."
    assert parse_list(reply) == items


def test_huge_and_nested_replies_are_fast_and_safe() -> None:
    assert parse_list("[" * 100_000) == []
    assert parse_indices("<think>" * 50_000, 3) == []
    assert parse_list("1" * 300_000) == []
    assert parse_list('["ok"]' + "x" * 300_000) == ["ok"]


@pytest.mark.parametrize(
    ("reply", "empty"),
    [
        ("[]", True),
        ("```json\n[]\n```", True),
        ('{"queries": []}', True),
        ("None.", True),
        ("<think>nothing useful</think>\n[]", True),
        ('["more"]', False),
        ("I don't know", False),
        ("", False),
        ("[1, 2]", False),
    ],
)
def test_is_empty_answer(reply: str, empty: bool) -> None:
    assert is_empty_answer(reply) is empty
