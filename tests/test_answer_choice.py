"""How the Answer's sentences are chosen and ordered (``sleuth.stages.answer``): the
sentences of a few made-up sources, the question, and what a reader sees first."""

from __future__ import annotations

from records import source

from sleuth.stages.answer import best_answer, question_kind
from sleuth.stages.answer_scores import Z_BOUND, zscores
from sleuth.stages.asks import kind_scores
from sleuth.stages.subjects import leaning

# Five pages about the Pro Bowl and one about the player, whose answer says "He".
PRO_BOWL = {
    "2006 Pro Bowl": "The 2006 Pro Bowl was the National Football League's all-star game for "
    "the 2005 season. It was held in Honolulu, Hawaii, in February 2006. The 2006 Pro Bowl "
    "drew a crowd of fifty thousand.",
    "Pro Bowl": "The Pro Bowl is the all-star game of the National Football League. Players "
    "are selected for the Pro Bowl by fans, coaches and players. Selection for the Pro Bowl "
    "is an honour for any player.",
    "Deltha O'Neal": "Deltha Lee O'Neal (born January 30, 1977) is a former American football "
    "cornerback who played for nine seasons. He was a two-time Pro Bowl selection.",
    "1939 Pro Bowl": "The 1939 Pro Bowl game was the league's first all-star game. The Pro "
    "Bowl has moved between Honolulu and other cities since 1939.",
    "2010 Pro Bowl": "The 2010 Pro Bowl was played in Miami before the Super Bowl. Fans voted "
    "for the 2010 Pro Bowl players online.",
    "Pro Bowl Skills Showdown": "The Pro Bowl skills challenge was added in 2017. Pro Bowl "
    "players compete in dodgeball and passing drills.",
}


def test_an_answer_that_says_he_on_its_subjects_page_opens_the_answer() -> None:
    """ "He was a two-time Pro Bowl selection" on Deltha O'Neal's page answers "how many
    times was Deltha O'Neal selected": it is read as saying his name, and it comes right
    after the sentence of his page that says who "he" is, at the top of the Answer."""
    sources = [source(n, title) for n, title in enumerate(PRO_BOWL, 1)]
    texts = {n: text for n, text in enumerate(PRO_BOWL.values(), 1)}
    said = best_answer(
        "How many times was Deltha O'Neal selected for the Pro Bowl?", sources, texts
    )
    assert [s.text for s in said[:2]] == [
        "Deltha Lee O'Neal (born January 30, 1977) is a former American football cornerback "
        "who played for nine seasons.",
        "He was a two-time Pro Bowl selection.",
    ]
    assert said[1].sources == [3]


def test_which_and_what_questions_ask_for_a_name() -> None:
    assert question_kind("Rhiwallon was an Earl of which location?") == "name"
    assert question_kind("Drew Fuller starred in a series broadcast on what station?") == "name"
    assert question_kind("In what year was the team formed?") == "date"
    assert question_kind("What is the population of Leland?") == "number"
    assert question_kind("What have astronomers found out about Titan?") == "any"


def test_how_and_why_questions_ask_for_an_explanation_no_name_marks() -> None:
    """ "How is Firefox developed?" is answered by sentences that explain; a name or a
    number does not make one (Mozilla's product list is full of names)."""
    assert question_kind("Why is WeWork being investigated?") == "explain"
    assert question_kind("How is Mozilla's Firefox web browser developed and released?") == (
        "explain"
    )
    assert question_kind("How many moons does Saturn have?") == "number"
    assert question_kind("How did the actor who played Fraser meet Martha Burns?") == "name"
    texts = ["Mozilla makes Firefox, Thunderbird and Bugzilla.", "Code lands in Nightly first."]
    assert kind_scores("How is Firefox developed?", texts) == [0.0, 0.0]


# A two-hop question: four pages restate its first half (a character of a soap opera),
# one page says the rest (who created the soap opera).
SOAP = {
    "Zara Holt": 'Zara Holt is a fictional character from the Australian soap opera "Harbourside", '
    "played by Mia Lane. The character was created as part of the Holt family, along with her "
    "brother Tom Holt. Zara Holt departed the soap opera in 2014.",
    "Tom Holt (Harbourside)": "Tom Holt is a fictional character from the Australian soap "
    'opera "Harbourside", played by Ben Ray. Tom Holt is the brother of Zara Holt in the soap '
    "opera.",
    "Mia Lane": "Mia Lane (born 9 May 1990) is an Australian actress. Lane played the role of "
    'Zara Holt in the long-running Australian soap opera "Harbourside" from 2009 until 2014.',
    "Harbourside": "Harbourside is an Australian television soap opera. It was created by TV "
    "executive Neville Crane, who pitched a show about the families of a seaside town. The "
    "first episode was broadcast in 1985.",
    "Lily Holt": 'Lily Holt is a fictional character from the Australian soap opera "Harbourside", '
    "played by Ava Reed. Lily Holt is the cousin of Zara Holt.",
}


def test_the_sentence_that_says_the_rest_of_the_question_comes_before_restatements() -> None:
    """Once one sentence says the question's first half, a second restatement of it adds
    nothing: the sentence on who created the show is the Answer's second, not its fifth,
    and so it is in an Answer of three sentences (a deep report's section answer)."""
    sources = [source(n, title) for n, title in enumerate(SOAP, start=1)]
    texts = {n: SOAP[title] for n, title in enumerate(SOAP, start=1)}
    question = "Zara Holt is a fictional character from an Australian soap opera created by who?"
    said = best_answer(question, sources, texts, max_sentences=3)
    assert any("Neville Crane" in s.text for s in said[:2]), [s.text for s in said]
    restating = [s for s in said if "is a fictional character from" in s.text]
    assert len(restating) <= 1


