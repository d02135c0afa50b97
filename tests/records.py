"""The records tests build by hand: a candidate in a ranking, a source of a report, a page
as read, a note in a documents folder.

One place for what several test files needed alike (a candidate from a URL, a page with
some text, a file written with its folders), so a change to the records is made once.
"""

from __future__ import annotations

from pathlib import Path

from sleuth.models import Candidate, Page, Quality, Source
from sleuth.testing import OfflineWeb
from sleuth.urls import canonicalize

#: A page's text when the test does not care what it says.
TEXT = "Some text about the question. " * 20


def candidate(
    url: str,
    title: str | None = None,
    queries: list[str] | None = None,
    *,
    score: float = 1.0,
    snippet: str = "",
) -> Candidate:
    """A ranked candidate for ``url``, titled with its URL unless given a ``title``."""
    return Candidate(
        url=url,
        canonical_url=canonicalize(url),
        domain=url.split("/")[2],
        title=title or url,
        snippet=snippet,
        quality=Quality.UNVERIFIED,
        quality_score=2,
        frequency=1,
        score=score,
        queries=queries or [],
    )


def source(n: int, title: str, url: str | None = None) -> Source:
    """Source ``n`` of a report, unlisted, with no passages of its own (its text is given
    beside it), at ``url`` or ``https://s{n}.example/``."""
    return Source(
        id=n,
        url=url or f"https://s{n}.example/",
        title=title,
        quality=Quality.UNVERIFIED,
        quality_score=2,
        score=1.0,
        passages=[],
    )


def page(url: str, title: str | None = None, text: str = TEXT, *, elapsed_s: float = 0.0) -> Page:
    """``url`` as read: ``text`` (200 HTML), titled with its URL unless given a ``title``;
    ``elapsed_s``: how long reading it took."""
    return Page(
        url=url,
        final_url=url,
        canonical_url=canonicalize(url),
        title=title or url,
        text=text,
        content_type="text/html",
        status=200,
        elapsed_s=elapsed_s,
    )


def note(path: Path, text: str) -> Path:
    """``text`` written to ``path`` (UTF-8), its folders made: a file of a ``--docs``
    folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def no_model_cli(web: OfflineWeb, home: Path, *extra: str) -> list[str]:
    """CLI arguments for a quiet no-model run on the offline ``web`` with ``home`` as its
    store (5 s page timeout), then ``extra``."""
    return [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "5",
        "--no-llm",
        "--quiet",
        "--home",
        str(home),
        *extra,
    ]


# A two-hop question over a folder of notes: the answer is on a page that shares no word
# with the question, named by the question's own page (deep mode's second hop finds it).
BRIDGE_DOCS = {
    # The question's own page: it names the composer, the bridge.
    "glass-orchard.md": "# The Glass Orchard\n\nThe Glass Orchard is an opera in three acts "
    "first staged in 1921. Its music was written by Ilsa Varenne, and "
    "its libretto by the poet Tomas Quell.\n",
    # The bridge page: the answer, with no word of the question in it.
    "ilsa-varenne.md": "# Ilsa Varenne\n\nIlsa Varenne (1880-1944) grew up in Brackwater, "
    "a mill village on the river Tamsel, and studied in Vienna. Her songs "
    "were sung in Brackwater's chapel for decades.\n",
    # Pages that share the question's words and do not help.
    "orchard-care.md": "# Orchard care\n\nAn orchard needs pruning in winter. Straw covers "
    "keep frost off young trees; the town orchard was born of a gift.\n",
    "glassblowing.md": "# Glassblowing\n\nGlass is blown in a furnace. A composer of glass "
    "art works in a studio; a town glassworks was born in 1900.\n",
    "operas.md": "# Operas of the 1920s\n\nMany operas were staged in the 1920s. An opera "
    "composer of the time was often born in a capital.\n",
}
BRIDGE_QUESTION = "In which town was the composer of The Glass Orchard born?"
