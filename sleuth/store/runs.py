"""Run history: each research run and every stage output, written as it happens.

A run is created ``running`` with the process id and host that own it; each stage
output (plan, hits, ranking, one record per fetched source, summaries, report) is
appended with :meth:`RunStore.record_stage` in its own short transaction, which
also refreshes the run's heartbeat (``updated_at``). So a crash loses at most the
record being written, and a run left ``running`` by a dead process is recognised
(:meth:`RunStore.orphaned`) and marked ``interrupted`` for ``sleuth resume``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import sys
from collections.abc import Mapping
from functools import partial
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from sleuth.errors import ConfigError, RunNotFoundError
from sleuth.store.db import Database, to_json

__all__ = [
    "LAST",
    "RunInfo",
    "RunNotFoundError",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "StageRecord",
    "new_run_id",
]

RunStatus = Literal["running", "done", "failed", "interrupted"]
FINAL_STATUSES: frozenset[str] = frozenset({"done", "failed", "interrupted"})
#: A running run whose heartbeat is older than this is taken as dead (seconds).
STALE_AFTER_S = 3600.0

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case (no i, l, o, u)
_ID_CHARS = 12  # 60 random bits
#: What ``get_run`` takes for the latest run (no id starts with it: there is no "l").
LAST = "last"
_COLUMNS = (
    "id, question, options, status, created_at, updated_at, finished_at, pid, host, report, stats"
)


class StageRecord(NamedTuple):
    """One stage output of a run, in the order it was written."""

    stage: str
    payload: Any
    at: float


class RunSummary(NamedTuple):
    """One line of ``sleuth runs``."""

    id: str
    status: str
    question: str
    created_at: float
    updated_at: float
    sources: int
    tokens: int


class RunInfo(BaseModel):
    """Everything stored about one run except its stage records."""

    model_config = ConfigDict(frozen=True)

    id: str
    question: str
    options: dict[str, Any]
    status: str
    created_at: float
    updated_at: float
    finished_at: float | None
    pid: int | None
    host: str | None
    report: Any = None
    stats: dict[str, Any] | None = None


def new_run_id(now: float | None = None) -> str:
    """A random 12-character id (``now`` is ignored: kept for callers that pass it).

    Ids used to start with the time, so runs made close together shared their first
    eight characters and a short prefix was ambiguous; random ones differ at once, so
    four or five characters name a run, as a short git hash does. Runs are listed by
    their creation time, not their id.
    """
    return "".join(secrets.choice(_ALPHABET) for _ in range(_ID_CHARS))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (unknown → True, to be safe)."""
    if sys.platform == "win32":  # os.kill would terminate it; rely on the heartbeat
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


_INSERT_RUN = (
    "INSERT INTO runs (id, question, options, status, created_at, updated_at, pid, "
    "host) VALUES (?, ?, ?, 'running', ?, ?, ?, ?)"
)


def _execute(sql: str, args: tuple[Any, ...], conn: sqlite3.Connection) -> int:
    return conn.execute(sql, args).rowcount


def _summary(row: tuple[Any, ...]) -> RunSummary:
    run_id, status, question, created, updated, report, stats = row
    if not all(isinstance(v, str) for v in (run_id, status, question)) or not all(
        isinstance(v, int | float) for v in (created, updated)
    ):
        raise TypeError("a run row holds values of the wrong type")
    data = json.loads(stats) if stats else {}
    sources = data.get("sources")
    if not isinstance(sources, int):
        parsed = json.loads(report) if report else None
        listed = parsed.get("sources") if isinstance(parsed, dict) else None
        sources = len(listed) if isinstance(listed, list) else 0
    tokens = data.get("tokens")
    return RunSummary(
        run_id,
        status,
        question,
        created,
        updated,
        sources,
        tokens if isinstance(tokens, int) else 0,
    )


