"""How the Answer's sentences are chosen and ordered (``sleuth.stages.answer``): the
sentences of a few made-up sources, the question, and what a reader sees first."""

from __future__ import annotations

from records import source

from sleuth.stages.answer import best_answer, question_kind

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
    assert question_kind("Why is WeWork being investigated?") == "any"


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
