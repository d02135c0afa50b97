"""Stage 3: merging, scoring, several sites first, quality tiers on parsed domains."""

from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.models import Quality, SearchHit
from sleuth.stages.rank import classify, load_rules, rank


def hit(url: str, query: str = "q", rank_: int = 1, title: str = "t") -> SearchHit:
    return SearchHit(title=title, url=url, snippet="s", rank=rank_, provider="test", query=query)


@pytest.mark.parametrize(
    ("url", "tier", "score"),
    [
        ("https://www.rfc-editor.org/rfc/rfc6749", Quality.PRIMARY, 5),
        ("https://developer.mozilla.org/en-US/docs/Web/HTTP", Quality.PRIMARY, 5),
        ("https://www.nasa.gov/", Quality.PRIMARY, 5),
        ("https://www.gov.uk/guidance", Quality.PRIMARY, 5),
        ("https://cs.stanford.edu/x", Quality.PRIMARY, 4),
        ("https://github.com/encode/httpx", Quality.PRIMARY, 4),
        ("https://docs.djangoproject.com/en/5.0/", Quality.PRIMARY, 4),
        ("https://stackoverflow.com/questions/1", Quality.SECONDARY, 3),
        ("https://en.wikipedia.org/wiki/OAuth", Quality.SECONDARY, 3),
        ("https://medium.com/@x/y", Quality.SECONDARY, 2),
        ("https://dev.to/x", Quality.SECONDARY, 2),
        ("https://www.reddit.com/r/python", Quality.SECONDARY, 2),
        ("https://example.com/blog", Quality.UNVERIFIED, 2),
    ],
)
def test_quality_tiers(url: str, tier: Quality, score: int) -> None:
    assert classify(url) == (tier, score)


@pytest.mark.parametrize(
    "url",
    [
        "https://foo.government.com/page",  # .gov only as a substring
        "https://github.com.evil.io/encode/httpx",  # github.com only as a prefix
        "https://evil.io/github.com/docs.",  # names only in the path
        "https://notwikipedia.org/wiki",
    ],
)
def test_lookalike_domains_are_not_trusted(url: str) -> None:
    assert classify(url)[0] is Quality.UNVERIFIED


def test_duplicates_merge_across_queries_and_frequency_wins() -> None:
    hits = [
        hit("https://a.example.org/page?utm_source=x", "q1", 3),
        hit("https://A.example.org/page/#top", "q2", 4),
        hit("https://b.example.net/other", "q1", 1),
    ]
    ranked = rank(hits)
    assert [c.domain for c in ranked] == ["example.org", "example.net"]
    assert ranked[0].frequency == 2 and ranked[0].queries == ["q1", "q2"]


def test_a_sites_further_pages_rank_after_other_sites_but_stay() -> None:
    """An encyclopedia's pages on each of a question's names are all candidates: the
    relevance gate, not the ranking, decides whether they are the ones on topic."""
    hits = [
        hit("https://a.example.org/one", rank_=1),
        hit("https://www.example.org/two", rank_=2),
        hit("https://b.example.net/three", rank_=3),
    ]
    ranked = rank(hits)
    assert [c.url for c in ranked] == [
        "https://a.example.org/one",
        "https://b.example.net/three",
        "https://www.example.org/two",
    ]


def test_ip_hosts_are_each_their_own_domain() -> None:
    ranked = rank([hit("http://127.0.1.1:8000/a"), hit("http://127.0.1.2:8000/b")])
    assert len(ranked) == 2


def test_quality_breaks_ties_of_position() -> None:
    ranked = rank(
        [
            hit("https://blog.example.com/oauth", rank_=1),
            hit("https://datatracker.ietf.org/doc/rfc6749", rank_=1),
        ]
    )
    assert ranked[0].quality is Quality.PRIMARY


def test_users_extend_the_rule_table(tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text('[[rule]]\ntier = "PRIMARY"\nscore = 5\ndomains = ["example.com"]\n')
    rules = load_rules(rules_file)
    assert classify("https://example.com/x", rules) == (Quality.PRIMARY, 5)
    assert classify("https://github.com/x", rules) == (Quality.PRIMARY, 4)


def test_broken_rule_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rule]]\ntier = "GOLD"\nscore = 9\n')
    with pytest.raises(ConfigError, match="quality rules"):
        load_rules(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_rules(tmp_path / "missing.toml")
