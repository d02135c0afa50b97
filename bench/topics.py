"""The timing questions of ``python -m bench``, and how they were chosen.

Real research reads heavy pages: news, finance, sports and shop pages of 40 KB to 1.5 MB
of HTML, and that is where the time goes. The benchmark world serves such pages
(:mod:`bench.pages`), and the timing questions are questions whose search results
include them, so that a typical research reads two or three pages over 500 KB.

How they were chosen (2026-11-25):

1. The 219 pages over 500 KB of WCXB dev, AEB, Readability and Postlight were listed
   with their titles. Every subject
   that two or more of them share (running shoes: runnersworld, REI, Nike; dental
   resolutions: two dentists and SELF's awards; the US-China trade war: CNN and the
   New York Times; …) got one question, written the way a person would ask it, not
   copied from a title: 22 questions (:data:`CANDIDATES`).
2. Each question's eight best hits in the world's search for the question itself were
   counted when over 500 KB (``python -m bench.topics --check`` prints them). A first
   rule kept the 19 questions with at least two; one no-LLM run of each (seed 8) then
   fetched a median of 2 heavy pages per research, but the five that rule put in the
   timing set read 1–2 with a model (7 in 5 runs). The rule kept is **at least three of
   the eight** (:data:`MIN_HEAVY`): 10 questions, which fetched 1–3 heavy pages each in
   that run (mean 2.5). Only the world's search was looked at to choose, never a
   wall time or a critical path.
3. They were ordered by the SHA-256 of their text; the first five are the **timing**
   set that ``python -m bench`` runs (``heavy``: the **tune** split), the other five
   are held out (``heldout``: the **dev** split, ``--split dev``).

The **test** split's five questions are candidates neither set uses, chosen by the rule
in :mod:`bench.splits` (:data:`bench.splits.TIMING_TEST`); only ``python -m bench
--final`` runs them.

``corpus`` is the three corpus topics the timing part ran before 2026-11-25 (stadia,
moons, trade-war: real saved news articles, few of them heavy), kept to compare with
older figures (:func:`timing_questions`).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence

from bench.splits import timing_labels
from bench.world import REPO, data_dir

__all__ = [
    "CANDIDATES",
    "HEAVY",
    "MIN_HEAVY",
    "TIMING_SETS",
    "split_questions",
    "timing_questions",
]

HEAVY = 500_000  # bytes of HTML: a heavy page

#: Of the eight best hits of a question's own search, how many must be over 500 KB.
MIN_HEAVY = 3
#: (label, question, how many of the eight best hits of its search are over 500 KB).
CANDIDATES: tuple[tuple[str, str, int], ...] = (
    ("running-shoes", "What are the best running shoes this year?", 5),
    ("earbuds", "Which wireless earbuds and headphones are worth buying?", 3),
    ("cloud", "What is cloud computing and where is it heading?", 3),
    ("camping", "What camping gear do you need: tents, sleeping bags and camp stoves?", 3),
    ("meditation", "Does mindfulness meditation reduce stress?", 2),
    ("web-design", "What are the web design trends for 2026?", 1),
    ("standing-desk", "Which standing desk should I buy?", 3),
    ("kubernetes", "How do Kubernetes pods and services work?", 2),
    ("cameras", "Which mirrorless camera and lenses should a beginner buy?", 2),
    ("catering", "What are the catering and event planning trends for 2025?", 3),
    ("dental", "What dental habits give you a healthier smile?", 3),
    ("stripe", "How does Stripe handle online payments and charges?", 4),
    ("ai-seo", "How is AI changing SEO and digital marketing?", 3),
    (
        "trade-war",
        "How are tariffs in the US-China trade war affecting markets and trade talks?",
        2,
    ),
    ("apple", "Which Apple MacBook, iPad or AirPods should I buy?", 2),
    ("movies", "What are the best movies of 2025 according to critics?", 2),
    ("analytics", "Which data analytics tools do businesses use?", 2),
    ("remodel", "How much does a home remodel or plumbing upgrade cost?", 2),
    ("certificates", "Which online courses and free certificates are worth taking?", 1),
    ("hong-kong", "How is China responding to the protests in Hong Kong?", 2),
    ("trump-health", "Can the White House be trusted about Donald Trump's health?", 1),
    ("cloud-stocks", "Which cloud computing stocks are worth buying?", 3),
)
TIMING_COUNT = 5


def _ordered() -> list[tuple[str, str]]:
    kept = [(label, q) for label, q, heavy in CANDIDATES if heavy >= MIN_HEAVY]
    return sorted(kept, key=lambda lq: hashlib.sha256(lq[1].encode()).hexdigest())


#: name -> (label, question). "corpus" names corpus topics, whose questions the runner reads.
TIMING_SETS: dict[str, tuple[tuple[str, str], ...]] = {
    "heavy": tuple(_ordered()[:TIMING_COUNT]),
    "heldout": tuple(_ordered()[TIMING_COUNT:]),
    "corpus": (("stadia", ""), ("moons", ""), ("trade-war", "")),
}


def timing_questions(name: str) -> list[tuple[str, str]]:
    """``(label, question)`` of a timing set (labels are short, for the table)."""
    if name != "corpus":
        return list(TIMING_SETS[name])
    from sleuth.testing._corpus import Corpus

    topics = {t.id: t for t in Corpus.load(REPO / "tests" / "data" / "corpus").topics}
    return [(label, topics[label].question) for label, _ in TIMING_SETS[name]]


def split_questions(split: str) -> list[tuple[str, str]]:
    """``(label, question)`` of the timing questions of ``split`` (:mod:`bench.splits`;
    callers check the split with :func:`bench.splits.chosen`)."""
    which = timing_labels(split)
    if isinstance(which, str):
        return timing_questions(which)
    by_label = {label: question for label, question, _ in CANDIDATES}
    return [(label, by_label[label]) for label in which]


def check(candidates: Sequence[tuple[str, str, int]]) -> int:
    """Print each question's eight best hits in the world's search, with their sizes;
    the number of questions whose count of heavy hits is not the one recorded."""
    from bench.latency import Latency
    from bench.world import World
    from sleuth.testing._search import IndexEntry, SearchIndex

    world = World(Latency())
    size = {f"{p.kind}:{p.key}": p.size for p in world.pages}
    index = SearchIndex([IndexEntry(f"{p.kind}:{p.key}", p.title, p.text) for p in world.pages])
    wrong = 0
    for label, question, recorded in candidates:
        hits = index.search(question)[:8]
        heavy = sum(size[entry.url] > HEAVY for entry, _ in hits)
        wrong += heavy != recorded
        note = "" if heavy == recorded else f" (recorded: {recorded})"
        print(f"\n{label}: {heavy} of 8 over {HEAVY // 1000} KB{note}: {question}")
        for entry, _ in hits:
            print(f"  {size[entry.url] / 1000:7.0f} KB  {entry.url[:24]:24} {entry.title[:60]}")
    return wrong


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.topics``: the sets, and the search check of step 2."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.topics",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="print every candidate's best hits (needs ../shared/data)",
    )
    args = parser.parse_args(argv)
    if args.check and not (data_dir() / "wcxb-dev").is_dir():
        print(f"no benchmark data at {data_dir()} (see bench/README.md); nothing to check")
        return 0
    for name in TIMING_SETS:
        print(f"{name}:")
        for label, question in timing_questions(name):
            print(f"  {label:14} {question}")
    if args.check and check(CANDIDATES):
        print("\nthe world's search no longer gives the recorded counts", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
