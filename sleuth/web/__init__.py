"""``sleuth serve``: a local web page that runs a research and shows it live.

Needs Starlette and uvicorn (the ``web`` extra). It binds 127.0.0.1 unless a host
is given explicitly; see :mod:`sleuth.web.app` for the routes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import sys

from sleuth.errors import ConfigError
from sleuth.settings import Settings

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "bind", "is_loopback", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one); ConfigError when it can't."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def _warm_up() -> None:
    """Load the pipeline and its extraction and ranking libraries (trafilatura, lxml, bm25s)
    now, so that the page's first research is as quick as the next ones."""
    try:
        from sleuth.extraction import extract
        from sleuth.stages.read import best_passages

        text = "<p>sleuth warms up its text extraction before the first research starts.</p>"
        extract(f"<html><body><article>{text * 3}</article></body></html>", url="http://127.0.0.1/")
        # Three passages for one wanted: fewer would return before bm25s is loaded.
        passage = (
            "sleuth reads each page it fetched and keeps the passages that answer "
            "the question, ranked by BM25."
        )
        best_passages("\n\n".join([passage] * 3), ["passage"], 1)
    except Exception:  # a slower first research, nothing worse
        return


def serve(settings: Settings, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serve the page until interrupted; prints its URL on stderr."""
    import uvicorn

    from sleuth.web.app import create_app, host_names

    sock = bind(host, port)
    _warm_up()
    actual = sock.getsockname()[1]
    loopback = is_loopback(host)
    # Behind a loopback bind, only loopback Host names (and the address bound, such as
    # 127.0.0.2) are answered (DNS rebinding guard); a host given on purpose beyond
    # loopback is answered under any name.
    app = create_app(settings, allowed_hosts=host_names(host) if loopback else ["*"])
    shown = f"[{host}]" if ":" in host else host
    print(
        f"sleuth: serving on http://{shown}:{actual}/ (Ctrl-C to stop)", file=sys.stderr, flush=True
    )
    if not loopback:
        print(
            f"sleuth: warning: {host} is reachable from other machines; sleuth serve has no login",
            file=sys.stderr,
            flush=True,
        )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    asyncio.run(server.serve(sockets=[sock]))
