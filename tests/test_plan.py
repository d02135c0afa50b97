"""Stage 1: grip's rule-based query decomposition."""

import pytest

from sleuth.stages.plan import make_plan, rule_queries, whole_question


def test_depth_one_is_question_and_what_is() -> None:
    assert rule_queries("OAuth 2.0 vs JWT", 1) == ["OAuth 2.0 vs JWT", "what is OAuth 2.0 vs JWT"]


def test_depth_two_splits_comparisons_as_grip_does() -> None:
    queries = rule_queries("OAuth 2.0 vs JWT", 2)
    assert queries[0] == "OAuth 2.0 vs JWT"
    for expected in [
        "OAuth 2.0",
        "JWT",
        "OAuth 2.0 vs JWT comparison",
        "OAuth 2.0 vs JWT explained",
    ]:
        assert expected in queries


def test_depth_three_adds_how_why_and_tradeoffs() -> None:
    queries = rule_queries("OAuth 2.0 vs JWT", 3)
    for expected in [
        "how does OAuth 2.0 vs JWT work",
        "why OAuth 2.0 vs JWT",
        "OAuth 2.0 vs JWT advantages disadvantages",
    ]:
        assert expected in queries
    assert len(queries) == len({q.lower() for q in queries}), "queries must be de-duplicated"


def test_and_splits_without_calling_it_a_comparison() -> None:
    queries = rule_queries("Rust and Go", 2)
    assert "Rust" in queries and "Go" in queries
    assert not any(q.endswith("comparison") for q in queries)


def test_versus_spelled_out_is_a_comparison() -> None:
    assert "tabs versus spaces comparison" in rule_queries("tabs versus spaces", 2)


def test_questions_do_not_get_nonsense_prefixes() -> None:
    queries = rule_queries("How does OAuth 2.0 authorization code flow work?", 3)
    assert queries[0] == "How does OAuth 2.0 authorization code flow work?"
    assert not any(
        q.lower().startswith(("what is how", "how does how", "why how")) for q in queries
    )
    assert "How does OAuth 2.0 authorization code flow work explained" in queries


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


def test_whole_question_keeps_the_templated_variants_not_the_sides_of_a_split() -> None:
    queries = rule_queries("Postgres vs MySQL", 3)
    assert "postgres" in [q.lower() for q in queries]  # a side of the split is planned
    assert whole_question(queries) == [
        "Postgres vs MySQL", "what is Postgres vs MySQL", "Postgres vs MySQL comparison",
        "Postgres vs MySQL explained", "how does Postgres vs MySQL work", "why Postgres vs MySQL",
        "Postgres vs MySQL advantages disadvantages"]
    assert whole_question(["Is  X good?", "is x GOOD explained", "X"]) == [
        "Is  X good?", "is x GOOD explained"]
    assert whole_question([]) == []