class RunStore(Database):
    """Run records (mixed into :class:`sleuth.store.Store`)."""

    def create_run(self, question: str, options: Mapping[str, Any]) -> str:
        """Record a new ``running`` run owned by this process; returns its id."""
        options_json = to_json(dict(options))
        host = socket.gethostname()
        for _ in range(10):
            now = self.clock()
            run_id = new_run_id(now)
            values = (run_id, question, options_json, now, now, os.getpid(), host)
            try:
                self.write(partial(_execute, _INSERT_RUN, values))
            except sqlite3.IntegrityError:  # same millisecond and same random part
                continue
            return run_id
        raise RuntimeError("could not find a free run id")

    def record_stage(self, run_id: str, stage: str, payload: Any) -> None:
        """Append one stage output (any JSON-able value or pydantic model) to a run."""
        blob = to_json(payload)
        now = self.clock()

        def insert(c: sqlite3.Connection) -> None:
            if not c.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (now, run_id)).rowcount:
                raise RunNotFoundError(f"no run with id {run_id}")
            c.execute(
                "INSERT INTO run_stages (run_id, stage, payload, at) VALUES (?, ?, ?, ?)",
                (run_id, stage, blob, now),
            )

        self.write(insert)

    def heartbeat(self, run_id: str) -> None:
        """Tell readers the run's process is still alive (between stage records)."""
        now = self.clock()
        self.write(
            lambda c: c.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (now, run_id))
        )

    def stages(self, run_id: str, stage: str | None = None) -> list[StageRecord]:
        """A run's stage records in the order written (only ``stage`` ones if given)."""
        sql = "SELECT stage, payload, at FROM run_stages WHERE run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if stage is not None:
            sql += " AND stage = ?"
            args += (stage,)
        rows = self.read(lambda c: c.execute(sql + " ORDER BY id", args).fetchall())
        with self.decoding():
            return [StageRecord(row[0], json.loads(row[1]), row[2]) for row in rows]

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        report_json: Any = None,
        stats: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark a run done/failed/interrupted and keep its report and stats.

        ``stats`` may carry ``sources`` and ``tokens`` (ints) for ``sleuth runs``.
        """
        if status not in FINAL_STATUSES:
            raise ValueError(f"a run finishes as one of {sorted(FINAL_STATUSES)}, not {status!r}")
        now = self.clock()
        values = (
            status,
            now,
            now,
            None if report_json is None else to_json(report_json),
            None if stats is None else to_json(dict(stats)),
            run_id,
        )

        def update(c: sqlite3.Connection) -> None:
            if not c.execute(
                "UPDATE runs SET status = ?, updated_at = ?, finished_at = ?, "
                "report = COALESCE(?, report), stats = COALESCE(?, stats) "
                "WHERE id = ?",
                values,
            ).rowcount:
                raise RunNotFoundError(f"no run with id {run_id}")

        self.write(update)

    def resume_run(self, run_id: str) -> None:
        """Make this process the owner of a run again, status ``running``."""
        now = self.clock()
        values = (now, os.getpid(), socket.gethostname(), run_id)
        self.write(
            lambda c: c.execute(
                "UPDATE runs SET status = 'running', updated_at = ?, finished_at = NULL, pid = ?, "
                "host = ? WHERE id = ?",
                values,
            )
        )

    def list_runs(self, limit: int = 20) -> list[RunSummary]:
        """The latest runs, newest first."""
        rows = self.read(
            lambda c: c.execute(
                "SELECT id, status, question, created_at, updated_at, report, stats FROM runs "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (limit,),
            ).fetchall()
        )
        with self.decoding():
            return [_summary(row) for row in rows]

    def get_run(self, run_id: str) -> RunInfo:
        """The run whose id is ``run_id`` or starts with it (``last``: the latest run);
        ConfigError if none or several."""
        prefix = run_id.strip().lower()
        if not prefix:
            raise RunNotFoundError("give a run id (see 'sleuth runs')")
        if prefix == LAST:
            rows = self.read(
                lambda c: c.execute(
                    f"SELECT {_COLUMNS} FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1"
                ).fetchall()
            )
            if not rows:
                raise RunNotFoundError("there is no run yet, so no last one")
            return self._info(rows[0])
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
                (pattern,),
            ).fetchall()
        )
        exact = [row for row in rows if row[0] == prefix]
        if exact:
            rows = exact
        if not rows:
            raise RunNotFoundError(f"no run with id {run_id!r} (see 'sleuth runs')")
        if len(rows) > 1:
            shown = ", ".join(row[0] for row in rows[:5])
            raise ConfigError(
                f"run id {run_id!r} is ambiguous: it starts {shown}"
                f"{', ...' if len(rows) > 5 else ''}; type more of it"
            )
        return self._info(rows[0])

    def _info(self, row: tuple[Any, ...]) -> RunInfo:
        with self.decoding():
            return RunInfo(
                id=row[0],
                question=row[1],
                options=json.loads(row[2]),
                status=row[3],
                created_at=row[4],
                updated_at=row[5],
                finished_at=row[6],
                pid=row[7],
                host=row[8],
                report=json.loads(row[9]) if row[9] else None,
                stats=json.loads(row[10]) if row[10] else None,
            )

    def last_report(self, question: str, exclude: str | None = None) -> Any:
        """The report of the latest finished run of ``question`` (not ``exclude``), or None."""
        row = self.read(
            lambda c: c.execute(
                "SELECT report FROM runs WHERE question = ? AND status = 'done' AND id != ? "
                "AND report IS NOT NULL ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (question, exclude or ""),
            ).fetchone()
        )
        with self.decoding():
            return json.loads(row[0]) if row else None

    def orphaned(self, stale_after_s: float = STALE_AFTER_S) -> list[str]:
        """Ids of runs marked ``running`` whose process is gone.

        Gone means: its pid no longer exists on this host, or (another host, or a pid
        reused) no stage record or heartbeat for ``stale_after_s`` seconds.
        """
        rows = self.read(
            lambda c: c.execute(
                "SELECT id, pid, host, updated_at FROM runs WHERE status = 'running'"
            ).fetchall()
        )
        host = socket.gethostname()
        now = self.clock()
        dead = []
        with self.decoding():
            for run_id, pid, run_host, updated in rows:
                if now - updated > stale_after_s or (
                    run_host == host
                    and pid is not None
                    and pid != os.getpid()
                    and not pid_alive(pid)
                ):
                    dead.append(run_id)
        return dead

    def mark_orphans_interrupted(self, stale_after_s: float = STALE_AFTER_S) -> list[str]:
        """Mark every orphaned run ``interrupted`` (call before listing or resuming)."""
        dead = self.orphaned(stale_after_s)
        now = self.clock()
        for run_id in dead:
            self.write(
                partial(
                    _execute,
                    "UPDATE runs SET status = 'interrupted', updated_at = ? "
                    "WHERE id = ? AND status = 'running'",
                    (now, run_id),
                )
            )
        return dead
