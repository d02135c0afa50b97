"""Stage 6, write: the Markdown report.

Citations are numbered by sleuth from the sources it actually read; page text is
quoted as data (block quotes, footnote markers and Markdown control characters
neutralised), never interpreted.
"""

from __future__ import annotations

import re
from typing import Literal

from sleuth.models import Failure, Source

Confidence = Literal["HIGH", "MEDIUM", "LOW"]

_FOOTNOTE = re.compile(r"\[\s*(?:\d+|citation needed|note \d+|[a-z])\s*\]", re.IGNORECASE)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def confidence(sources: list[Source]) -> tuple[Confidence, str]:
    """grip's rule, counting only sources that were read.

    HIGH: at least 3 sources and mean quality ≥ 3.5; MEDIUM: at least 2 sources, or
    one source of mean quality ≥ 3.0; LOW otherwise (always LOW with no source).
    """
    n = len(sources)
    if n == 0:
        return "LOW", "no source could be read"
    mean = sum(s.quality_score for s in sources) / n
    primary = sum(1 for s in sources if s.quality.value == "PRIMARY")
    detail = f"{n} source{'s' if n != 1 else ''} read, mean quality {mean:.1f}, {primary} primary"
    if n >= 3 and mean >= 3.5:
        return "HIGH", f"{detail}; several authoritative sources"
    if n >= 2 or mean >= 3.0:
        return "MEDIUM", f"{detail}; limited sources or mixed authority"
    return "LOW", f"{detail}; few sources, only unofficial references"


def escape_inline(text: str) -> str:
    """Text safe to put inside Markdown emphasis or a list line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def quote(passage: str) -> str:
    """A passage as a Markdown block quote, with footnote markers like [3] removed."""
    cleaned = " ".join(_FOOTNOTE.sub("", passage).split())
    return "> " + _MD_SPECIAL.sub(r"\\\1", cleaned)


def _findings(sources: list[Source]) -> list[str]:
    if not sources:
        return ["_No source could be read; see Gaps._", ""]
    lines: list[str] = []
    for source in sources:
        lines.append(f"**[{source.id}] {escape_inline(source.title)} ({source.quality.value})**")
        lines.append("")
        body = [source.summary] if source.summary else source.passages
        for passage in body:
            lines.extend([quote(passage), ""])
    return lines


def _gaps(failures: list[Failure]) -> list[str]:
    if not failures:
        return ["_Every source that was tried could be read._"]
    lines = []
    for failure in failures:
        where = f"<{failure.url}>" if failure.url.startswith(("http://", "https://")) else "search"
        lines.append(f"- {where} — {escape_inline(failure.reason)}")
    return lines


def render_markdown(question: str, sources: list[Source], failures: list[Failure],
                    level: Confidence, reason: str) -> str:
    """The full report: findings, confidence, sources and gaps."""
    lines = [f"# Research: {escape_inline(question)}", "", "## Key Findings", ""]
    lines += _findings(sources)
    lines += [f"## Confidence: {level} — {reason}", "", "## Sources", ""]
    if sources:
        for source in sources:
            lines.append(f"[{source.id}] [{source.quality.value}] "
                         f"{escape_inline(source.title)} — <{source.url}>  ")
    else:
        lines.append("_None._")
    lines += ["", "## Gaps", "", *_gaps(failures), ""]
    return "\n".join(lines)
