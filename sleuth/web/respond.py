"""What the web app's endpoints answer with: JSON errors, and report HTML fit for the page."""

from __future__ import annotations

from starlette.responses import JSONResponse

from sleuth._valid import valid_text

__all__ = ["error", "for_page"]


def for_page(html: str) -> str:
    """Server-rendered HTML for the page, its ``style`` attributes as ``data-s`` ones.

    The page's CSP applies no inline style attribute (and says so in the console for
    each); its script sets each ``data-s`` through the CSSOM instead. Every attribute
    value was escaped, so `` style="`` can only be an attribute.
    """
    return html.replace(' style="', ' data-s="')


def error(message: str, status: int) -> JSONResponse:
    """A JSON error answer: ``{"error": message}`` with ``status``."""
    return JSONResponse({"error": valid_text(message)}, status_code=status)
