"""A static text embedding: a question, a page or a passage as a vector, with no model server.

The table (``sleuth/data/static_embedding.npz``) holds one vector per WordPiece token of
all-MiniLM-L6-v2's vocabulary, distilled the way model2vec does it: each token run
through the sentence encoder on its own, the outputs reduced to 256 dimensions (PCA), the
frequent tokens weighted down, stored as int8 with a scale per row. A text's vector is
the sum of its tokens' vectors, normalised: a 5,000-word page in a few milliseconds, no
GPU, no torch. ``bench/static_model.py`` rebuilds the table from the model's published
weights; the model's licence (Apache-2.0) and attribution are in
``sleuth/data/static_embedding_LICENSE.txt``.

Nothing is read until the first text is embedded (:func:`static_model`); the tokenizer
is BERT's (lower-cased, accents stripped, punctuation split off, greedy longest-match
word pieces), written here rather than taken from ``tokenizers``, which would bring
``huggingface_hub`` and 20 MB for sixty lines.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import cache, lru_cache
from importlib.resources import files

import numpy as np
import numpy.typing as npt
import regex

__all__ = ["StaticModel", "WordPiece", "static_model"]

Vector = npt.NDArray[np.float32]

# BERT's pre-tokenizer: punctuation (ASCII's symbols too) is a token of its own, a word is a
# run of the rest, CJK ideographs are words of one character; controls and accents go. A
# first split at whitespace and ASCII punctuation (the standard library's re, three times
# quicker than regex) leaves the rest to each word that is not ASCII, once per word.
_ASCII_PUNCT = r"!-/:-@\[-`{-~"
_SPLIT = re.compile(rf"[^\s{_ASCII_PUNCT}]+|[{_ASCII_PUNCT}]")
_WORD = regex.compile(rf"[^\s\p{{P}}{_ASCII_PUNCT}]+|[\p{{P}}{_ASCII_PUNCT}]")
_CJK = regex.compile(
    "([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf"
    "\U0002f800-\U0002fa1f])"
)
_DROP = regex.compile(r"[\p{Cc}\p{Cf}\p{Mn}\ufffd]")
_MAX_WORD = 100  # longer runs are one unknown token, as BERT has it
_CACHE_LIMIT = 200_000


class WordPiece:
    """BERT's uncased tokenizer over a vocabulary (one token a line, ids by position)."""

    def __init__(self, vocab: list[str]) -> None:
        self.ids = {token: n for n, token in enumerate(vocab)}
        self.unknown = self.ids.get("[UNK]", 0)
        self._cache: dict[str, tuple[int, ...]] = {}

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (no [CLS] or [SEP])."""
        out: list[int] = []
        cache = self._cache
        for word in _SPLIT.findall(text.lower()):
            found = cache.get(word)
            if found is None:
                found = self._word_ids(word)
            out.extend(found)
        return out

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if word.isascii():
            found = self._pieces(word)
        else:
            text = _DROP.sub("", unicodedata.normalize("NFD", word))
            words = _WORD.findall(_CJK.sub(r" \1 ", text))
            found = tuple(n for part in words for n in self._pieces(part))
        if len(self._cache) > _CACHE_LIMIT:
            self._cache.clear()
        self._cache[word] = found
        return found

    def _pieces(self, word: str) -> tuple[int, ...]:
        """The ids of ``word``'s pieces: longest first from the left, or one unknown."""
        pieces: list[int] = []
        start, n = 0, len(word)
        while start < n and n <= _MAX_WORD:
            end = n
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    pieces.append(self.ids[piece])
                    break
                end -= 1
            if end == start:
                return (self.unknown,)
            start = end
        return tuple(pieces) if pieces else (self.unknown,)


class StaticModel:
    """A token table and its tokenizer: texts in, unit vectors out."""

    def __init__(
        self, vocab: list[str], vectors: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]
    ) -> None:
        self.tokenizer = WordPiece(vocab)
        self.vectors = vectors
        self.scales = scales
        self.dim = int(vectors.shape[1])

    def rows(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors of the tokens ``ids``, one row each."""
        return np.multiply(self.vectors[ids], self.scales[ids, None], dtype=np.float32)

    def ids(self, text: str) -> npt.NDArray[np.int64]:
        """The token ids of ``text``."""
        return np.fromiter(self.tokenizer.encode(text), dtype=np.int64)

    def embed(self, text: str) -> Vector:
        """``text`` as a unit vector (zeros when it has no known token); read-only: a
        short text's (a sentence, a title) is remembered, as the answer's scoring asks
        for a sentence again once a run's pages are together."""
        if len(text) <= _CACHED_CHARS:
            return self._embed_short(text)
        return self.embed_rows(self.ids(text))

    @lru_cache(maxsize=1 << 12)  # noqa: B019 (one model per process, kept for good)
    def _embed_short(self, text: str) -> Vector:
        vector = self.embed_rows(self.ids(text))
        vector.setflags(write=False)
        return vector

    def embed_many(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Each of ``texts`` as a row of unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.embed(text) for text in texts])

    def windows(self, text: str, size: int, step: int) -> npt.NDArray[np.float32]:
        """Unit vectors of ``text``'s windows of ``size`` tokens, ``step`` apart (the
        last window ends with the text; a text shorter than ``size`` is one window)."""
        ids = self.ids(text)
        if len(ids) <= size:
            return self.embed_rows(ids)[None, :]
        rows = self.rows(ids)
        starts = np.arange(0, len(ids) - size + 1, step)
        if size % step == 0:
            # A window is size // step whole blocks of step tokens: sum the blocks once
            # (a running sum down a page's rows costs several times more).
            per, count = size // step, len(starts)
            end = starts[-1] + size
            blocks = np.add.reduceat(rows[:end], np.arange(0, end, step), axis=0)
            sums = sum((blocks[j : j + count] for j in range(1, per)), blocks[:count].copy())
        else:
            total = np.zeros((len(ids) + 1, self.dim), dtype=np.float32)
            np.cumsum(rows, axis=0, out=total[1:])
            sums = total[starts + size] - total[starts]
        if starts[-1] != len(ids) - size:
            sums = np.vstack([sums, rows[-size:].sum(axis=0)])
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out: npt.NDArray[np.float32] = np.divide(
            sums, norms, out=np.zeros_like(sums), where=norms > 0
        )
        return out

    def embed_rows(self, ids: npt.NDArray[np.int64]) -> Vector:
        """The unit vector of the tokens ``ids``."""
        return _unit(self.rows(ids).sum(axis=0))


def _unit(vector: npt.NDArray[np.float32]) -> Vector:
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm > 0 else vector).astype(np.float32, copy=False)


_LOCK = threading.Lock()
#: Texts up to this long have their vectors remembered (:meth:`StaticModel.embed`).
_CACHED_CHARS = 400


@cache
def _load() -> StaticModel:
    data = files("sleuth") / "data"
    vocab = (data / "static_embedding_vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    with (data / "static_embedding.npz").open("rb") as raw, np.load(raw) as table:
        return StaticModel(vocab, table["vectors"], table["scales"])


def static_model() -> StaticModel:
    """The shipped model, read on first use (8 MB in memory) and kept."""
    with _LOCK:
        return _load()
