"""Stage 5, read: find the passages of a page that answer the question.

The page is cut into passages (paragraphs, with long ones split at sentence
boundaries and short ones joined), scored with BM25 (``bm25s``) against the
question and the plan's queries, and the best few are kept in page order so the
report quotes what matters rather than a page's first lines.
"""

from __future__ import annotations

import re

MIN_PASSAGE = 80
MAX_PASSAGE = 600
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def _sentences_to_windows(paragraph: str) -> list[str]:
    out: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        if current and len(current) + len(sentence) + 1 > MAX_PASSAGE:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    # A "sentence" longer than the cap (no punctuation) is cut hard.
    return [piece[i:i + MAX_PASSAGE] for piece in out for i in range(0, len(piece), MAX_PASSAGE)]


def split_passages(text: str) -> list[str]:
    """Paragraph-sized passages of ``text``, each at most MAX_PASSAGE characters."""
    passages: list[str] = []
    pending = ""
    for raw in text.split("\n"):
        paragraph = " ".join(raw.split())
        if not paragraph:
            continue
        if len(paragraph) > MAX_PASSAGE:
            if pending:
                passages.append(pending)
                pending = ""
            passages.extend(_sentences_to_windows(paragraph))
            continue
        pending = f"{pending} {paragraph}".strip()
        if len(pending) >= MIN_PASSAGE:
            passages.append(pending[:MAX_PASSAGE])
            pending = ""
    if pending:
        passages.append(pending)
    return passages


def _tokens(texts: list[str]) -> list[list[str]]:
    import bm25s  # heavy (numpy): imported only when a page is read

    tokenized = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
    return [list(t) for t in tokenized]


def best_passages(text: str, queries: list[str], k: int) -> list[str]:
    """The ``k`` passages of ``text`` most relevant to ``queries``, in page order.

    When no passage shares a term with the queries, the page's opening passages are
    returned instead, since the page was chosen by a search engine for this question.
    """
    passages = split_passages(text)
    if len(passages) <= k:
        return passages
    import bm25s

    corpus = _tokens(passages)
    query = sorted({tok for toks in _tokens(queries) for tok in toks})
    if not query:
        return passages[:k]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    scores = retriever.get_scores(query)
    ranked = sorted(range(len(passages)), key=lambda i: (-float(scores[i]), i))
    chosen = [i for i in ranked[:k] if float(scores[i]) > 0]
    if not chosen:
        return passages[:k]
    return [passages[i] for i in sorted(chosen)]

