"""Offline token counting, the models table, budgets and chunking."""

from __future__ import annotations

import hashlib
import importlib.machinery
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth.errors import ConfigError
from sleuth.llm import tokens
from sleuth.llm.models_table import DEFAULT_CONTEXT_WINDOW, model_info, normalise
from sleuth.llm.tokens import (
    MIN_CHUNK_TOKENS,
    cached_encoding_file,
    chunk_budget,
    chunk_text,
    context_window,
    count_tokens,
    estimate_tokens,
    message_tokens,
)

# Hand-counted cl100k_base tokenisations (each piece one token).
HAND_COUNTED = [
    ("Hello, world!", 4),  # Hello | , | world | !
    ("The quick brown fox jumps over the lazy dog.", 10),  # 9 words | .
]


@pytest.mark.parametrize(("text", "hand_count"), HAND_COUNTED)
def test_estimate_errs_high_on_hand_counted_text(text: str, hand_count: int) -> None:
    estimate = estimate_tokens(text)
    assert estimate >= hand_count
    assert estimate <= 2 * hand_count  # high, but not absurdly so


def test_estimate_rules() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("word") == 1 and estimate_tokens("words") == 2
    assert estimate_tokens("a b") == 2  # single spaces are free
    assert estimate_tokens("a\n\nb") == 3  # a newline run is one
    assert estimate_tokens("你好世界") == 6  # 1.5 per CJK character
    assert estimate_tokens("日本語のテキスト") == 12
    assert estimate_tokens("...") == 3  # each punctuation mark
    assert estimate_tokens("🙂") == 2
    assert estimate_tokens("Привет") == 3  # Cyrillic: a token per 2 letters
    assert estimate_tokens("नमस्ते") >= 4  # other scripts: a token per letter
    assert estimate_tokens("2024") == 2  # digits: a token per 2
    assert estimate_tokens("iPhone") == 3  # not an ordinary word: a token per 2 letters
    assert estimate_tokens("x7Qz9PbK") == 6  # x | 7 | Qz | 9 | PbK(2)
    assert count_tokens("") == 0


def test_prose_estimate_is_high_but_plausible() -> None:
    # ~4 characters per token is the usual rule for English; the estimate stays above it.
    text = (
        "Retrieval augmented generation combines a search step with a language model. "
        "The model reads the retrieved passages before it answers, which reduces "
        "hallucinations and lets it cite sources.\n\n"
    ) * 20
    assert len(text) / 4 <= estimate_tokens(text) <= len(text) / 2


def test_message_tokens_adds_format_overhead() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert message_tokens(messages) == 3 + 4 + estimate_tokens("Be brief.") + 4 + 1


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("openai/gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-3.5-turbo-0125", 16_385),
        ("gpt-4-0613", 8192),
        ("llama3:8b", 8192),
        ("llama3.1:70b", 131_072),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", 131_072),
        ("qwen2.5:7b-instruct", 32_768),
        ("Qwen/Qwen2.5-72B-Instruct", 32_768),
        ("deepseek-r1:14b", 65_536),
        ("deepseek-chat", 65_536),
        ("mistral:7b", 32_768),
        ("mistral-nemo", 131_072),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc", 128_000),
    ],
)
def test_context_windows_from_the_table(model: str, window: int) -> None:
    assert context_window(model) == window
    assert model_info(model).known


def test_unknown_model_gets_the_conservative_default() -> None:
    for model in ("my-own-finetune", "", None):
        assert context_window(model) == DEFAULT_CONTEXT_WINDOW == 8192
        assert not model_info(model).known
    assert context_window("my-own-finetune", override=32_000) == 32_000
    with pytest.raises(ConfigError):
        context_window("gpt-4o", override=0)


def test_prices_for_openai_models() -> None:
    info = model_info("gpt-4o-mini")
    assert info.cost_usd(1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)
    assert model_info("llama3.1").cost_usd(1000, 1000) is None
    assert normalise("Meta-Llama-3.1-8B-Instruct") == "llama3.18binstruct"


def test_chunk_budget_is_positive_or_refused() -> None:
    assert chunk_budget(128_000, 1_000, 2_000) == 128_000 - 1_000 - 2_000 - 6_400
    assert chunk_budget(8192, 500, 1000, margin=0) == 6692
    # MetaGPT's case: a small window minus a large reserve went negative and looped.
    with pytest.raises(ConfigError, match="too small"):
        chunk_budget(2048, 500, 4096)
    with pytest.raises(ValueError, match="too small"):  # ConfigError is a ValueError
        chunk_budget(4096, 3000, 1000)
    with pytest.raises(ValueError):
        chunk_budget(0, 0, 0)
    with pytest.raises(ValueError):
        chunk_budget(8192, -1, 100)


