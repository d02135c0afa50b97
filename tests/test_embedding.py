"""The shipped static embedding: BERT's tokenizer, and what the vectors put close together."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sleuth.embedding import static_model

# What Hugging Face's ``tokenizers`` gives for all-MiniLM-L6-v2's tokenizer.json (padding
# and truncation off, no special tokens): the shipped tokenizer must split the same way.
REFERENCE = [
    (
        "The Fed's Jerome Powell raised rates; naïve café-goers paid $5.00.",
        "the fed ' s jerome powell raised rates ; naive cafe - go ##ers paid $ 5 . 00 .",
    ),
    (
        "Firefox Developer Edition (Mozilla) — 東京 unaffable",
        "fire ##fo ##x developer edition ( mo ##zi ##lla ) — 東 京 una ##ffa ##ble",
    ),
    (
        "Crème brûlée at Zürich’s Kronenhalle",
        "cr ##eme br ##ule ##e at zurich ’ s k ##rone ##nh ##alle",
    ),
    ("Kathi-Anne Reinstein", "kat ##hi - anne reins ##tein"),
]


@pytest.mark.parametrize(("text", "tokens"), REFERENCE)
def test_the_tokenizer_splits_as_bert_does(text: str, tokens: str) -> None:
    model = static_model()
    vocab = {n: t for t, n in model.tokenizer.ids.items()}
    assert " ".join(vocab[int(i)] for i in model.ids(text)) == tokens


def test_the_fed_is_the_federal_reserve_and_not_a_game_console() -> None:
    model = static_model()
    question = model.embed("Why did the Federal Reserve raise interest rates?")
    fed = model.embed("The Fed lifted its benchmark rate again, citing a strong labour market.")
    xbox = model.embed("The Xbox One X is the most powerful game console ever made.")
    assert float(question @ fed) > float(question @ xbox) + 0.2


def test_a_window_of_a_long_text_is_closer_to_its_own_subject() -> None:
    model = static_model()
    text = "Tariffs on soybeans and steel rose in the trade war. " * 30
    text += "Police in Hong Kong fired tear gas at protesters on the campus. " * 30
    windows = model.windows(text, 64, 32)
    protests = model.embed("How is China responding to the protests in Hong Kong?")
    sims = windows @ protests
    assert windows.shape[1] == model.dim and np.allclose(np.linalg.norm(windows, axis=1), 1)
    assert sims[0] < 0.3 < sims[-1] and sims.max() > float(model.embed(text) @ protests)


def test_an_empty_or_unknown_text_is_a_zero_vector() -> None:
    model = static_model()
    assert not model.embed("").any() and model.windows("", 64, 32).shape == (1, model.dim)


def test_the_table_is_read_only_when_first_used() -> None:
    """Importing sleuth and its relevance gate reads no table (and loads no numpy)."""
    code = (
        "import sys\nimport sleuth, sleuth.stages.relevance\n"
        "print('LOADED', sorted(m for m in ('sleuth.embedding', 'regex') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    )
    assert proc.stdout.splitlines()[-1] == "LOADED []", proc.stderr


def test_each_window_is_the_unit_vector_of_its_own_tokens() -> None:
    model = static_model()
    text = " ".join(f"word{n % 97} river{n % 13} market" for n in range(200))
    ids = model.ids(text)
    for size, step in ((64, 32), (64, 16), (60, 25)):
        windows = model.windows(text, size, step)
        starts = [*range(0, len(ids) - size + 1, step)]
        if starts[-1] != len(ids) - size:
            starts.append(len(ids) - size)
        expected = np.stack([model.embed_rows(ids[s : s + size]) for s in starts])
        assert windows.shape == expected.shape and np.allclose(windows, expected, atol=1e-5)
