"""A report as the user reads it outside the terminal.

:func:`render_report` gives a report in the format asked for (markdown, json or html):
the CLI's output and a batch's report files. :func:`render_html`
(:mod:`sleuth.report.html`) renders one self-contained HTML page: ``--format html``, and
the web page's download. The HTML renderer (markdown-it) loads on first use, so the CLI
does not pay for it on its way to the first search.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sleuth.models import Report
    from sleuth.report.html import render_html

__all__ = ["render_html", "render_report"]


def render_report(report: Report, fmt: str) -> str:
    """``report`` as the user asked for it: ``markdown``, ``json`` or ``html``."""
    if fmt == "json":
        return json.dumps(report.to_json_dict(), ensure_ascii=False, indent=2) + "\n"
    if fmt == "html":
        from sleuth.report.html import render_html

        return render_html(report)
    return report.markdown


def __getattr__(name: str) -> Any:
    if name == "render_html":
        from sleuth.report.html import render_html

        return render_html
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