@given(
    st.integers(-10, 300_000),
    st.integers(0, 300_000),
    st.integers(0, 300_000),
    st.one_of(st.none(), st.integers(-100, 10_000)),
)
def test_chunk_budget_never_zero_or_negative(
    window: int, prompt: int, reply: int, margin: int | None
) -> None:
    try:
        budget = chunk_budget(window, prompt, reply, margin=margin)
    except ValueError:
        return
    assert budget >= MIN_CHUNK_TOKENS
    assert budget <= window - prompt - reply


def _page(paragraphs: int) -> str:
    sentence = (
        "Section {i} explains how the authorization server issues a code. "
        "The client exchanges it for a token! Does PKCE matter? Yes."
    )
    return "\n\n".join(
        sentence.format(i=i) + "\nSecond line of paragraph." for i in range(paragraphs)
    )


@pytest.mark.parametrize("budget", [32, 50, 120, 400, 5000])
def test_chunks_fit_and_keep_every_word(budget: int) -> None:
    text = _page(40)
    chunks = chunk_text(text, budget)
    assert all(count_tokens(c) <= budget for c in chunks)
    assert " ".join(chunks).split() == text.split()
    if budget >= count_tokens(text):
        assert chunks == [text]


def test_chunks_end_at_paragraphs_when_they_can() -> None:
    paragraph = "A short paragraph about tokens. " * 5
    text = "\n\n".join([paragraph.strip()] * 10)
    per = count_tokens(paragraph.strip())
    chunks = chunk_text(text, per * 2 + 2)
    assert all(chunk.count("\n\n") <= 1 for chunk in chunks)
    assert all(chunk.endswith("tokens.") for chunk in chunks)


def test_cjk_and_giant_words_are_cut_to_fit() -> None:
    cjk = "这是一个关于令牌的很长的句子没有任何空格" * 50
    chunks = chunk_text(cjk, 40)
    assert all(count_tokens(c) <= 40 for c in chunks) and "".join(chunks) == cjk
    url = "https://example.com/" + "a1B2" * 500
    chunks = chunk_text(f"see {url} now", 64)
    assert all(count_tokens(c) <= 64 for c in chunks)
    assert "".join(" ".join(chunks).split()) == "".join(f"see {url} now".split())


def test_chunk_text_edge_cases() -> None:
    assert chunk_text("", 100) == [] and chunk_text(" \n\n ", 100) == []
    with pytest.raises(ValueError):
        chunk_text("text", 0)
    with pytest.raises(ValueError):
        chunk_text("text", -5)


@given(st.text(max_size=3000), st.integers(MIN_CHUNK_TOKENS, 400))
def test_chunk_text_always_fits(text: str, budget: int) -> None:
    chunks = chunk_text(text, budget)
    assert all(c and count_tokens(c) <= budget for c in chunks)
    if all(count_tokens(w) <= budget for w in text.split()):  # no word had to be cut
        assert " ".join(chunks).split() == text.split()


# -- tiktoken is only used when it cannot reach the network --------------------------


@pytest.fixture
def fake_tiktoken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A stand-in tiktoken module that records loads and counts characters."""
    loaded: list[str] = []

    class Encoding:
        def encode_ordinary(self, text: str) -> list[int]:
            return list(range(len(text)))

    def get_encoding(name: str) -> Encoding:
        loaded.append(name)
        return Encoding()

    module = types.ModuleType("tiktoken")
    module.__spec__ = importlib.machinery.ModuleSpec("tiktoken", None)
    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    tokens._tiktoken_encoder.cache_clear()
    yield loaded
    tokens._tiktoken_encoder.cache_clear()


def test_tiktoken_not_called_without_a_cached_encoding(
    fake_tiktoken: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert count_tokens("Hello, world!", "gpt-4o") == estimate_tokens("Hello, world!")
    assert fake_tiktoken == []


def test_tiktoken_not_called_when_its_cache_is_disabled(
    fake_tiktoken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would download every time
    assert cached_encoding_file("o200k_base") is None
    count_tokens("Hello", "gpt-4o")
    assert fake_tiktoken == []


def test_corrupt_cache_file_is_not_trusted(
    fake_tiktoken: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    # tiktoken's cache name: SHA-1 of the source URL (known value for o200k_base).
    (tmp_path / "fb374d419588a4632f3f557e76b4b70aebbca790").write_bytes(b"truncated")
    assert cached_encoding_file("o200k_base") is None
    count_tokens("Hello", "gpt-4o")
    assert fake_tiktoken == []


def test_tiktoken_used_for_openai_models_when_cached(
    fake_tiktoken: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"pretend encoding file"
    url = "https://example.invalid/o200k_base.tiktoken"
    monkeypatch.setitem(tokens._ENCODINGS, "o200k_base", (url, hashlib.sha256(data).hexdigest()))
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert count_tokens("Hello, world!", "gpt-4o") == 13  # the fake counts characters
    assert fake_tiktoken == ["o200k_base"]
    # Other vendors' models keep the estimate: tiktoken is not their tokenizer.
    assert count_tokens("Hello, world!", "llama3.1") == estimate_tokens("Hello, world!")
    assert count_tokens("Hello, world!") == estimate_tokens("Hello, world!")
