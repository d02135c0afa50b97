"""The database schema, as a numbered, append-only list of migrations.

Each :class:`Migration` is applied once, in its own transaction, and recorded in the
``schema_migrations`` table (version, name, time applied). To change the schema,
**append** a new migration with the next version number; never edit or reorder one
that has shipped, because databases in users' homes already recorded it as applied.

Statements are kept as separate strings (not one script) because
``sqlite3.Connection.executescript`` commits first, which would break the
one-transaction-per-migration rule.
"""

from __future__ import annotations

from typing import NamedTuple


class Migration(NamedTuple):
    """One schema step: its number, a short name, and the SQL statements it runs."""

    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "caches and runs",
        (
            """CREATE TABLE searches (
            key TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            query TEXT NOT NULL,
            params TEXT NOT NULL,
            hits TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
            "CREATE INDEX searches_created ON searches(created_at)",
            """CREATE TABLE pages (
            canonical_url TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            final_url TEXT,
            status INTEGER,
            etag TEXT,
            last_modified TEXT,
            content_type TEXT,
            content_hash TEXT,
            title TEXT,
            text TEXT,
            date TEXT,
            failure TEXT,
            fetched_at REAL NOT NULL
        )""",
            "CREATE INDEX pages_fetched ON pages(fetched_at)",
            """CREATE TABLE llm_calls (
            key TEXT PRIMARY KEY,
            model TEXT,
            reply TEXT NOT NULL,
            usage TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
            "CREATE INDEX llm_calls_created ON llm_calls(created_at)",
            """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            question TEXT NOT NULL,
            options TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            finished_at REAL,
            pid INTEGER,
            host TEXT,
            report TEXT,
            stats TEXT
        )""",
            "CREATE INDEX runs_created ON runs(created_at)",
            """CREATE TABLE run_stages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            payload TEXT NOT NULL,
            at REAL NOT NULL
        )""",
            "CREATE INDEX run_stages_run ON run_stages(run_id, id)",
        ),
    ),
    Migration(
        2,
        "local documents index",
        (
            """CREATE TABLE docs (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            indexed_at REAL NOT NULL
        )""",
            # Contentful FTS5 table whose rowid is docs.id; kept in step by sleuth.store.docs.
            """CREATE VIRTUAL TABLE docs_fts USING fts5(
            title, body, tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        ),
    ),
    # Whether a cached page surely came from a public address (1), may not have (0, read
    # under --allow-private-urls or an --allow-domains host), or is not known (NULL, a
    # page cached before this column): a run that refuses private addresses reuses only 1.
    Migration(3, "where cached pages came from", ("ALTER TABLE pages ADD COLUMN public INTEGER",)),
    # Documents mode: the fingerprint of each indexed folder's last clean scan (its
    # folders' times, its files' count, times and sizes; see sleuth.store.docs), so a
    # run on an unchanged folder does not compare every file with the index.
    Migration(
        4,
        "documents folders' fingerprints",
        (
            """CREATE TABLE docs_folders (
            root TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            files INTEGER NOT NULL
        )""",
        ),
    ),
    # The library: every page read is searchable. The pages table gets an INTEGER PRIMARY
    # KEY (VACUUM keeps those, not implicit rowids) for an external-content FTS5 index
    # that triggers keep in step with every write, whoever makes it; each row is indexed
    # (a failure's NULL title and text index nothing), so deletes always match.
    Migration(
        5,
        "the library: pages searchable",
        (
            """CREATE TABLE pages_new (
            id INTEGER PRIMARY KEY,
            canonical_url TEXT NOT NULL UNIQUE,
            url TEXT NOT NULL,
            final_url TEXT,
            status INTEGER,
            etag TEXT,
            last_modified TEXT,
            content_type TEXT,
            content_hash TEXT,
            title TEXT,
            text TEXT,
            date TEXT,
            failure TEXT,
            fetched_at REAL NOT NULL,
            public INTEGER
        )""",
            "INSERT INTO pages_new (canonical_url, url, final_url, status, etag, last_modified, "
            "content_type, content_hash, title, text, date, failure, fetched_at, public) "
            "SELECT canonical_url, url, final_url, status, etag, last_modified, content_type, "
            "content_hash, title, text, date, failure, fetched_at, public FROM pages "
            "ORDER BY fetched_at",
            "DROP TABLE pages",
            "ALTER TABLE pages_new RENAME TO pages",
            "CREATE INDEX pages_fetched ON pages(fetched_at)",
            """CREATE VIRTUAL TABLE pages_fts USING fts5(
            title, text, content = 'pages', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
            """CREATE TRIGGER pages_fts_insert AFTER INSERT ON pages BEGIN
            INSERT INTO pages_fts (rowid, title, text) VALUES (new.id, new.title, new.text);
        END""",
            """CREATE TRIGGER pages_fts_delete AFTER DELETE ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, title, text)
                VALUES ('delete', old.id, old.title, old.text);
        END""",
            """CREATE TRIGGER pages_fts_update AFTER UPDATE OF title, text ON pages BEGIN
            INSERT INTO pages_fts (pages_fts, rowid, title, text)
                VALUES ('delete', old.id, old.title, old.text);
            INSERT INTO pages_fts (rowid, title, text) VALUES (new.id, new.title, new.text);
        END""",
            "INSERT INTO pages_fts (pages_fts) VALUES ('rebuild')",
        ),
    ),
)
