"""Local documents: indexing a folder incrementally, searching it, the ``local`` provider.

The folder is built in ``tmp_path`` from text written here plus one small real PDF
(``tests/data/docs``, see its LICENSES.md). Nothing here touches the network.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from records import note

from sleuth.errors import ConfigError, ProviderError
from sleuth.extraction.documents import DocumentExtractor
from sleuth.search import build_providers, get_provider, run_searches
from sleuth.search.local import LocalSearch
from sleuth.settings import Settings
from sleuth.store import Store, file_url, index_folder, search_docs
from sleuth.store.docs import fts_query, get_doc, path_from_file_url

#: Reads the folder's files in this process (no worker pool, no limits).
READ = DocumentExtractor()

DATA = Path(__file__).parent / "data" / "docs"

GUIDE_HTML = """<!doctype html><html><head><title>Sourdough baking guide</title></head>
<body><nav>Home | Recipes | About</nav><article><h1>Sourdough baking guide</h1>
<p>A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in flour
and water. Feed the starter every day at the same hydration and keep it warm.</p>
<p>The bulk fermentation of a sourdough loaf takes four to six hours at room temperature;
the dough should grow by about half before it is shaped and proofed overnight.</p>
<p>Bake the loaf in a covered pot so the steam keeps the crust soft while it rises.</p>
</article><footer>Copyright the bakers</footer></body></html>"""

NOTES_MD = """# Rust ownership notes

Every value in Rust has one owner. The borrow checker makes sure references never
outlive the data they point to, using lifetimes written like `'a`.

## Moves

Assigning a String moves it; the old binding cannot be used afterwards.
"""

KELP_TXT = """Kelp forests and photosynthesis

Giant kelp grows up to half a metre a day. Its blades carry out photosynthesis near the
surface while the holdfast anchors it to rock on the sea floor.
"""

TIDES_RST = """Tides
=====

Tides are caused by the gravitational pull of the moon and the sun on the oceans.
Spring tides happen at new and full moon.
"""


def _bump_mtime(path: Path) -> None:
    """Make the file's mtime differ from the indexed one without waiting for the clock."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "my docs"
    note(docs / "guide.html", GUIDE_HTML)
    note(docs / "notes.md", NOTES_MD)
    note(docs / "kelp.txt", KELP_TXT)
    note(docs / "sub" / "tides.rst", TIDES_RST)
    shutil.copy(DATA / "list-item-example.pdf", docs / "module.pdf")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\ngarbage\n")
    note(docs / ".hidden" / "secret.md", "# Hidden sourdough\nnever indexed")
    note(docs / ".draft.md", "# Draft sourdough\nnever indexed")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    outside = note(tmp_path / "outside.md", "# Outside sourdough\nnot in the folder")
    (docs / "link.md").symlink_to(outside)
    return docs


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "home") as opened:
        yield opened


def _names(hits: list[Any]) -> list[str]:
    return [Path(hit.path).name for hit in hits]


# ---------------------------------------------------------------- indexing


def test_folder_is_indexed_and_a_corrupt_pdf_is_reported(store: Store, folder: Path) -> None:
    report = index_folder(store, folder, READ)
    assert (report.added, report.updated, report.unchanged, report.removed) == (5, 0, 0, 0)
    [(failed_path, reason)] = report.failed
    assert failed_path == str(folder.resolve() / "broken.pdf")
    assert reason.startswith("unreadable PDF")
    assert report.ignored == 2  # photo.png, and link.md which leads out of the folder
    doc = get_doc(store, folder.resolve() / "module.pdf")
    assert doc is not None and doc.kind == "pdf"
    assert "quality assurance" in " ".join(doc.text.split()).lower()
    html = get_doc(store, folder.resolve() / "guide.html")
    assert html is not None and html.title == "Sourdough baking guide"
    assert "wild yeast" in html.text and "Copyright the bakers" not in html.text
    titles = {
        name: getattr(get_doc(store, folder.resolve() / name), "title", None)
        for name in ("notes.md", "sub/tides.rst", "kelp.txt")
    }
    assert titles == {
        "notes.md": "Rust ownership notes",
        "sub/tides.rst": "Tides",
        "kelp.txt": "Kelp forests and photosynthesis",
    }
    assert store.integrity_check() == "ok"