def test_a_sentence_naming_its_subject_in_part_is_labelled_with_its_full_name() -> None:
    """ "Smithers first appeared in …" on the page "Wendell Smithers", whose first sentence
    names him "Wendell J. Smithers Jr.": the Answer says whom it means, in full."""
    from sleuth.stages.write import answer_lines

    pages = {
        "Wendell Smithers": "Wendell J. Smithers Jr., usually called Smithers, is a cartoon "
        "character drawn since 1988. Smithers first appeared in the episode Homer's Voyage "
        "in 1990.",
        "Homer's Voyage": "Homer's Voyage is the third episode of the cartoon The Spoons. It was "
        "broadcast in 1990.",
    }
    sources = [source(n, title) for n, title in enumerate(pages, start=1)]
    texts = {n: pages[title] for n, title in enumerate(pages, start=1)}
    question = "Which character first appeared in the episode Homer's Voyage?"
    [said] = best_answer(question, sources, texts, max_sentences=1)
    assert said.text.startswith("Smithers first appeared")
    assert said.subject == "Wendell J. Smithers Jr."
    assert answer_lines([said])[0].startswith("- **Wendell J. Smithers Jr.:** Smithers first")


# A sentence that goes on from the one before it ("But it may …") on a headline-titled page.
TARIFFS = {
    "Beijing tariff demands may expand US-China trade deal": "A first trade deal between the "
    "United States and China was supposed to be a limited agreement. But it may grow into "
    "something bigger if the US agrees to roll back existing tariffs on Chinese goods in "
    "the trade talks.",
    "Soybean farmers wait on the deal": "Soybean growers have spent a second harvest waiting "
    "for the trade talks. Futures markets rose on each sign of progress in the talks.",
    "A guide to tariffs": "Tariffs are taxes on imported goods. Economists say tariffs raise "
    "prices for buyers of Chinese goods.",
}


def test_a_sentence_that_goes_on_from_the_one_before_never_opens_alone() -> None:
    """A quick report's Answer opened with "But it may morph into something bigger …": a
    reader does not know what "it" is. Such a sentence comes right after the sentence of its
    page that it goes on from, or not at all."""
    sources = [source(n, title) for n, title in enumerate(TARIFFS, start=1)]
    texts = {n: TARIFFS[title] for n, title in enumerate(TARIFFS, start=1)}
    question = "How could tariffs on Chinese goods change the US-China trade talks?"
    said = [s.text for s in best_answer(question, sources, texts)]
    assert len(said) >= 3, said
    for at, text in enumerate(said):
        if text.startswith("But it"):
            assert at > 0 and said[at - 1].startswith("A first trade deal"), said


def test_a_score_few_sentences_have_does_not_carry_one_alone() -> None:
    """One sentence of 180 mentioned a second hop's name ("Firefox OS", from Mozilla's
    product list): standardised, that one score was worth 13, and "Develop, deploy and
    debug Firefox OS apps …" opened a Firefox Answer. No score is worth more than
    :data:`Z_BOUND` now."""
    z = zscores([1.0] + [0.0] * 179)
    assert max(z) == Z_BOUND
    assert min(z) > -1
    assert zscores([2.0, 2.0]) == [0.0, 0.0]


# The first paragraph of Wikipedia's "Mozilla" (abridged): a sentence names Rhino, and the
# "It" after it means Rhino, not Mozilla.
MOZILLA = (
    "Mozilla produces many products such as the Firefox web browser and the Thunderbird "
    "e-mail client. Rhino is an open source JavaScript engine managed by the Mozilla "
    "Foundation. It is developed entirely in Java. It converts JavaScript scripts into "
    "classes.\n\nIt is a free software community founded in 1998."
)


def test_a_pronoun_after_a_sentence_naming_someone_else_means_them() -> None:
    """A Firefox Answer quoted "It is developed entirely in Java." as Mozilla's (its page's
    title): it is Rhino's, named in the sentence before it."""
    said = ["Mozilla produces …", "Rhino is …", "It is …", "It converts …", "It is a free …"]
    leans = leaning(said, [0, 0, 0, 0, 1], "Mozilla")
    # Rhino's two "It" sentences lean on Rhino's; a new paragraph's "It" is Mozilla again.
    assert leans == [False, False, True, True, False]
    assert leaning(
        ["Dawn Penn is a singer.", "She is known for a single."], [0, 0], "Dawn Penn"
    ) == [
        False,
        False,
    ]
    question = "What is Mozilla's Firefox web browser developed in?"
    answer = [s.text for s in best_answer(question, [source(1, "Mozilla")], {1: MOZILLA})]
    assert "It is developed entirely in Java." not in answer[:1], answer
    if "It is developed entirely in Java." in answer:
        at = answer.index("It is developed entirely in Java.")
        assert answer[at - 1].startswith("Rhino is"), answer


def test_a_sentence_joined_to_the_one_before_or_pointing_back_needs_it() -> None:
    """ "And Beijing's current strategy … is a failure." and "That's much higher than …"
    say something only after the sentence before them; "This year, …" does not."""
    texts = [
        "Beijing has tried to wait the protests out.",
        "And Beijing's current strategy is an obvious failure.",
        "That's much higher than the level before the tariffs.",
        "Nor has the backtracking cooled the protests.",
        "This year, exports fell.",
        '"It will be really exciting," she said.',
        "Staying on the Moon and reaching Mars, however, haven't.",
        "The lander didn’t.",
        "Firefox ships every four weeks, as Chrome does.",
    ]
    assert leaning(texts, [0] * 9, "The Guardian view on Hong Kong: a failing strategy") == [
        False,
        True,
        True,
        True,
        False,
        True,
        True,
        True,
        False,
    ]
