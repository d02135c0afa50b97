"""Stage 1: grip's rule-based query decomposition."""

import pytest

from sleuth.stages.plan import make_plan, rule_queries, whole_question


def test_depth_one_is_the_question_as_asked() -> None:
    assert rule_queries("OAuth 2.0 vs JWT", 1) == ["OAuth 2.0 vs JWT"]


def test_depth_two_asks_about_each_side_of_a_comparison() -> None:
    assert rule_queries("OAuth 2.0 vs JWT", 2) == [
        "OAuth 2.0 vs JWT",
        "what is OAuth 2.0",
        "what is JWT",
    ]
    assert rule_queries("Rust and Go", 2) == ["Rust and Go", "what is Rust", "what is Go"]


def test_no_generic_words_are_glued_to_the_question_at_depth_three() -> None:
    for question in [
        "OAuth 2.0 vs JWT",
        "kubernetes operators",
        "How does OAuth 2.0 authorization code flow work?",
    ]:
        for query in rule_queries(question, 3)[1:]:
            assert not any(
                word in query.lower().split()
                for word in ("explained", "advantages", "disadvantages", "comparison", "why")
            ), query
            assert not query.lower().startswith(("how does", "what is how")), query


def test_one_query_per_moon_and_none_is_a_fragment() -> None:
    question = (
        "What have NASA and astronomers recently found out about the Moon, "
        "Jupiter's moon Europa and Saturn's moon Titan?"
    )
    queries = rule_queries(question, 2)
    assert queries[0] == question
    for moon in ("Moon", "Europa", "Titan"):
        [query] = [q for q in queries[1:] if q.split()[-1] == moon]
        assert "NASA" in query, query  # each names the question's subject


def test_a_list_item_opened_by_an_ing_word_is_one_part() -> None:
    """ "tents, sleeping bags and camp stoves" was read as two parts, "bags" and "camp
    stoves": the camping question's tents page then covered none of them and was left out
    as off-topic, and no query asked about tents."""
    queries = rule_queries(
        "What camping gear do you need: tents, sleeping bags and camp stoves?", 2
    )
    for part in ("tents", "sleeping bags", "camp stoves"):
        [query] = [q for q in queries[1:] if q.endswith(part)]
        assert query.startswith("camping gear"), query


def test_a_possessive_part_is_read_with_its_owner() -> None:
    queries = rule_queries(
        "Why is the New York attorney general investigating WeWork and its founder Adam Neumann?", 2
    )
    assert not any(q.lower().startswith("its ") for q in queries)
    assert any("WeWork founder Adam Neumann" in q for q in queries), queries


def test_deeper_plans_contain_shallower_ones() -> None:
    q = "kubernetes operators"
    assert set(rule_queries(q, 1)) <= set(rule_queries(q, 2)) <= set(rule_queries(q, 3))


@pytest.mark.parametrize("depth", [0, 4, 7])
def test_bad_depth_is_refused(depth: int) -> None:
    with pytest.raises(ValueError):
        rule_queries("x", depth)


def test_plan_record_names_its_planner() -> None:
    plan = make_plan("sqlite wal mode", 1)
    assert plan.planner == "rules" and plan.queries[0] == "sqlite wal mode"


def test_whole_question_keeps_the_queries_holding_every_key_word_not_the_parts() -> None:
    queries = rule_queries("Postgres vs MySQL", 3)
    assert "what is postgres" in [q.lower() for q in queries]  # a side of the split is planned
    assert whole_question(queries) == ["Postgres vs MySQL", "Postgres MySQL"]
    assert whole_question(["Is  X good?", "is x GOOD explained", "X"]) == [
        "Is  X good?",
        "is x GOOD explained",
    ]
    assert whole_question([]) == []