def test_unreadable_file_is_reported_and_the_rest_indexed(store: Store, folder: Path) -> None:
    secret = note(folder / "private.txt", "payroll numbers")
    secret.chmod(0o000)
    try:
        if os.access(secret, os.R_OK):
            pytest.skip("running as a user that chmod cannot lock out (root)")
        report = index_folder(store, folder, READ)
    finally:
        secret.chmod(0o600)
    assert (str(folder.resolve() / "private.txt"), "permission denied") in report.failed
    assert report.added == 5


def test_read_error_on_one_file_is_not_fatal(
    store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same as above, for any user: reading one file fails with EACCES."""
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "kelp.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    report = index_folder(store, folder, READ)
    assert (str(folder.resolve() / "kelp.txt"), "permission denied") in report.failed
    assert report.added == 4
    assert search_docs(store, "kelp photosynthesis", 5) == []


def test_reindex_reads_only_what_changed(
    store: Store, folder: Path, extraction_spy: Callable[[], list[str]]
) -> None:
    index_folder(store, folder, READ)
    extracted = extraction_spy()
    again = index_folder(store, folder, READ)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 5, 0)
    assert extracted == ["broken.pdf"]  # only the failed file is tried again

    extracted.clear()
    note(folder / "notes.md", NOTES_MD.replace("borrow checker", "ownership checker"))
    _bump_mtime(folder / "notes.md")
    _bump_mtime(folder / "kelp.txt")  # touched, same bytes: re-hashed, not re-extracted
    changed = index_folder(store, folder, READ)
    assert (changed.added, changed.updated, changed.unchanged, changed.removed) == (0, 1, 4, 0)
    assert sorted(extracted) == ["broken.pdf", "notes.md"]
    assert _names(search_docs(store, "ownership checker", 3))[0] == "notes.md"
    assert search_docs(store, "borrow", 3) == []


def test_deleted_and_new_files_are_followed(store: Store, folder: Path) -> None:
    index_folder(store, folder, READ)
    (folder / "kelp.txt").unlink()
    note(folder / "sub" / "volcano.md", "# Volcanoes\nMagma chambers feed eruptions.")
    report = index_folder(store, folder, READ)
    assert (report.added, report.updated, report.unchanged, report.removed) == (1, 0, 4, 1)
    assert search_docs(store, "kelp", 5) == []
    assert _names(search_docs(store, "magma", 5)) == ["volcano.md"]


def _age(folder: Path, seconds: int = 3600, recent_only: bool = False) -> None:
    """Date every file and folder (``recent_only``: modified in the last 10 minutes) back.

    A scan keeps its fingerprint only when nothing was modified just before it (a
    change in the same clock tick would not show), and a run with a file modified just
    before it compares every file: dating a change back makes the next run rely on the
    fingerprint to see it, as it does for a change made minutes before a run.
    """
    recent = time.time_ns() - 600 * 1_000_000_000
    for path in [folder, *folder.rglob("*")]:
        st = path.lstat()
        if not recent_only or st.st_mtime_ns > recent:
            os.utime(
                path,
                ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000),
                follow_symlinks=False,
            )


def _fingerprints(store: Store) -> int:
    return int(store.read(lambda c: c.execute("SELECT count(*) FROM docs_folders").fetchone()[0]))


def _change(folder: Path, change: str) -> tuple[str, str | None]:
    """Make ``change``; the query that finds the new text, and the file it must find."""
    if change == "edit in place":
        note(folder / "notes.md", NOTES_MD.replace("borrow checker", "ownership ledger"))
        return "ownership ledger", "notes.md"
    if change == "edit in place, same size":
        before = folder.stat().st_mtime_ns
        note(folder / "kelp.txt", KELP_TXT.replace("Giant", "Bulky"))
        assert (folder / "kelp.txt").stat().st_size == len(KELP_TXT)
        assert folder.stat().st_mtime_ns == before  # its folder's time says nothing
        return "bulky", "kelp.txt"
    if change == "edit through a symlink":
        note(folder / "sub" / "tides.rst", TIDES_RST.replace("moon", "selene"))
        return "selene", "tides.rst"
    if change == "add":
        note(folder / "volcano.md", "# Volcanoes\nMagma chambers feed eruptions.")
        return "magma", "volcano.md"
    if change == "add in a new folder":
        note(folder / "sub" / "deep" / "volcano.md", "# Volcanoes\nMagma chambers.")
        return "magma", "volcano.md"
    if change == "remove":
        (folder / "kelp.txt").unlink()
        return "kelp", None
    assert change == "rename"
    (folder / "kelp.txt").rename(folder / "seaweed.txt")
    return "kelp", "seaweed.txt"


@pytest.mark.parametrize(
    "change",
    [
        "edit in place",
        "edit in place, same size",
        "edit through a symlink",
        "add",
        "add in a new folder",
        "remove",
        "rename",
    ],
)
def test_an_unchanged_folder_is_taken_as_it_is_and_every_change_is_seen(
    store: Store, tmp_path: Path, change: str, extraction_spy: Callable[[], list[str]]
) -> None:
    folder = tmp_path / "clean"
    note(folder / "notes.md", NOTES_MD)
    note(folder / "kelp.txt", KELP_TXT)
    note(folder / "sub" / "tides.rst", TIDES_RST)
    (folder / "tides-link.rst").symlink_to(folder / "sub" / "tides.rst")
    _age(folder)
    first = index_folder(store, folder, READ)
    assert (first.added, first.failed) == (4, [])
    assert _fingerprints(store) == 1  # a clean scan: the next run may skip the per-file check
    extracted = extraction_spy()
    again = index_folder(store, folder, READ)
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 4, 0)
    assert extracted == []

    query, name = _change(folder, change)
    _age(folder, 1800, recent_only=True)  # unlike the first scan's times, whatever the tick
    index_folder(store, folder, READ)
    names = _names(search_docs(store, query, 5))
    if name is None:
        assert names == []
    else:
        assert name in names
        assert extracted, "the changed file was not read again"
    if change in ("remove", "rename"):
        assert "kelp.txt" not in _names(search_docs(store, "photosynthesis", 5))


def test_missing_or_unusable_folder_is_a_config_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        index_folder(store, tmp_path / "nowhere", READ)
    a_file = note(tmp_path / "file.txt", "x")
    with pytest.raises(ConfigError, match="not a folder"):
        index_folder(store, a_file, READ)


# ---------------------------------------------------------------- searching


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("how long does sourdough bulk fermentation take", "guide.html"),
        ("borrow checker lifetimes", "notes.md"),
        ("kelp photosynthesis", "kelp.txt"),
        ("what causes spring tides", "tides.rst"),
        ("product development quality assurance", "module.pdf"),
    ],
)
def test_search_ranks_the_right_file_first(
    store: Store, folder: Path, query: str, best: str
) -> None:
    index_folder(store, folder, READ)
    hits = search_docs(store, query, 5)
    assert _names(hits)[0] == best
    assert hits[0].snippet and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_query_syntax_in_user_text_is_harmless(store: Store, folder: Path) -> None:
    index_folder(store, folder, READ)
    for query in ('NEAR("sourdough" AND', "kelp* OR -", 'title:"tides', "(moon)) ^"):
        assert search_docs(store, query, 5), query
    for query in ("", "   ", "?!*()\"'", "--"):
        assert search_docs(store, query, 5) == []
    assert fts_query('say "hi"') == '"say" OR "hi"'
    assert fts_query("the what") == '"the" OR "what"'  # only stopwords: keep them


def test_search_can_be_limited_to_one_folder(store: Store, folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    note(other / "bread.md", "# Rye bread\nSourdough rye needs a long fermentation.")
    index_folder(store, folder, READ)
    index_folder(store, other, READ)
    assert set(_names(search_docs(store, "sourdough", 10))) == {"guide.html", "bread.md"}
    assert _names(search_docs(store, "sourdough", 10, folder=other)) == ["bread.md"]
    assert _names(search_docs(store, "sourdough", 10, folder=folder)) == ["guide.html"]


def test_file_urls_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "my docs" / "résumé #1.md"
    url = file_url(path)
    assert url.startswith("file:///") and " " not in url and "#" not in url
    assert path_from_file_url(url) == path
    assert path_from_file_url("https://example.com/a.md") is None


# ---------------------------------------------------------------- the provider


class DocsSettings(Settings):
    """Settings with the fields this feature proposes (until settings.py has them)."""

    docs: Path | None = None
    home: Path | None = None


def _url_in(folder: Path, name: str) -> str:
    return file_url(folder.resolve() / name)


def _is_file(url: str) -> bool:
    path = path_from_file_url(url)
    return path is not None and path.is_file()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record (and refuse) every attempt to resolve a name or open a connection."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args[:2]))
        raise OSError("network use in a documents-only test")

    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> Any:
        # A Unix socket never leaves the machine: the extraction workers' forkserver.
        if sock.family == getattr(socket, "AF_UNIX", None):
            return real_connect(sock, address)
        return refuse(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


async def test_local_provider_returns_file_hits_without_network(
    tmp_path: Path, folder: Path, no_network: list[str]
) -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(500)

    settings = DocsSettings.model_validate(
        {"search": ["local"], "docs": folder, "home": tmp_path / "home"}
    )
    kelp_url = _url_in(folder, "kelp.txt")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        assert get_provider("local") is LocalSearch
        providers = build_providers(settings, client, env={})
        hits, failures = await run_searches(
            ["sourdough starter", "rust borrow checker"], providers, limit=3, timeout=30
        )
        provider = providers[0]
        assert isinstance(provider, LocalSearch)
        again = await provider.search("kelp", limit=2)
    assert failures == []
    assert [Path(str(path_from_file_url(h.url))).name for h in hits if h.rank == 1] == [
        "guide.html",
        "notes.md",
    ]
    assert all(h.url.startswith("file:///") and h.provider == "local" for h in hits)
    assert all(_is_file(h.url) for h in hits)
    assert hits[0].title == "Sourdough baking guide" and hits[0].query == "sourdough starter"
    assert again[0].url == kelp_url
    report = provider.index_report
    assert report is not None and report.added == 5 and len(report.failed) == 1
    assert requests == [] and no_network == []
    provider.store().close()


def test_local_provider_needs_a_documents_folder(tmp_path: Path) -> None:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(500)))
    with pytest.raises(ProviderError, match="--docs"):
        build_providers(DocsSettings.model_validate({"search": ["local"]}), client, env={})
    with pytest.raises(ProviderError, match="not a folder"):
        settings = DocsSettings.model_validate({"search": ["local"], "docs": tmp_path / "nowhere"})
        build_providers(settings, client, env={})


ESCAPED_MD = r"""# Release notes \#42

| Option | Meaning |
|---|---|
| `--pipe` | reads a\|b as one value |
| size | 10\*20 cm, not \_emphasis\_ |

Issue \#7 is fixed \(finally\). A path like C:\\temp stays readable.

```
grep '\#' notes.md   # code keeps its backslashes
```

Inline code keeps them too: `a\|b`.
"""


def test_markdown_escapes_are_not_in_a_documents_text(store: Store, tmp_path: Path) -> None:
    """A Markdown file's text reads as its reader sees it: no ``\\#`` or ``\\|``."""
    docs = tmp_path / "docs"
    note(docs / "release.md", ESCAPED_MD)
    index_folder(store, docs, READ)
    doc = get_doc(store, docs.resolve() / "release.md")
    assert doc is not None
    text = doc.text
    assert doc.title == "Release notes #42"
    assert "reads a|b as one value" in text and "Issue #7 is fixed (finally)." in text
    assert "10*20 cm, not _emphasis_" in text and r"C:\temp stays" in text
    assert "\\#" not in text.split("```")[0] and "\\|" not in text.split("```")[0]
    # What is code is left exactly as written.
    assert r"grep '\#' notes.md" in text and r"`a\|b`" in text
