"""A JSON response as many real servers write it: every non-ASCII character escaped."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse

__all__ = ["EscapedJSONResponse"]


class EscapedJSONResponse(JSONResponse):
    """JSON with ``\\uXXXX`` escapes for everything beyond ASCII (Python's default).

    Starlette's own ``JSONResponse`` writes UTF-8, so it cannot send a lone surrogate
    at all; a hostile server sends one as the escape ``"\\ud800"``, and so can the
    offline web's search and the scripted model, which is what a client must survive.
    """

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")
