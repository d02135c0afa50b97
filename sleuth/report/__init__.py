"""A report as the user reads it outside the terminal.

:func:`render_html` (:mod:`sleuth.report.html`) renders one self-contained HTML page:
``--format html``, and the web page's download.
"""

from sleuth.report.html import render_html

__all__ = ["render_html"]
