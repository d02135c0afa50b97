"""A deep research's sources judged together once the tree is explored (pipeline/deep/sift).

Each branch judges its pages only beside its own: a follow-up whose searches found
nothing good keeps the best of a bad lot. Beside the whole tree, that page is off-topic;
and a page one branch set aside can be the second hop another branch's page names.
"""

from __future__ import annotations

from records import candidate, page

from sleuth.models import Quality, Source
from sleuth.pipeline.deep.sift import hops, sift
from sleuth.pipeline.deep.tree import Branch, Tree
from sleuth.stages.relevance import OFF_TOPIC

QUESTION = "Which band was formed first, The Exies or Circus Diablo?"

EXIES = (
    "The Exies",
    "The Exies are an American rock band formed in Los Angeles in 1997. The Exies "
    "released their first album in 2000 and toured with other rock bands.",
)
DIABLO = (
    "Circus Diablo",
    "Circus Diablo is an American rock band formed in 2004 by Billy Morrison. Circus "
    "Diablo released one album and toured as a rock band.",
)
# What a follow-up on "Los Angeles" finds: a band, formed, but not a word of either band.
METALLICA = (
    "Metallica",
    "Metallica is an American heavy metal band formed in Los Angeles in 1981 by Lars "
    "Ulrich and James Hetfield. The band's fast tempos made it one of the founding "
    "bands of thrash metal; it toured the world for decades.",
)


def branch(id_: str, level: int, question: str, *pages: tuple[str, str]) -> Branch:
    made = Branch(id_, id_.rpartition(".")[0] or None, level, question, [question])
    for n, (title, text) in enumerate(pages):
        url = f"https://example{id_}.org/{n}"
        made.pages.append((candidate(url, title), page(url, title, text)))
        made.sources.append(
            Source(
                id=n + 1,
                url=url,
                title=title,
                quality=Quality.UNVERIFIED,
                quality_score=2,
                score=1.0,
                passages=[text],
            )
        )
    made.read, made.status = len(made.sources), "done"
    return made


def test_a_follow_up_page_off_topic_beside_the_whole_tree_is_left_out() -> None:
    tree = Tree(
        [
            branch("1", 1, "The Exies", EXIES),
            branch("2", 1, "Circus Diablo", DIABLO),
            branch("1.1", 2, "Los Angeles", METALLICA),
        ]
    )
    failures = sift(QUESTION, tree)
    kept = [s.title for b in tree.branches for s in b.sources]
    assert kept == ["The Exies", "Circus Diablo"]
    [failure] = failures
    assert failure.url.startswith("https://example1.1.org/")
    assert failure.reason.startswith(OFF_TOPIC) and "Exies" in failure.reason
    follow_up = tree.branches[2]
    assert (follow_up.status, follow_up.read) == ("empty", 0)
    assert follow_up.note is not None and "off-topic" in follow_up.note


def test_a_lone_branch_keeps_its_pages() -> None:
    tree = Tree([branch("1", 1, QUESTION, EXIES)])
    assert sift(QUESTION, tree) == [] and len(tree.branches[0].sources) == 1


def test_a_page_set_aside_by_one_branch_is_a_hop_when_another_names_it() -> None:
    question = "Toad Hall is a residential hall in a university located in what city?"
    hall = branch(
        "2",
        1,
        "Toad Hall",
        (
            "Toad Hall (ANU)",
            "Toad Hall is a residence of the Australian National University, a hall for "
            "postgraduate students; students there always find a room.",
        ),
    )
    asked = branch("1", 1, question)
    anu = "https://anu.example.org/anu"
    asked.aside = [
        (
            candidate(anu, "Australian National University"),
            page(
                anu,
                "Australian National University",
                "The Australian National University is a public research university in "
                "Canberra, the capital of Australia.",
            ),
        ),
        # Not named by any source as a name: "always" is a word, not this film.
        (
            candidate("https://film.example.org/a", "Always (2011 film)"),
            page("https://film.example.org/a", "Always (2011 film)", "A film."),
        ),
    ]
    tree = Tree([asked, hall])
    [(owner, found)] = hops(tree, room=5)
    assert owner is asked and [c.url for c, _ in found] == [anu]
    assert hops(tree, room=0) == []


def test_a_page_set_aside_that_names_a_second_hop_s_subject_is_a_hop() -> None:
    # The page on the actor (a source) does not name his daughter; her page names him.
    question = "Who did the actor who played Constable Ben Marlow in Due North have a child with?"
    actor = branch(
        "2",
        1,
        "Due North",
        (
            "Tom Vessel",
            "Tom Vessel is a Canadian actor known for his lead role as Constable Ben Marlow "
            'in the television series "Due North".',
        ),
    )
    asked = branch("1", 1, question)
    daughter = "https://daughter.example.org/a"
    asked.aside = [
        (
            candidate(daughter, "Ada Vessel"),
            page(
                daughter,
                "Ada Vessel",
                "Ada Vessel is a Canadian actress, the daughter of Mia Burns and Tom Vessel.",
            ),
        ),
        # It names only what the question names: no second hop.
        (
            candidate("https://show.example.org/b", "Northern lights"),
            page("https://show.example.org/b", "Northern lights", "Due North aired in 1994."),
        ),
    ]
    tree = Tree([asked, actor])
    [(owner, found)] = hops(tree, room=5, topic=question)
    assert owner is asked and [c.url for c, _ in found] == [daughter]


def test_a_page_naming_a_weak_source_s_subject_is_no_hop() -> None:
    # Metallica's page is far under the tree's best pages: a page naming Metallica is
    # about Metallica, not about the second hop of the question.
    asked = branch("1", 1, QUESTION, EXIES, DIABLO)
    follow_up = branch("1.1", 2, "Los Angeles", METALLICA)
    guitarist = "https://guitarist.example.org/a"
    asked.aside = [
        (
            candidate(guitarist, "Kirk Hammett"),
            page(
                guitarist,
                "Kirk Hammett",
                "Kirk Hammett is an American guitarist who joined Metallica.",
            ),
        )
    ]
    assert hops(Tree([asked, follow_up]), room=5, topic=QUESTION) == []
