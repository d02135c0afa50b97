"""robots.txt for ``--respect-robots``: one file per site, parsed by the standard library.

The :class:`~sleuth.fetch.Fetcher` downloads ``/robots.txt`` itself, through its
guarded client (same SSRF guard, domain lists and host pacing as pages), with a
small size cap and a short deadline; this module only turns what came back into
a yes/no per URL. ``urllib.robotparser`` is only ever given text: it never fetches.

What an answer means (RFC 9309, except where noted):

* 2xx: the rules in the file, from the first ``User-agent`` group that names our
  token (``sleuth`` in ``sleuth/0.1 (...)``), else from the ``*`` group;
* 4xx (no file, or none for us): everything allowed;
* 5xx, a timeout, a network error, a file over the cap: everything allowed, and
  the problem noted (RFC 9309 would assume "disallow all" for 5xx; for a tool that
  reads a handful of pages a person asked about, losing the page is worse).

The standard parser matches path prefixes in file order (the first matching rule
wins) and knows no ``*``/``$`` wildcards; rules that use them match nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.robotparser import RobotFileParser

__all__ = ["ROBOTS_MAX_BYTES", "ROBOTS_TIMEOUT", "Robots", "robots_url"]

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

    parser: RobotFileParser | None = None
    note: str | None = None

    @classmethod
    def parse(cls, text: str) -> Robots:
        """Rules from the text of a robots.txt."""
        parser = RobotFileParser()
        parser.parse(text.splitlines())
        parser.modified()  # can_fetch() says no to everything until it thinks it "read" one
        return cls(parser)

    @classmethod
    def allow_all(cls, note: str | None = None) -> Robots:
        """No usable file: everything allowed (``note`` says why, when that is news)."""
        return cls(None, note)

    def allows(self, url: str, user_agent: str) -> bool:
        """Whether ``user_agent`` (the whole header; its first token counts) may get ``url``."""
        if self.parser is None:
            return True
        return self.parser.can_fetch(user_agent, url)
