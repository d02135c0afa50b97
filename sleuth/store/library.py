"""The library: every page sleuth has read, searchable, listable, and forgettable.

The pages cache (:mod:`sleuth.store.cache`) keeps the text of every page a run read;
``pages_fts``, an FTS5 index over its titles and texts kept in step by triggers (see
migration 5), makes it a library that later runs search alongside the web
(:mod:`sleuth.search.library`) and that ``sleuth library`` lists, searches, exports
and forgets.

:meth:`LibraryStore.forget_pages` removes text for good: the rows go, with the index
entries, the cached search answers that named them and the passages run records kept of
them; the index is merged (so no segment keeps a deleted page's terms) and the file
rewritten with ``secure_delete`` on, the WAL checkpointed and truncated, and ``VACUUM``
run, so that the database file no longer holds the text.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, NamedTuple

from sleuth.store._docsearch import TITLE_WEIGHT, fts_query, query_terms, quoted
from sleuth.store.db import Database, to_json
from sleuth.urls import canonicalize, host_of

__all__ = ["ForgetReport", "LibraryPage", "LibraryStore", "on_site"]

#: Pages that hold text: what the library is made of (failures are not pages).
_HAS_TEXT = "p.failure IS NULL AND p.text IS NOT NULL AND p.text != ''"
_COLUMNS = "p.url, p.final_url, p.canonical_url, p.title, p.fetched_at, length(p.text)"


class LibraryPage(NamedTuple):
    """One page of the library: where it was read, its title, when, and how long it is.

    ``snippet`` and ``score`` (bm25, higher is better) are set by a search; ``text``,
    ``content_type`` and ``date`` only by :meth:`LibraryStore.library_texts`.
    """

    url: str
    canonical_url: str
    title: str
    fetched_at: float
    chars: int
    snippet: str = ""
    score: float = 0.0
    text: str = ""
    content_type: str = ""
    date: str | None = None


class ForgetReport(NamedTuple):
    """What :meth:`LibraryStore.forget_pages` removed, and whether the file was rewritten
    (False: another process held the database; the rows are gone, but freed space may
    still hold their bytes until the next forget or ``sleuth cache clear``)."""

    pages: int
    searches: int
    records: int
    rewritten: bool


def on_site(url: str, site: str) -> bool:
    """Whether ``url`` is on ``site``: the host itself or one of its subdomains."""
    host = host_of(url)
    want = host_of(site if "://" in site else f"http://{site}")
    return bool(want) and (host == want or host.endswith("." + want))


def _page(row: tuple[Any, ...], snippet: str = "", score: float = 0.0) -> LibraryPage:
    url, final_url, canonical_url, title, fetched_at, chars = row[:6]
    where = str(final_url or url)
    return LibraryPage(
        url=where,
        canonical_url=str(canonical_url),
        title=str(title or where),
        fetched_at=float(fetched_at),
        chars=int(chars or 0),
        snippet=" ".join(str(snippet).split()),
        score=score,
    )


def _filters(site: str | None, since: float | None, before: float | None) -> tuple[str, list[Any]]:
    """SQL conditions (``AND ...``) and their arguments for the list and search filters."""
    sql, args = "", list[Any]()
    if site:
        sql += " AND sleuth_on_site(p.canonical_url, ?)"
        args.append(site)
    if since is not None:
        sql += " AND p.fetched_at >= ?"
        args.append(since)
    if before is not None:
        sql += " AND p.fetched_at < ?"
        args.append(before)
    return sql, args


def _with_site(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn`` with the URL functions the library's queries use."""
    conn.create_function("sleuth_on_site", 2, on_site, deterministic=True)
    conn.create_function(
        "sleuth_canonical", 1, lambda url: canonicalize(url) if url else None, deterministic=True
    )
    return conn


def _one_row(sql: str, args: tuple[Any, ...], conn: sqlite3.Connection) -> Any:
    return _with_site(conn).execute(sql, args).fetchone()


