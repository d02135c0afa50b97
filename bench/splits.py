"""Tune, dev and test: which questions and pages each benchmark is judged on.

Every figure the benchmarks print names its split:

* **tune**: look at anything, choose constants and rules on it;
* **dev**: judge a change on it (it may be looked at, never tuned on);
* **test**: frozen. Only ``python -m bench --final`` runs it (every other entry point
  refuses ``--split test``: :func:`refuse_test`), its figures are dated and quoted as
  "test", and nobody inspects it page by page.

The splits (fixed 2026-11-28; the rules of the new questions were written here, with the
questions, before anything ran on them):

* **HotpotQA** (``hotpotqa_train.json``, 100 questions; the recall part, the relevance
  benchmark's ``hotpotqa`` part, deep recall, determinism, the batch): tune = questions
  0–49, dev = 50–74, test = 75–99 (:data:`HOTPOTQA`).
* **Relevance corpus** (:mod:`bench.relevance`, part ``corpus``): tune = the corpus topics
  stadia, moons, trade-war and firefox; dev = hong-kong, wework, meth and the eleven
  "held-out 2" questions (:data:`HELD_OUT_2`, one per corpus document no topic expects);
  test = :data:`RELEVANCE_TEST`, written by this rule: the Article Extraction Benchmark's
  articles that the world serves as ``aeb`` pages (none of them a corpus document, so no
  tune or dev question uses one), ordered by the SHA-256 of their AEB id; walking that
  order, a page whose title is not in English is passed over; the first twenty are kept.
  Each question was written from the page's title alone, as a reader would ask about
  its subject; the page is the question's only relevant and only on-topic page.
* **Timing** (:mod:`bench.topics`): tune = the ``heavy`` set, dev = the ``heldout`` set
  (both chosen by :mod:`bench.topics`' rule); test = :data:`TIMING_TEST`, by this rule:
  of :data:`bench.topics.CANDIDATES` in neither set, those whose question's own search
  has at least two pages over 500 KB in its eight best hits, leaving out the two whose
  subject is a relevance corpus topic (trade-war, hong-kong) and the one whose run a
  batch trace looked at page by page (movies), ordered by the SHA-256 of the question;
  the first five.
* **Extraction** (:mod:`bench.extraction`: WCXB dev, AEB, Readability): pages are cut by
  a hash of their site (:func:`site_split`): buckets 0–69 of 100 are tune (what the
  block model is trained and the rules chosen on, as before), the former held-out
  buckets 70–99 are cut in two, 70–84 dev and 85–99 test.

Parts with no question set (footprint, start-up, documents mode) measure the program,
not a split; their figures say so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT",
    "HELD_OUT_2",
    "HOTPOTQA",
    "RELEVANCE_CORPUS",
    "RELEVANCE_TEST",
    "SPLITS",
    "TIMING_TEST",
    "TestSplitRefused",
    "hotpot_indices",
    "refuse_test",
    "site_split",
    "timing_labels",
]

SPLITS = ("tune", "dev", "test")
#: What a benchmark runs when no split is named.
DEFAULT = "tune"

#: HotpotQA question indices (``hotpotqa_train.json`` order) per split.
HOTPOTQA: dict[str, range] = {"tune": range(0, 50), "dev": range(50, 75), "test": range(75, 100)}

#: Held-out 2 (dev): one question per corpus document that no corpus topic expects
#: (in manifest order, Le Monde's left out as not English), written from the title
#: alone before any run on them (2026-11-26): (corpus document, question).
HELD_OUT_2: tuple[tuple[str, str], ...] = (
    ("engadget-xbox-one-x-review", "Is the Xbox One X console as powerful as a gaming PC?"),
    ("arstechnica-minecraft-exploit", "How does the Minecraft exploit crash game servers?"),
    (
        "v8-standalone-webassembly",
        "How does Emscripten build standalone WebAssembly binaries that run outside the web?",
    ),
    ("nytimes-yahoo-verizon-sale", "What say do Yahoo shareholders have in its sale to Verizon?"),
    ("wikipedia-hermitian-matrix", "What is a Hermitian matrix and what are its properties?"),
    ("nbcnews-spacex-hold-up", "Why are SpaceX's launches being held up?"),
    (
        "wired-rosetta-comet",
        "Why did the Rosetta spacecraft end its mission by crashing into a comet?",
    ),
    (
        "fool-esports-amazon-activision",
        "Why are Amazon and Activision Blizzard betting on eSports?",
    ),
    ("reuters-fed-lifts-rates", "Why did the Fed raise interest rates in Trump's first year?"),
    ("newyorker-quantum-cryptography", "How will quantum computing break today's cryptography?"),
    (
        "dense-passage-retrieval",
        "How does dense passage retrieval work for open-domain question answering?",
    ),
)

#: The relevance corpus part's questions per split: corpus topic ids, or for dev's
#: held-out 2 and for test, the page's ``kind:key`` (see :data:`HELD_OUT_2`).
RELEVANCE_CORPUS: dict[str, tuple[str, ...]] = {
    "tune": ("stadia", "moons", "trade-war", "firefox"),
    "dev": ("hong-kong", "wework", "meth", *(f"corpus:{doc}" for doc, _ in HELD_OUT_2)),
}

#: The relevance test questions (see the module docstring for the rule): (AEB id, the
#: question written from that page's title). Frozen: never run but by ``--final``.
RELEVANCE_TEST: tuple[tuple[str, str], ...] = (
    (
        "6a72de37e8f98f4eee6c0821e593b35ce536cef6c8b424c5e1dd747ebe6621ba",
        "What did the Browns' defensive snap counts and stats show in Week 11?",
    ),
    (
        "1ee91d1fce65e09be8b8d2d29eab771546d98ca2ba5c862941e660e9fec12432",
        "Are U.S.-backed Syrian forces blocking refugees from returning, as Russia and Syria say?",
    ),
    (
        "7916ecca969ffdd8f6fc32d171fbe0dd63db40fe4c1d2ade02b1dec5929a162f",
        "How were US service members killed in a helicopter crash in Afghanistan?",
    ),
    (
        "8e3efab59f48fd29a1e1e7aa135880c4251a9f090f94999668cdbaec59d30b5a",
        "Why did Anthony Lynn say 'we needed to win this game'?",
    ),
    (
        "e1cd54e5577d077df83a12a4753c3c8bf2d88d68cd709cc4c442874777581c4a",
        "What should English riders do with their horses in October?",
    ),
    (
        "c69e539d689a8335a69042727f1b58edab09d5d99fb607ec625a63151a537dc2",
        "What clinical alarm management solution did Ascom and Dräger introduce in North America?",
    ),
    (
        "aadb38e527d5379306de3b910ec62cb2447cc1035686b2b2d152580f8f8a1ea2",
        "What is the 2020 Lexus LC500 Convertible like?",
    ),
    (
        "33fe2471fd553c6570f93997f208b4f39bf30be5947c3cfa620ee8eff3355ab9",
        "What is on at the 7th Amsterdam Light Festival, 'The Medium is the Message'?",
    ),
    (
        "f8ff621a0b9b7646cc0d57d37416feabba2bf78ef5dd0bfc5b080f9f97bbe584",
        "Why did Home Depot's stock fall after its earnings report?",
    ),
    (
        "f81c6c05d9cbc93316992fa23ef74ec405194e292611f2e94f6a814868903665",
        "How can I retire early by earning, saving and investing more?",
    ),
    (
        "612cd29826624e68ce96789c8049e16279dfd2fceb27434eea7943b2aaf84e90",
        "Is the Clymer motorcycle workshop manual worth buying?",
    ),
    (
        "ffc109d474fdee1a59fa554df8b09643f4a7d45b23eceabad66f0712c3f7daed",
        "Could Coty's stock surge after its Kylie Jenner makeover?",
    ),
    (
        "a1fca19b884e0e946ad3fbe2a7f5031e5e3b23372702a76db302b6143c77cb31",
        "Why did the Taliban free the US and Australian hostages?",
    ),
    (
        "8cad00dc22de45ba42e9540421b5f78333f7ac57b385d69acb27a53b9fd69f0c",
        "What is 'The Palace: Tale of Jang Noksu' at the 2018 Welcome Daehak-ro Festival?",
    ),
    (
        "65ce3a4577a0306994efa190a0d96e84014f9d4257ad54753e807ede518f02c0",
        "How did Eastern Michigan become bowl eligible against Northern Illinois?",
    ),
    (
        "4648a420af9984d45b76a4afedf4f74965f8a2e0bf1c69bd3da2dc189020f3c9",
        "Who is Junior Gaspard, the new CEO of Experience?",
    ),
    (
        "9cb8224b660f36c932823ab613fb76a07928fcbc41956c4c1f96f4ecab9202aa",
        "When and where are the Doobie Brothers touring North America in 2020?",
    ),
    (
        "0d46122928b6f468cc4bbc694051d0dbae5702bc75a16dab82a99b58daf150a0",
        "How did Nadal keep Spain alive against Russia in the Davis Cup Finals?",
    ),
    (
        "e372e42c0a3df7b86e1c0bacf7bc14d042144a01e88833bc5a643d61b3547090",
        "How was the son of a former German president killed in Berlin?",
    ),
    (
        "5caf91b8a4423735f866b089d2611ea14503584cf3b6f487c6d26eb7b9521fca",
        "What happened in the stabbing on a San Francisco Bay Area train?",
    ),
)

#: The timing test questions' labels in :data:`bench.topics.CANDIDATES` (rule above).
TIMING_TEST: tuple[str, ...] = ("meditation", "kubernetes", "analytics", "remodel", "cameras")
#: The timing sets of :mod:`bench.topics` that are tune and dev.
_TIMING_SETS = {"tune": "heavy", "dev": "heldout"}

# Hash buckets (of 100) of a page's site: [0, 70) tune, [70, 85) dev, [85, 100) test.
_TUNE_BELOW, _DEV_BELOW = 70, 85


class TestSplitRefused(ValueError):
    """The test split was asked for outside ``python -m bench --final``."""

    __test__ = False  # not a pytest test class, whatever its name


def refuse_test(split: str, final: bool = False) -> str:
    """``split`` itself; raises :class:`TestSplitRefused` for ``test`` unless ``final``,
    and ValueError for a split that does not exist."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} (one of {', '.join(SPLITS)})")
    if split == "test" and not final:
        raise TestSplitRefused(
            "the test split runs only through `python -m bench --final` (see bench/splits.py)"
        )
    return split


def hotpot_indices(split: str) -> range:
    """The HotpotQA question indices of ``split``."""
    return HOTPOTQA[split]


def timing_labels(split: str) -> tuple[str, ...] | str:
    """The timing questions of ``split``: a :mod:`bench.topics` set name (tune, dev), or
    the labels of the test questions."""
    return _TIMING_SETS.get(split) or TIMING_TEST


def site_split(url: str | None, page_id: str) -> str:
    """``tune``, ``dev`` or ``test``, from a hash of the page's site (host without ``www.``).

    Splitting by site keeps one site's template out of two splits, so what was tuned on
    one page of a site cannot leak into the score of another. Deterministic across runs
    and machines; a page without a host is its own site (``page_id``).
    """
    host = urlsplit(url or "").hostname or ""
    key = host.removeprefix("www.") or page_id
    bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100
    if bucket < _TUNE_BELOW:
        return "tune"
    return "dev" if bucket < _DEV_BELOW else "test"


def chosen(splits: Sequence[str], final: bool = False) -> tuple[str, ...]:
    """Every split of ``splits`` checked by :func:`refuse_test`, in order, once each."""
    return tuple(refuse_test(s, final) for s in dict.fromkeys(splits))
