"""One TLS context per process, shared by every HTTP client sleuth makes.

Building a context loads the CA bundle (tens of milliseconds); a run makes several
clients (search, fetch, model, Ollama probe), so a cached rerun spent most of its
time here before the context was shared. ``ssl.SSLContext`` is safe to share.
"""

from __future__ import annotations

import ssl
from functools import lru_cache

import httpx


@lru_cache(maxsize=2)
def ssl_context(trust_env: bool = True) -> ssl.SSLContext:
    """The verifying context; ``trust_env`` honours ``SSL_CERT_FILE``/``SSL_CERT_DIR``."""
    return httpx.create_ssl_context(trust_env=trust_env)
