"""The run store: migrations, WAL, concurrent writers, caches with TTLs, run history.

Time is a fake clock wherever freshness matters, so nothing here sleeps.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from records import page as page_record

from sleuth.errors import ConfigError
from sleuth.models import FetchFailure, SearchHit
from sleuth.settings import load_settings
from sleuth.store import (
    MIGRATIONS,
    CachedPage,
    Migration,
    RunNotFoundError,
    Store,
    StoreBusyError,
    default_home,
    llm_key,
    parse_duration,
)
from sleuth.store import db as store_db

DAY = 86_400.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    with Store(tmp_path / "home", clock=clock) as opened:
        yield opened


def _hit(n: int, query: str = "q") -> SearchHit:
    return SearchHit(
        title=f"Result {n}",
        url=f"https://example.com/{n}",
        snippet="s",
        rank=n,
        provider="duckduckgo",
        query=query,
    )


def _migration_rows(home: Path) -> list[tuple[int, str, float]]:
    with sqlite3.connect(home / "sleuth.db") as conn:
        return conn.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()


# ---------------------------------------------------------------- opening & migrations


def test_new_home_gets_a_wal_database_with_every_migration(tmp_path: Path) -> None:
    home = tmp_path / "deep" / "home"
    with Store(home) as store:
        assert store.applied_now == [m.version for m in MIGRATIONS]
        assert store.journal_mode == "wal"
    assert (home / "sleuth.db").is_file()
    with sqlite3.connect(home / "sleuth.db") as conn:  # the mode is persistent in the file
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 0  # per connection...
    with Store(home) as store:
        assert store.conn().execute("PRAGMA foreign_keys").fetchone()[0] == 1  # ...set by us
        assert store.conn().execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_reopening_applies_nothing_again(tmp_path: Path, clock: Clock) -> None:
    home = tmp_path / "home"
    Store(home, clock=clock).close()
    first = _migration_rows(home)
    clock.advance(DAY)
    with Store(home, clock=clock) as store:
        assert store.applied_now == []
    assert _migration_rows(home) == first
    assert [row[0] for row in first] == list(range(1, len(MIGRATIONS) + 1))


def test_an_appended_migration_applies_only_itself(tmp_path: Path, clock: Clock) -> None:
    home = tmp_path / "home"
    Store(home, clock=clock).close()
    before = _migration_rows(home)
    extra = Migration(len(MIGRATIONS) + 1, "bookmarks", ("CREATE TABLE bookmarks (url TEXT)",))
    clock.advance(60)
    with Store(home, clock=clock, migrations=(*MIGRATIONS, extra)) as store:
        assert store.applied_now == [extra.version]
        store.write(lambda c: c.execute("INSERT INTO bookmarks VALUES ('https://a.example')"))
    after = _migration_rows(home)
    assert after[:-1] == before
    assert after[-1] == (extra.version, "bookmarks", clock.now)
    # An older sleuth must not write into a schema it does not know.
    with pytest.raises(ConfigError, match="newer sleuth"):
        Store(home)


def test_a_failing_migration_leaves_no_trace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Store(home).close()
    broken = Migration(len(MIGRATIONS) + 1, "broken", ("CREATE TABLE half (x)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        Store(home, migrations=(*MIGRATIONS, broken))
    with Store(home) as store:
        assert store.schema_versions() == [m.version for m in MIGRATIONS]
        tables = store.read(
            lambda c: c.execute("SELECT name FROM sqlite_master WHERE name = 'half'").fetchall()
        )
        assert tables == []


def test_read_only_home_is_a_config_error(tmp_path: Path) -> None:
    home = tmp_path / "locked"
    home.mkdir()
    home.chmod(0o500)
    try:
        if os.access(home, os.W_OK):
            pytest.skip("running as a user that chmod cannot lock out (root)")
        with pytest.raises(ConfigError, match="permission denied") as info:
            Store(home)
        assert "\n" not in str(info.value)
        with pytest.raises(ConfigError, match=r"cannot write to sleuth home .*choose another"):
            Store(home / "sub")
    finally:
        home.chmod(0o700)


def test_home_that_is_a_file_or_holds_garbage_is_a_config_error(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    with pytest.raises(ConfigError, match="not a folder"):
        Store(a_file)
    home = tmp_path / "home"
    home.mkdir()
    (home / "sleuth.db").write_bytes(b"this is definitely not sqlite" * 100)
    with pytest.raises(ConfigError, match="not a usable sleuth database") as info:
        Store(home)
    assert "\n" not in str(info.value)


def test_the_home_follows_sleuth_home_then_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(env={"SLEUTH_HOME": str(tmp_path / "h")}).home == tmp_path / "h"
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert default_home() == tmp_path / "sleuth"
        monkeypatch.setenv("XDG_CACHE_HOME", "relative")
        assert default_home() == Path.home() / ".cache" / "sleuth"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert default_home() == Path.home() / ".cache" / "sleuth"


def test_durations_read_like_a_user_types_them() -> None:
    assert parse_duration("7d") == 7 * DAY
    assert parse_duration("12h") == 12 * 3600
    assert parse_duration("90") == 90
    assert parse_duration(" 1.5 m ") == 90
    for bad in ("soon", "-3d", "7 days", ""):
        with pytest.raises(ConfigError, match="invalid duration"):
            parse_duration(bad)


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.list_runs()


# ---------------------------------------------------------------- concurrency


def test_eight_threads_writing_at_once_lose_nothing(store: Store) -> None:
    run_id = store.create_run("concurrency?", {})
    threads_n, per_thread = 8, 200
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            barrier.wait()
            for i in range(per_thread):
                store.record_stage(run_id, "fetch", {"t": t, "i": i})
                url = f"https://example.com/{t}/{i}"
                store.put_page(CachedPage.from_page(page_record(url, "Title", f"text {t} {i}")))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    records = store.stages(run_id)
    assert len(records) == threads_n * per_thread
    for t in range(threads_n):  # every record there, each thread's in the order written
        assert [r.payload["i"] for r in records if r.payload["t"] == t] == list(range(per_thread))
    assert store.cache_counts()["pages"] == threads_n * per_thread
    page = store.get_page("https://example.com/7/199")
    assert page is not None and page.text == "text 7 199"
    assert store.integrity_check() == "ok"


def test_a_fresh_home_opened_by_many_at_once_is_migrated_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    barrier = threading.Barrier(6)
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            barrier.wait()
            with Store(home) as store:
                applied.append(store.applied_now)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=open_store) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert sorted(v for versions in applied for v in versions) == [m.version for m in MIGRATIONS]
    assert [row[0] for row in _migration_rows(home)] == [m.version for m in MIGRATIONS]


def _process_writer(home: str, run_id: str, worker: int, count: int, start: Any) -> None:
    """Runs in a child process: its own Store on the same home, writing ``count`` times."""
    with Store(Path(home)) as store:
        start.wait()  # both processes are open and start writing together
        for i in range(count):
            store.record_stage(run_id, "source", {"worker": worker, "i": i})
            store.put_llm(
                llm_key("m", [{"role": "user", "content": f"{worker}-{i}"}]),
                f"reply {worker}-{i}",
                {"total_tokens": i},
            )


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Store(home) as store:
        run_id = store.create_run("two processes", {})
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    count = 250
    procs = [
        ctx.Process(target=_process_writer, args=(str(home), run_id, w, count, start))
        for w in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0]
    with Store(home) as store:
        records = store.stages(run_id, "source")
        assert len(records) == 2 * count
        for w in range(2):
            assert [r.payload["i"] for r in records if r.payload["worker"] == w] == list(
                range(count)
            )
        assert store.cache_counts()["llm_calls"] == 2 * count
        cached = store.get_llm(llm_key("m", [{"role": "user", "content": "1-249"}]))
        assert cached is not None and cached.reply == "reply 1-249"
        assert store.integrity_check() == "ok"


def test_a_write_waits_out_another_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    Store(home).close()
    other = sqlite3.connect(home / "sleuth.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    retries: list[float] = []

    def other_finishes(seconds: float) -> None:
        retries.append(seconds)
        if len(retries) == 1:
            other.execute("COMMIT")

    monkeypatch.setattr(store_db, "_sleep", other_finishes)
    with Store(home, busy_timeout_s=0.01, retries=3) as store:
        store.put_llm("k", "reply", {})
        assert store.get_llm("k") is not None
    assert len(retries) == 1
    other.close()


def test_a_lock_that_never_ends_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    store = Store(home, busy_timeout_s=0.01, retries=3)
    other = sqlite3.connect(home / "sleuth.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    retries: list[float] = []
    monkeypatch.setattr(store_db, "_sleep", retries.append)
    with pytest.raises(StoreBusyError, match="stayed locked") as info:
        store.put_llm("k", "reply", {})
    assert len(retries) == 2 and "\n" not in str(info.value)
    other.execute("ROLLBACK")
    store.put_llm("k", "reply", {})  # nothing left half-done: the store works again
    assert store.get_llm("k") is not None
    other.close()
    store.close()


# ---------------------------------------------------------------- caches


def test_cached_search_is_fresh_for_its_ttl(store: Store, clock: Clock) -> None:
    hits = [_hit(1), _hit(2)]
    params = {"limit": 8, "region": "wt-wt"}
    assert store.get_search("duckduckgo", "q", params, DAY) is None
    store.put_search("duckduckgo", "q", params, hits)
    clock.advance(DAY - 1)
    assert store.get_search("duckduckgo", "q", {"region": "wt-wt", "limit": 8}, DAY) == hits
    assert store.get_search("duckduckgo", "q", {"limit": 5, "region": "wt-wt"}, DAY) is None
    assert store.get_search("searxng", "q", params, DAY) is None
    clock.advance(2)
    assert store.get_search("duckduckgo", "q", params, DAY) is None  # expired
    assert store.get_search("duckduckgo", "q", params, None) == hits  # --refresh-free read
    store.put_search("duckduckgo", "nothing", {}, [])
    assert store.get_search("duckduckgo", "nothing", {}, DAY) == []  # cached "no results"


def test_cached_page_keeps_validators_and_goes_stale(store: Store, clock: Clock) -> None:
    page = page_record("https://example.com/a", "Title", "The text.")
    store.put_page(
        CachedPage.from_page(
            page, etag='"v1"', last_modified="Mon, 01 Jan 2024", fetched_at=clock.now
        )
    )
    cached = store.get_page("https://example.com/a")
    assert cached is not None and cached.ok
    assert (cached.etag, cached.last_modified, cached.text) == (
        '"v1"',
        "Mon, 01 Jan 2024",
        "The text.",
    )
    assert cached.content_hash and len(cached.content_hash) == 64
    assert cached.to_page().text == "The text."
    assert not cached.is_stale(DAY, now=clock.now + DAY - 1)
    assert cached.is_stale(DAY, now=clock.now + DAY + 1)
    clock.advance(2 * DAY)
    assert store.mark_revalidated("https://example.com/a", etag='"v2"')  # a 304 answer
    fresh = store.get_page("https://example.com/a")
    assert fresh is not None and fresh.fetched_at == clock.now and fresh.etag == '"v2"'
    assert fresh.text == "The text."
    assert not store.mark_revalidated("https://never.example/")
    assert store.get_page("https://never.example/") is None


def test_cached_fetch_failure_keeps_its_reason(store: Store, clock: Clock) -> None:
    failure = FetchFailure(url="https://example.com/gone", reason="HTTP 404", status=404)
    store.put_page(CachedPage.from_failure(failure, "https://example.com/gone", clock.now))
    cached = store.get_page("https://example.com/gone")
    assert cached is not None and not cached.ok
    assert (cached.failure, cached.status) == ("HTTP 404", 404)
    with pytest.raises(ValueError, match="cached failure"):
        cached.to_page()


def test_llm_key_ignores_dict_order_but_not_content() -> None:
    a = llm_key("gpt-x", [{"role": "user", "content": "hi"}], {"temperature": 0, "seed": 1})
    b = llm_key("gpt-x", [{"content": "hi", "role": "user"}], {"seed": 1, "temperature": 0})
    assert a == b and len(a) == 64
    assert a != llm_key("gpt-y", [{"role": "user", "content": "hi"}], {"temperature": 0, "seed": 1})
    assert a != llm_key(
        "gpt-x", [{"role": "user", "content": "hi!"}], {"temperature": 0, "seed": 1}
    )
    assert a != llm_key(
        "gpt-x", [{"role": "user", "content": "hi"}], {"temperature": 0.2, "seed": 1}
    )
    two = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert llm_key("m", two) != llm_key("m", list(reversed(two)))


def test_llm_reply_comes_back_with_its_usage(store: Store) -> None:
    key = llm_key("m", [{"role": "user", "content": "summarise"}])
    assert store.get_llm(key) is None
    store.put_llm(key, "A summary.", {"prompt_tokens": 120, "completion_tokens": 30}, model="m")
    cached = store.get_llm(key)
    assert cached is not None
    assert (cached.reply, cached.usage, cached.model) == (
        "A summary.",
        {"prompt_tokens": 120, "completion_tokens": 30},
        "m",
    )


def test_clear_cache_older_than_keeps_recent_entries_and_runs(store: Store, clock: Clock) -> None:
    def fill(tag: str) -> None:
        store.put_search("duckduckgo", tag, {}, [_hit(1, tag)])
        store.put_page(
            CachedPage.from_page(
                page_record(f"https://example.com/{tag}", "Title", "Body text."),
                fetched_at=clock.now,
            )
        )
        store.put_llm(llm_key("m", [tag]), "r", {})

    fill("old")
    done = store.create_run("old question", {})
    store.finish_run(done, "done", {"sources": []}, {"sources": 0, "tokens": 0})
    clock.advance(10 * DAY)
    fill("new")
    running = store.create_run("still going", {})
    counts = store.clear_cache(7 * DAY)
    assert counts == {"searches": 1, "pages": 1, "llm_calls": 1}
    assert store.get_search("duckduckgo", "old", {}, None) is None
    assert store.get_search("duckduckgo", "new", {}, None) is not None
    assert store.get_page("https://example.com/new") is not None
    assert len(store.list_runs()) == 2
    counts = store.clear_cache(runs=True)
    assert counts == {"searches": 1, "pages": 1, "llm_calls": 1, "runs": 1}
    assert [run.id for run in store.list_runs()] == [running]  # a running run is never deleted
    assert store.cache_counts() == {"searches": 0, "pages": 0, "llm_calls": 0, "runs": 1}


# ---------------------------------------------------------------- runs


def test_runs_are_listed_newest_first_with_sources_and_tokens(store: Store, clock: Clock) -> None:
    ids = []
    for n in range(3):
        ids.append(store.create_run(f"question {n}?", {"depth": n + 1}))
        clock.advance(61)
    assert all(len(run_id) == 12 and run_id.isalnum() for run_id in ids)
    store.finish_run(ids[0], "done", {"sources": [{"id": 1}, {"id": 2}]}, {"tokens": 1234})
    store.finish_run(ids[1], "failed", None, {"sources": 0, "tokens": 0})
    runs = store.list_runs()
    assert [r.id for r in runs] == list(reversed(ids))
    assert [r.status for r in runs] == ["running", "failed", "done"]
    assert (runs[2].sources, runs[2].tokens, runs[2].question) == (2, 1234, "question 0?")
    assert len(store.list_runs(limit=2)) == 2
    info = store.get_run(ids[0])
    assert info.options == {"depth": 1} and info.report == {"sources": [{"id": 1}, {"id": 2}]}
    assert info.finished_at is not None and info.pid == os.getpid()


def test_run_lookup_by_prefix(store: Store) -> None:
    first = store.create_run("one", {})
    second = store.create_run("two", {})  # same clock: ids still differ from the start
    assert first[:4] != second[:4]
    assert store.get_run(first[:4]).question == "one"
    assert store.get_run(second.upper()).question == "two"  # ids are typed in any case
    assert store.get_run(second).question == "two"
    assert store.get_run("last").question == "two"
    # 40 ids over 32 first characters: two of them share one, which is then ambiguous.
    ids = [store.create_run(f"q{n}", {}) for n in range(40)]
    shared = next(c for c in {i[0] for i in ids} if sum(i[0] == c for i in ids) > 1)
    with pytest.raises(ConfigError, match="ambiguous") as info:
        store.get_run(shared)
    assert sum(i in str(info.value) for i in ids if i[0] == shared) >= 2
    with pytest.raises(RunNotFoundError, match="no run"):
        store.get_run("zzzz")
    with pytest.raises(RunNotFoundError):
        store.get_run("%")


def test_stage_records_come_back_in_order(store: Store) -> None:
    run_id = store.create_run("q", {"depth": 2})
    store.record_stage(run_id, "plan", {"queries": ["a", "b"]})
    store.record_stage(run_id, "hits", [_hit(1), _hit(2)])
    store.record_stage(run_id, "source", {"url": "https://a.example"})
    store.record_stage(run_id, "source", {"url": "https://b.example"})
    records = store.stages(run_id)
    assert [r.stage for r in records] == ["plan", "hits", "source", "source"]
    assert records[1].payload[0]["url"] == "https://example.com/1"
    assert [r.payload["url"] for r in store.stages(run_id, "source")] == [
        "https://a.example",
        "https://b.example",
    ]
    with pytest.raises(RunNotFoundError):
        store.record_stage("nope", "plan", {})
    with pytest.raises(ValueError, match="finishes as"):
        store.finish_run(run_id, "running")


def test_run_of_a_dead_process_is_found_and_marked_interrupted(store: Store, clock: Clock) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = store.create_run("crashed", {})
    store.write(lambda c: c.execute("UPDATE runs SET pid = ? WHERE id = ?", (dead.pid, orphan)))
    alive = store.create_run("ours, still going", {})
    assert store.orphaned() == [orphan]
    clock.advance(2 * 3600)  # no heartbeat for two hours: taken as dead too
    assert sorted(store.orphaned(stale_after_s=3600)) == sorted([orphan, alive])
    clock.advance(-2 * 3600)
    assert store.mark_orphans_interrupted() == [orphan]
    assert store.get_run(orphan).status == "interrupted"
    assert store.get_run(alive).status == "running"
    store.resume_run(orphan)
    assert store.get_run(orphan).status == "running"
    assert store.get_run(orphan).pid == os.getpid()


def test_closing_waits_for_a_write_running_in_another_thread(tmp_path: Path) -> None:
    """A page's cache write still ran in its thread (its task cancelled at the end of the
    run) when the run closed the store: SQLite crashed the process (a segfault in CI).
    Closing now waits for the write, which is kept."""
    home = tmp_path / "home"
    store = Store(home)
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def slow_write(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
        inside.set()
        release.wait(30)
        conn.execute("INSERT INTO t VALUES (1)")

    def writer() -> None:
        try:
            store.write(slow_write)
        except BaseException as exc:  # the old code closed the connection under it
            errors.append(exc)

    writing = threading.Thread(target=writer)
    writing.start()
    assert inside.wait(30)
    closing = threading.Thread(target=store.close)
    closing.start()
    # Gives the old code time to close the connection under the write; the new close
    # waits for it (this join then times out), so the order below holds either way.
    closing.join(timeout=1.0)
    release.set()
    writing.join(30)
    closing.join(30)
    assert errors == [] and not closing.is_alive()
    with Store(home) as again:
        assert again.read(lambda c: c.execute("SELECT x FROM t").fetchall()) == [(1,)]