def _cover(conn: sqlite3.Connection, terms: list[str], ids: set[int]) -> dict[int, float]:
    """For each page of ``ids``, the idf-weighted share of ``terms`` it holds."""
    total = int(conn.execute(f"SELECT COUNT(*) FROM pages p WHERE {_HAS_TEXT}").fetchone()[0])
    held = dict.fromkeys(ids, 0.0)
    weights = 0.0
    for term in terms:
        if len(term) < 2:  # "s" of "Jupiter's": no word of its own
            continue
        having = {
            int(row[0])
            for row in conn.execute(
                "SELECT rowid FROM pages_fts WHERE pages_fts MATCH ?", (quoted(term),)
            )
        }
        df = len(having)
        idf = math.log((total - df + 0.5) / (df + 0.5) + 1.0)
        weights += idf
        for page in having & ids:
            held[page] += idf
    return {page: value / weights for page, value in held.items()} if weights else held


class LibraryStore(Database):
    """The library's queries over the pages cache (mixed into :class:`sleuth.store.Store`)."""

    def library_size(self, at_most: int | None = None) -> int:
        """How many pages with text the library holds (counting no further than
        ``at_most``: ``library_size(at_most=1)`` asks whether it holds any, cheaply)."""
        limit = -1 if at_most is None else at_most
        sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM pages p WHERE {_HAS_TEXT} LIMIT ?)"
        row = self.read(lambda c: c.execute(sql, (limit,)).fetchone())
        with self.decoding():
            return int(row[0])

    def search_library(
        self,
        query: str,
        limit: int = 10,
        *,
        site: str | None = None,
        since: float | None = None,
        before: float | None = None,
        min_cover: float = 0.0,
    ) -> list[LibraryPage]:
        """The ``limit`` pages that best match ``query`` (bm25, title weighted), best first.

        ``min_cover`` keeps only pages holding at least that share of the query's words,
        each word weighted by how rare it is in the library (bm25's idf): a page that
        shares only common words with the query ("found", "recently") is not a match.
        """
        match = fts_query(query)
        if not match or limit < 1:
            return []
        where, args = _filters(site, since, before)
        sql = (
            f"SELECT {_COLUMNS}, snippet(pages_fts, 1, '', '', ' … ', 24), "
            f"bm25(pages_fts, {TITLE_WEIGHT}, 1.0) AS rank, p.id "
            f"FROM pages_fts JOIN pages p ON p.id = pages_fts.rowid "
            f"WHERE pages_fts MATCH ? AND {_HAS_TEXT}{where} ORDER BY rank LIMIT ?"
        )
        # A few more than asked when some may not cover the query well enough.
        wanted = limit * 4 if min_cover > 0 else limit

        def find(conn: sqlite3.Connection) -> tuple[list[Any], dict[int, float]]:
            rows = _with_site(conn).execute(sql, (match, *args, wanted)).fetchall()
            if min_cover <= 0:
                return rows, {}
            return rows, _cover(conn, query_terms(query), {int(row[8]) for row in rows})

        rows, cover = self.read(find)
        with self.decoding():
            pages = [
                _page(row, row[6] or "", -float(row[7]))
                for row in rows
                if min_cover <= 0 or cover.get(int(row[8]), 0.0) >= min_cover
            ]
        return pages[:limit]

    def list_library(
        self,
        *,
        site: str | None = None,
        since: float | None = None,
        before: float | None = None,
        limit: int | None = None,
    ) -> list[LibraryPage]:
        """The library's pages, newest first (those on ``site``, read in ``[since, before)``)."""
        where, args = _filters(site, since, before)
        sql = (
            f"SELECT {_COLUMNS} FROM pages p WHERE {_HAS_TEXT}{where} "
            f"ORDER BY p.fetched_at DESC LIMIT ?"
        )
        count = -1 if limit is None else limit
        rows = self.read(lambda c: _with_site(c).execute(sql, (*args, count)).fetchall())
        with self.decoding():
            return [_page(row) for row in rows]

    def library_texts(
        self,
        *,
        site: str | None = None,
        since: float | None = None,
        before: float | None = None,
    ) -> Iterator[LibraryPage]:
        """Every page of the library (as :meth:`list_library` filters) with its text, oldest
        first; read one page at a time, so a large library is never held in memory."""
        where, args = _filters(site, since, before)
        sql = (
            f"SELECT {_COLUMNS}, p.text, p.content_type, p.date, p.id FROM pages p "
            f"WHERE {_HAS_TEXT}{where} AND p.id > ? ORDER BY p.id LIMIT 1"
        )
        last = -1
        while True:
            row = self.read(partial(_one_row, sql, (*args, last)))
            if row is None:
                return
            with self.decoding():
                last = int(row[9])
                yield _page(row)._replace(
                    text=str(row[6]), content_type=str(row[7] or ""), date=row[8]
                )

    def forget_pages(
        self,
        *,
        urls: Iterable[str] = (),
        site: str | None = None,
        before: float | None = None,
    ) -> ForgetReport:
        """Remove the pages at ``urls``, on ``site``, or read before ``before`` (any that
        match one of the three), failures included, and then their bytes from the file.

        Cached search answers naming a removed page are dropped (they are asked again),
        and the passages run records kept of it are emptied; finished reports are kept.
        """
        keys = sorted({canonicalize(url) for url in urls})
        if not keys and site is None and before is None:
            return ForgetReport(0, 0, 0, rewritten=False)
        counts = self.write(lambda c: _forget(_with_site(c), keys, site, before))
        if not counts[0]:
            return ForgetReport(*counts, rewritten=False)
        # Merge the index into one segment: a deleted page's terms leave the index.
        self.write(lambda c: c.execute("INSERT INTO pages_fts (pages_fts) VALUES ('optimize')"))
        rewritten = self.vacuum()
        return ForgetReport(*counts, rewritten=rewritten)


