"""Encryption at rest: with ``[encrypt]`` and a key, the database file holds no page text.

The tests that need SQLCipher skip where ``sqlcipher3`` is not installed
(``pip install -e '.[dev,encrypt]'``; .ci/run installs it).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import sleuth
from sleuth.cli import run
from sleuth.errors import ConfigError
from sleuth.store import Store
from sleuth.store._cipher import KEY_ENV
from sleuth.testing import OfflineWeb

WEWORK = "Why is the New York attorney general investigating WeWork and its founder Adam Neumann?"
KEY = "correct horse battery staple"

needs_sqlcipher = pytest.mark.skipif(
    importlib.util.find_spec("sqlcipher3") is None,
    reason="sqlcipher3 is not installed (pip install -e '.[encrypt]')",
)


def options(web: OfflineWeb, home: Path) -> dict[str, object]:
    return {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 2,
        "no_llm": True,
        "home": str(home),
    }


def on_disk(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.glob("sleuth.db*")))


def sentences(home: Path, count: int = 30) -> list[str]:
    """Sentences of the pages the store holds (read with the key the environment gives)."""
    with Store(home) as store:
        texts = [page.text for page in store.library_texts()]
    found = [s.strip() for text in texts for s in re.split(r"(?<=[.!?])\s+", text)]
    return [s for s in found if len(s) > 40][:count]


@needs_sqlcipher
async def test_an_encrypted_store_holds_no_page_text_in_clear(
    web: OfflineWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain, secret = tmp_path / "plain", tmp_path / "secret"
    await sleuth.research(WEWORK, **options(web, plain))
    monkeypatch.setenv(KEY_ENV, KEY)
    report = await sleuth.research(WEWORK, **options(web, secret))
    assert report.sources

    said = sentences(secret)
    assert len(said) >= 10
    assert any(s.encode() in on_disk(plain) for s in said)  # what a plain store shows
    clear = on_disk(secret)
    assert [s for s in said if s.encode() in clear] == []
    assert b"SQLite format 3" not in clear
    assert b"WeWork" not in clear and b"Neumann" not in clear
    assert b"wework-investigation" not in clear  # nor the pages' addresses
    assert b"wework-investigation" in on_disk(plain)


@needs_sqlcipher
def test_a_wrong_key_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    Store(tmp_path).close()
    monkeypatch.setenv(KEY_ENV, "not the key")
    assert run(["library", "list", "--home", str(tmp_path)]) == 2
    err = capfd.readouterr().err
    assert err == (
        f"sleuth: error: cannot open the encrypted store {tmp_path / 'sleuth.db'}: wrong key "
        "(SLEUTH_STORE_KEY or the OS keyring's), or the file is damaged\n"
    )


@needs_sqlcipher
def test_a_missing_key_is_one_line_and_exit_2(
    web: OfflineWeb,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    Store(tmp_path).close()
    monkeypatch.delenv(KEY_ENV)
    args = ["--search", "searxng", "--searxng-url", web.searxng_url, "--no-llm", "--quiet"]
    assert run([*args, "--home", str(tmp_path), "What is WeWork?"]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "it is encrypted (set SLEUTH_STORE_KEY" in err, err


def test_a_key_without_sqlcipher_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlcipher3.dbapi2", None)  # as if not installed
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(ConfigError, match=re.escape("pip install 'sleuth[encrypt]'")):
        Store(tmp_path)


def test_a_key_for_a_plain_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Store(tmp_path).close()
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(ConfigError, match="is not encrypted, but SLEUTH_STORE_KEY is set"):
        Store(tmp_path)


@needs_sqlcipher
async def test_encrypt_turns_a_plain_store_into_an_encrypted_one(
    web: OfflineWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await sleuth.research(WEWORK, **options(web, tmp_path))
    said = sentences(tmp_path)
    assert any(s.encode() in on_disk(tmp_path) for s in said)
    monkeypatch.setenv(KEY_ENV, KEY)
    assert run(["library", "encrypt", "--home", str(tmp_path)]) == 0
    clear = on_disk(tmp_path)
    assert [s for s in said if s.encode() in clear] == []
    with Store(tmp_path) as store:
        assert store.search_library("attorney general WeWork")
        assert len(store.list_runs()) == 1


class _Keyring:
    """An OS keyring that holds one password (or none)."""

    def __init__(self, password: str | None) -> None:
        self.password = password

    def get_password(self, service: str, name: str) -> str | None:
        return self.password if (service, name) == ("sleuth", "store") else None


@needs_sqlcipher
def test_the_key_may_come_from_the_os_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyring = pytest.importorskip("keyring")
    monkeypatch.setenv(KEY_ENV, KEY)
    with Store(tmp_path) as store:
        store.put_search("searxng", "q", {}, [])
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setattr(keyring, "get_password", _Keyring(KEY).get_password)
    with Store(tmp_path) as store:
        assert store.get_search("searxng", "q", {}) == []
    monkeypatch.setattr(keyring, "get_password", _Keyring(None).get_password)
    with pytest.raises(ConfigError, match="it is encrypted"):
        Store(tmp_path)
