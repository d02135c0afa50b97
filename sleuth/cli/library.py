"""``sleuth library``: list, search, export and forget the pages past runs read.

Every page sleuth reads stays in its store (:mod:`sleuth.store.library`), and later runs
search it alongside the web (``--library``). These commands show what it holds
(``list``, ``search``), write it out (``export``: JSON Lines, or a folder of Markdown
files), remove pages for good (``forget``: by URL, by site, or read before a date),
their bytes included, and encrypt the store (``encrypt``). Each takes ``--home``; bad
input is one line and exit code 2.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sleuth._format import duration
from sleuth.cli.runs import _home_option, _open, _open_to_read
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from sleuth.store import LibraryPage

__all__ = ["format_pages", "library_command", "parse_when"]

_TITLE_WIDTH = 50
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def parse_when(text: str, now: float | None = None) -> float:
    """A point in time from ``2026-11-20`` (UTC midnight), ``2026-11-20T08:00`` (UTC) or
    an age (``90``, ``30m``, ``12h``, ``7d``: that long ago); ConfigError otherwise."""
    from sleuth._duration import parse_duration

    text = text.strip()
    if _DATE.match(text):
        for shape in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
            try:
                return float(calendar.timegm(time.strptime(text, shape)))
            except ValueError:
                continue
        raise ConfigError(f"invalid date {text!r}: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM")
    try:
        age = parse_duration(text)
    except ConfigError:
        raise ConfigError(
            f"invalid date or age {text!r}: expected YYYY-MM-DD, or an age such as 7d"
        ) from None
    return (time.time() if now is None else now) - age


def _age(seconds: float) -> str:
    """An age as a table shows it: ``45s``, ``12m30s``, ``5h``, ``3d``."""
    if seconds < 3600:
        return duration(seconds)
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)}h"
    return f"{int(seconds // 86400)}d"


def _day(when: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when))


def _row(page: LibraryPage) -> dict[str, Any]:
    return {
        "url": page.url,
        "title": page.title,
        "read_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(page.fetched_at)),
        "age_s": round(max(0.0, time.time() - page.fetched_at)),
        "chars": page.chars,
        **({"snippet": page.snippet} if page.snippet else {}),
    }


def format_pages(pages: list[LibraryPage], *, snippets: bool = False) -> str:
    """The ``sleuth library list`` table: age, date read, size, title and URL."""
    if not pages:
        return "no pages\n"
    now = time.time()
    titles = [" ".join(page.title.split()) for page in pages]
    titles = [t if len(t) <= _TITLE_WIDTH else t[: _TITLE_WIDTH - 1] + "…" for t in titles]
    width = max(len("TITLE"), *(len(t) for t in titles))
    lines = []
    for page, title in zip(pages, titles, strict=True):
        age = _age(max(0.0, now - page.fetched_at))
        lines.append(
            f"{age:>8}  {_day(page.fetched_at)}  {page.chars:>8}  {title:<{width}}  {page.url}"
        )
        if snippets and page.snippet:
            lines.append(f"{'':>8}  {page.snippet}")
    head = f"{'AGE':>8}  {'READ':<10}  {'CHARS':>8}  {'TITLE':<{width}}  URL"
    return "\n".join([head, *lines]) + "\n"


def _filters(site: str | None, newer: str | None, older: str | None) -> dict[str, Any]:
    return {
        "site": site,
        "since": parse_when(newer) if newer else None,
        "before": parse_when(older) if older else None,
    }


def _list(
    home: str | None, site: str | None, newer: str | None, older: str | None, limit: int, fmt: str
) -> int:
    filters = _filters(site, newer, older)
    store = _open_to_read(home)
    pages: list[LibraryPage] = []
    if store is not None:
        with store:
            pages = store.list_library(limit=limit, **filters)
    _show(pages, fmt)
    return 0


def _search(home: str | None, query: str, site: str | None, limit: int, fmt: str) -> int:
    store = _open_to_read(home)
    pages: list[LibraryPage] = []
    if store is not None:
        with store:
            pages = store.search_library(query, limit, site=site)
    _show(pages, fmt, snippets=True)
    return 0


def _show(pages: list[LibraryPage], fmt: str, *, snippets: bool = False) -> None:
    if fmt == "json":
        click.echo(json.dumps([_row(p) for p in pages], ensure_ascii=False, indent=2))
    else:
        click.echo(format_pages(pages, snippets=snippets), nl=False)


def _markdown_name(page: LibraryPage, taken: set[str]) -> str:
    """A file name for ``page``: its host and path, made safe, and short."""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", page.canonical_url.split("://", 1)[-1]).strip("-")
    stem = stem[:80] or "page"
    if stem in taken:
        stem += "-" + hashlib.sha256(page.canonical_url.encode()).hexdigest()[:8]
    taken.add(stem)
    return stem + ".md"


def _markdown(page: LibraryPage) -> str:
    head = {
        "title": page.title,
        "url": page.url,
        "read_at": _row(page)["read_at"],
        **({"date": page.date} if page.date else {}),
    }
    # JSON strings are valid YAML scalars: a title with a colon or quote stays one value.
    front = "\n".join(
        f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in head.items()
    )
    return f"---\n{front}\n---\n\n# {page.title}\n\n{page.text}\n"


def _export(
    home: str | None,
    fmt: str,
    output: str | None,
    site: str | None,
    newer: str | None,
    older: str | None,
) -> int:
    filters = _filters(site, newer, older)
    if fmt == "markdown" and output is None:
        raise ConfigError("--format markdown writes a folder: give it with --output DIR")
    target = Path(output) if output is not None else None
    if fmt == "markdown" and target is not None and target.exists() and not target.is_dir():
        raise ConfigError(f"--output {target} is a file; --format markdown writes a folder")
    store = _open_to_read(home)
    count = 0
    if store is None:
        pages: Any = iter(())
    else:
        pages = store.library_texts(**filters)
    try:
        if fmt == "markdown":
            assert target is not None
            target.mkdir(parents=True, exist_ok=True)
            taken: set[str] = set()
            for page in pages:
                (target / _markdown_name(page, taken)).write_text(_markdown(page), "utf-8")
                count += 1
        else:
            count = _jsonl(pages, target)
    finally:
        if store is not None:
            store.close()
    where = f" to {target}" if target is not None else ""
    click.echo(f"exported {count} page{'' if count == 1 else 's'}{where}", err=True)
    return 0


def _jsonl(pages: Any, target: Path | None) -> int:
    """Each page as one JSON line, on stdout or into ``target``; how many."""
    count = 0
    out = target.open("w", encoding="utf-8") if target is not None else None
    try:
        for page in pages:
            line = json.dumps(
                {
                    **_row(page),
                    "canonical_url": page.canonical_url,
                    "content_type": page.content_type,
                    "date": page.date,
                    "text": page.text,
                },
                ensure_ascii=False,
            )
            if out is not None:
                out.write(line + "\n")
            else:
                click.echo(line)
            count += 1
    finally:
        if out is not None:
            out.close()
    return count


def _forget(home: str | None, urls: tuple[str, ...], site: str | None, older: str | None) -> int:
    if not urls and not site and not older:
        raise ConfigError("say what to forget: --url URL, --site HOST or --older-than DATE")
    before = parse_when(older) if older else None
    with _open(home) as store:
        done = store.forget_pages(urls=urls, site=site, before=before)
        size = store.size_bytes()
    click.echo(
        f"forgot {done.pages} page{'' if done.pages == 1 else 's'} "
        f"({done.searches} cached searches naming them dropped); "
        f"the store is now {size / 1e6:.1f} MB"
    )
    if done.pages and not done.rewritten:
        click.echo(
            "sleuth: warning: another sleuth is using the store, so its file could not be "
            "rewritten yet: run this again when it has finished to remove the bytes too",
            err=True,
        )
    return 0


def _encrypt(home: str | None) -> int:
    from sleuth.cli.runs import _home
    from sleuth.store import DB_NAME
    from sleuth.store._cipher import is_encrypted
    from sleuth.store.encrypt import encrypt_store, new_key

    folder = _home(home)
    if is_encrypted(folder / DB_NAME) or not encrypt_store(folder, new_key()):
        click.echo(f"the store in {folder} is already encrypted")
    else:
        click.echo(f"encrypted the store in {folder}")
    return 0


# ---------------------------------------------------------------- the commands


def _site_option() -> click.Option:
    return click.Option(
        ["--site"],
        default=None,
        metavar="HOST",
        help="Only pages on this site (the host or its subdomains).",
    )


def _age_options() -> list[click.Option]:
    return [
        click.Option(
            ["--newer-than", "newer"],
            default=None,
            metavar="WHEN",
            help="Only pages read since then (YYYY-MM-DD, or an age: 12h, 7d).",
        ),
        click.Option(
            ["--older-than", "older"],
            default=None,
            metavar="WHEN",
            help="Only pages read before then (YYYY-MM-DD, or an age: 30d).",
        ),
    ]


def _table_or_json() -> click.Option:
    return click.Option(
        ["--format", "fmt"],
        type=click.Choice(("table", "json")),
        default="table",
        show_default=True,
        help="Output format.",
    )


def _limit(default: int) -> click.Option:
    return click.Option(
        ["--limit", "-n"],
        metavar="N",
        type=click.IntRange(1, 1_000_000),
        default=default,
        show_default=True,
        help="Pages to show at most.",
    )


def library_command() -> click.Group:
    """``sleuth library`` and its subcommands, for the ``sleuth`` group."""
    listing = click.Command(
        "list",
        callback=_list,
        params=[_home_option(), _site_option(), *_age_options(), _limit(50), _table_or_json()],
        help="List the library's pages, newest first: age, date read, size, title, URL.",
    )
    search = click.Command(
        "search",
        callback=_search,
        params=[
            click.Argument(["query"]),
            _home_option(),
            _site_option(),
            _limit(10),
            _table_or_json(),
        ],
        help="Search the library's pages as a run does (full text, best first).",
    )
    export = click.Command(
        "export",
        callback=_export,
        params=[
            _home_option(),
            click.Option(
                ["--format", "fmt"],
                type=click.Choice(("jsonl", "markdown")),
                default="jsonl",
                show_default=True,
                help="jsonl: one JSON object per page (url, title, read_at, text, ...); "
                "markdown: one .md file per page, in the --output folder.",
            ),
            click.Option(
                ["--output", "-o"],
                default=None,
                metavar="PATH",
                help="The file (jsonl; default: stdout) or folder (markdown) to write.",
            ),
            _site_option(),
            *_age_options(),
        ],
        help="Write the library's pages out, with their text, oldest first.",
    )
    forget = click.Command(
        "forget",
        callback=_forget,
        params=[
            _home_option(),
            click.Option(
                ["--url", "urls"],
                multiple=True,
                metavar="URL",
                help="Forget this page (repeat for more).",
            ),
            click.Option(
                ["--site"],
                default=None,
                metavar="HOST",
                help="Forget every page on this site (the host and its subdomains).",
            ),
            click.Option(
                ["--older-than", "older"],
                default=None,
                metavar="WHEN",
                help="Forget the pages read before then (YYYY-MM-DD, or an age: 30d).",
            ),
        ],
        help="Remove pages from the library for good: their text, their index entries, "
        "the cached searches that named them and the passages run records kept of them; "
        "the database file is rewritten so that it no longer holds them. Reports of past "
        "runs keep what they quoted.",
    )
    encrypt = click.Command(
        "encrypt",
        callback=_encrypt,
        params=[_home_option()],
        help="Encrypt the store (pip install 'sleuth[encrypt]') with the key in "
        "SLEUTH_STORE_KEY or the OS keyring (keyring set sleuth store); later runs need "
        "the same key. Run it while no other sleuth uses the store.",
    )
    return click.Group(
        "library",
        commands={c.name: c for c in (listing, search, export, forget, encrypt) if c.name},
        short_help="List, search, export or forget the pages past runs read.",
        help="The library: every page sleuth has read, searched alongside the web by later "
        "runs (--library, on by default when it holds pages; --no-library to leave it out).",
    )
