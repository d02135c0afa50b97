"""How the fetcher treats each site: paced requests, a page cap, and robots.txt.

* Pacing: the starts of two requests to one host are ``--host-delay`` apart (callers
  queue in arrival order; a turn counts from when the request before really began).
* A cap: one host gives at most ``--max-pages-per-host`` pages per run (the caller keeps
  the count: a fetcher shared by the runs of a batch counts each run's own).
* robots.txt, with ``--respect-robots``: one file per site, read once. The
  :class:`~sleuth.fetch.Fetcher` downloads ``/robots.txt`` itself, through its guarded
  client (same SSRF guard, domain lists and host pacing as pages), with a small size cap
  and a short deadline; this module only turns what came back into a yes/no per URL,
  with the ``protego`` parser (Google's rules: ``*`` and ``$`` wildcards, the longest
  matching rule wins, ``Allow`` over ``Disallow`` on a tie).

What an answer means (RFC 9309, except where noted):

* 2xx: the rules in the file, from the group that names our token (``sleuth`` in
  ``sleuth/0.1 (...)``; the longest token that matches wins), else from the ``*`` group;
* 4xx (no file, or none for us): everything allowed;
* 5xx, a timeout, a network error, a file over the cap: everything allowed, and
  the problem noted (RFC 9309 would assume "disallow all" for 5xx; for a tool that
  reads a handful of pages a person asked about, losing the page is worse).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from protego import Protego

from sleuth.errors import BlockedURLError
from sleuth.fetch.config import FetchConfig

__all__ = ["CAPPED", "ROBOTS_MAX_BYTES", "ROBOTS_TIMEOUT", "Politeness", "Robots", "robots_url"]

#: How the reason of a page left out by ``--max-pages-per-host`` begins.
CAPPED = "per-host page limit reached"

#: Bytes of robots.txt read at most (Google's limit is 500 KiB too).
ROBOTS_MAX_BYTES = 500 * 1024
#: Seconds allowed for one robots.txt, all in (capped by ``--timeout``).
ROBOTS_TIMEOUT = 5.0


def robots_url(origin: str) -> str:
    """The robots.txt URL of ``origin`` (``scheme://host[:port]``)."""
    return origin.rstrip("/") + "/robots.txt"


@dataclass(frozen=True)
class Robots:
    """One site's robots.txt as sleuth will obey it.

    ``note`` says why the file could not be used (a 5xx, a timeout), in which case
    everything is allowed; ``None`` when the file was read, or plainly absent.
    """

    parser: Protego | None = None
    note: str | None = None

    @classmethod
    def parse(cls, text: str) -> Robots:
        """Rules from the text of a robots.txt."""
        return cls(Protego.parse(text))

    @classmethod
    def allow_all(cls, note: str | None = None) -> Robots:
        """No usable file: everything allowed (``note`` says why, when that is news)."""
        return cls(None, note)

    def allows(self, url: str, user_agent: str) -> bool:
        """Whether ``user_agent`` (the whole header; its first token counts) may get ``url``."""
        if self.parser is None:
            return True
        token = user_agent.split("/", 1)[0].strip() or user_agent
        return bool(self.parser.can_fetch(url, token))


class Politeness:
    """One fetcher's manners toward each site: pacing, the page cap, robots.txt.

    ``read_robots(origin)`` downloads and reads a site's robots.txt (never raising:
    a file that cannot be used is :meth:`Robots.allow_all` with a note). ``clock`` and
    ``sleep`` pace the requests; tests pass fake ones to see the spacing without waiting.
    """

    def __init__(
        self,
        config: FetchConfig,
        user_agent: str,
        read_robots: Callable[[str], Awaitable[Robots]],
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._config = config
        self._user_agent = user_agent
        self._read_robots = read_robots
        self._clock = clock
        self._sleep = sleep
        self._next_start: dict[str, float] = {}
        self._host_locks: dict[str, asyncio.Lock] = {}
        self._robots: dict[str, asyncio.Task[Robots]] = {}
        #: Sites whose robots.txt could not be read (origin: why); they were treated
        #: as allowing everything. Only filled with ``respect_robots``.
        self.robots_notes: dict[str, str] = {}

    async def pace(self, host: str) -> None:
        """Wait until ``host`` may get its next request: starts are ``host_delay`` apart."""
        delay = self._config.host_delay
        if delay <= 0:
            return
        # One caller at a time per host (in arrival order: asyncio.Lock is fair), and the
        # next turn counted from when this one really began: a wait that overran (a busy
        # event loop, a batch of many questions) never brings the next request closer.
        async with self._host_locks.setdefault(host, asyncio.Lock()):
            now = self._clock()
            start = max(now, self._next_start.get(host, now))
            if start > now:
                await self._sleep(start - now)
            self._next_start[host] = max(self._clock(), start) + delay

    def take_page(self, host: str, pages: Counter[str]) -> str | None:
        """Count one page from ``host`` in ``pages`` (a run's count); why not, once its
        pages are used up (else None)."""
        cap = self._config.max_pages_per_host
        if pages[host] >= cap:
            return f"{CAPPED} ({cap} pages from {host}; --max-pages-per-host)"
        pages[host] += 1
        return None

    async def obey_robots(self, url: str) -> None:
        """Raise BlockedURLError when the site's robots.txt disallows ``url`` for us."""
        parsed = httpx.URL(url.strip())
        origin = f"{parsed.scheme}://{parsed.netloc.decode('ascii')}"
        task = self._robots.get(origin)
        if task is None:
            task = self._robots[origin] = asyncio.ensure_future(self._robots_of(origin))
        robots = await asyncio.shield(task)  # one caller giving up must not end it for all
        if not robots.allows(str(parsed), self._user_agent):
            raise BlockedURLError(url, "disallowed by robots.txt (--respect-robots)")

    async def _robots_of(self, origin: str) -> Robots:
        robots = await self._read_robots(origin)
        if robots.note:
            self.robots_notes[origin] = robots.note
        return robots

    def pending(self) -> list[asyncio.Task[Any]]:
        """The robots.txt reads still running (to cancel when the fetcher closes)."""
        return [task for task in self._robots.values() if not task.done()]
