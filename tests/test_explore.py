"""Deep mode's pure parts: names and sub-questions without a model, bridge names, what
repeats, and how a level's pages are shared between its branches."""

from __future__ import annotations

from records import candidate

from sleuth.pipeline.deep import assign, spread
from sleuth.stages.explore import bridge_entities, named_things, repeats, rule_subquestions


def test_names_end_at_a_sentence_but_not_at_an_abbreviation() -> None:
    text = (
        "The film stars James Woods and Jane Alexander. It was directed by M. Ward in "
        "St. Moritz. The Recovery of Aristotle came later.\nLater Works\nIt ended."
    )
    assert named_things(text) == [
        "James Woods",
        "Jane Alexander",
        "M. Ward",
        "St. Moritz",
        "The Recovery of Aristotle",
        "Later Works",
    ]


def test_datelines_page_chrome_and_quoted_speech_are_not_names() -> None:
    # Lines of real news pages that deep mode once followed up as if they were names.
    text = (
        "Updated November 20. SEE MORE stories. He spoke to Twitter on Monday. Ward says "
        "the plan works. “This is a statewide problem, and it’s going to require statewide "
        "solutions,” the governor said. The campaign “Meth. We’re on it.” ran in South "
        "Dakota, and the film “The Glass Orchard” opened in Brackwater."
    )
    found = named_things(text)
    for junk in ("November", "SEE", "Monday", "says", "statewide"):
        assert not [n for n in found if junk in n], (junk, found)
    assert {"South Dakota", "The Glass Orchard", "Brackwater"} <= set(found), found


def test_rule_sub_questions_are_the_question_then_what_it_names() -> None:
    subs = rule_subquestions("Which plant is larger, the Pterocarya or the Cotula?", 4)
    assert subs[0] == "Which plant is larger, the Pterocarya or the Cotula?"
    assert set(subs[1:]) == {"Pterocarya", "Cotula"}
    # A nationality describes; it is not a thing to research.
    subs = rule_subquestions(
        "The Curse of the Jade Scorpion is a 2001 film featuring an "
        "American actress who starred in what?",
        4,
    )
    assert "American" not in subs and "The Curse of the Jade Scorpion" in subs
    assert len(rule_subquestions("Compare A, B, C, D and E in Paris, London, Rome", 2)) == 2


def test_repeats() -> None:
    known = ["In which town was the composer of The Glass Orchard born?"]
    assert repeats("the glass orchard composer", known)
    assert repeats("???", known)
    assert not repeats("Ilsa Varenne", known)


def test_bridge_names_are_what_the_pages_give_and_the_question_does_not() -> None:
    question = "In which town was the composer of The Glass Orchard born?"
    pages = [
        (
            "The Glass Orchard",
            "The Glass Orchard is an opera first staged in 1921. Its "
            "music was written by Ilsa Varenne, and its libretto by Tomas Quell. It was "
            "revived as The Glass Orchard: Second Edition.",
        ),
        ("Tomas Quell", "Tomas Quell was a poet."),
    ]
    names = bridge_entities(question, pages, 3)
    assert names[0] == "Ilsa Varenne"
    assert "Tomas Quell" not in names  # a page already read
    assert "The Glass Orchard" not in names  # named in the question
    assert bridge_entities(question, pages, 3, known=["Ilsa Varenne"])[0] != "Ilsa Varenne"


def test_each_page_goes_to_one_branch_and_none_that_was_read() -> None:
    a, b, c, d = (candidate(f"http://x/{n}") for n in "abcd")
    lists = assign([[a, b, c], [b, a, d], [c]], [1, 1, 1], taken={"http://x/d"})
    flat = [x.canonical_url for got in lists for x in got]
    assert len(flat) == len(set(flat)) and "http://x/d" not in flat
    assert lists[0][0] is a and lists[1][0] is b  # each its own best page first
    assert set(flat) == {"http://x/a", "http://x/b", "http://x/c"}


def test_a_levels_pages_are_dealt_to_branches_that_found_something() -> None:
    assert spread(6, [5, 0, 5], cap=6) == [3, 0, 3]
    assert spread(10, [8, 1, 8], cap=2) == [2, 1, 2]
    assert spread(3, [8, 8, 8, 8], cap=2) == [1, 1, 1, 0]
    assert sum(spread(7, [2, 9], cap=9)) == 7


def test_a_page_two_branches_rank_alike_goes_to_the_narrower_question() -> None:
    own, other = candidate("http://x/nolan"), candidate("http://x/other")
    whole, name = [own, other], [own]  # the whole question's list, the name's
    assert assign([whole, name], [1, 1], set())[1] == []
    lists = assign([whole, name], [1, 1], set(), first=[1, 0])
    assert lists[1] == [own] and lists[0] == [other]


def test_sub_questions_are_whole_names_not_their_pieces_or_descriptions() -> None:
    # An office's name runs on across its "and"; a generation suffix, a league used to
    # describe ("an NFL team") and a nationality are no things to research on their own.
    subs = rule_subquestions(
        "Who was premier when Ada Brill was Minister for Mines and Energy, premier?", 4
    )
    assert subs[1:] == ["Ada Brill", "Minister for Mines and Energy"]
    subs = rule_subquestions("How many caps did Jon Arvel, III win for an NFL team?", 4)
    assert subs[1:] == ["Jon Arvel"]
    subs = rule_subquestions("Is Hollow Reed a 2011 Indian Tamil-language drama film?", 4)
    assert subs[1:] == ["Hollow Reed"]
    # The parts of a coordination as the question names them, no more.
    subs = rule_subquestions("Were Glass Orchard and Tin Harbour 3 films released by one label?", 4)
    assert subs[1:] == ["Glass Orchard", "Tin Harbour 3"]
    subs = rule_subquestions("Besides Little Rock, where does Ida Marsh work?", 4)
    assert subs[1:] == ["Little Rock", "Ida Marsh"]


def test_plain_word_parts_are_short_things_not_fragments_of_a_long_question() -> None:
    subs = rule_subquestions("How are tariffs affecting markets and trade talks?", 4)
    assert subs[1:] == [
        "How are tariffs affecting markets?",
        "How are tariffs affecting trade talks?",
    ]
    subs = rule_subquestions("Who finished last in the 70 m and 90 m events?", 4)
    assert subs == ["Who finished last in the 70 m and 90 m events?"]
    subs = rule_subquestions(
        "Which singer is known for her husky voice and who's third album is called Dawn?", 4
    )
    assert all("husky" not in s for s in subs[1:]), subs