def _forget(
    conn: sqlite3.Connection, keys: list[str], site: str | None, before: float | None
) -> tuple[int, int, int]:
    """Delete the matching pages and what names them (one transaction); the counts."""
    conditions, args = list[str](), list[Any]()
    if keys:
        # The URL asked for, or the one it led to (the one a report's Sources show).
        marks = ", ".join("?" for _ in keys)
        conditions.append(
            f"(canonical_url IN ({marks}) OR sleuth_canonical(final_url) IN ({marks}))"
        )
        args.extend([*keys, *keys])
    if site:
        conditions.append("sleuth_on_site(canonical_url, ?)")
        args.append(site)
    if before is not None:
        conditions.append("fetched_at < ?")
        args.append(before)
    rows = conn.execute(
        f"SELECT url, final_url, canonical_url FROM pages WHERE {' OR '.join(conditions)}", args
    ).fetchall()
    gone = {str(value) for row in rows for value in row if value}
    if not rows:
        return 0, 0, 0
    conn.executemany("DELETE FROM pages WHERE canonical_url = ?", [(row[2],) for row in rows])
    searches = 0
    for key, hits in conn.execute("SELECT key, hits FROM searches").fetchall():
        if any(url in str(hits) for url in gone):
            searches += conn.execute("DELETE FROM searches WHERE key = ?", (key,)).rowcount
    return len(rows), searches, _scrub_records(conn, gone)


def _scrub_records(conn: sqlite3.Connection, gone: set[str]) -> int:
    """Empty the passages that runs' ``fetched`` records kept of the pages in ``gone``."""
    scrubbed = 0
    canonical = {canonicalize(url) for url in gone}
    records = conn.execute("SELECT id, payload FROM run_stages WHERE stage = 'fetched'").fetchall()
    for record_id, payload in records:
        try:
            data = json.loads(payload)
        except (TypeError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        urls = {canonicalize(str(data.get(key) or "")) for key in ("url", "final_url")}
        if urls & canonical and data.get("passages"):
            data["passages"] = []
            conn.execute(
                "UPDATE run_stages SET payload = ? WHERE id = ?", (to_json(data), record_id)
            )
            scrubbed += 1
    return scrubbed
