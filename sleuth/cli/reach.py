"""``sleuth mcp`` and ``sleuth serve``: sleuth for agents (MCP) and for the browser.

Both take the research settings options (``--search``, ``--model``, ``--home``, ...)
as defaults for every research they run. The heavy packages (``mcp``, uvicorn,
Starlette) are imported only when the command runs, with a one-line hint when the
extra that brings them is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from sleuth._extras import extra_needed
from sleuth.cli._common import GroupedCommand, Option
from sleuth.cli._logs import verbose_option
from sleuth.errors import ConfigError

__all__ = ["reach_commands"]


def _mcp(http: bool | None, port: int | None, **values: Any) -> int:
    if port is not None and not http:
        raise ConfigError("--port goes with --http (stdio needs no port)")
    from sleuth.settings import load_settings

    settings = load_settings(values)
    with extra_needed("mcp", "sleuth mcp"):
        from sleuth import mcp_server
    if http:
        mcp_server.serve_http(settings, 8000 if port is None else port)
    else:
        mcp_server.serve_stdio(settings)
    return 0


def _serve(host: str | None, port: int, **values: Any) -> int:
    from sleuth.settings import load_settings

    settings = load_settings(values)
    with extra_needed("web", "sleuth serve"):
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401

        from sleuth import web
    web.serve(settings, host=host or web.DEFAULT_HOST, port=port)
    return 0


def reach_commands(settings_options: Callable[[str], list[click.Option]]) -> list[click.Command]:
    """The ``mcp`` and ``serve`` commands, with ``settings_options(name)``: the settings
    each takes as the defaults of its researches."""
    mcp = GroupedCommand(
        "mcp",
        lead="Server",
        short_help="Serve research as MCP tools (stdio, or HTTP).",
        callback=_mcp,
        params=[
            Option(
                ["--http"],
                is_flag=True,
                default=None,
                group="Server",
                help="Serve streamable HTTP on 127.0.0.1 instead of stdio.",
            ),
            Option(
                ["--port"],
                type=click.IntRange(0, 65535),
                default=None,
                group="Server",
                help="Port for --http (0: any free port). [default: 8000]",
            ),
            verbose_option(),
            *settings_options("mcp"),
        ],
        help="Serve sleuth's tools (web_research, fetch_page, web_search) over the Model "
        "Context Protocol: stdio by default, or streamable HTTP at "
        "http://127.0.0.1:PORT/mcp.",
    )
    serve = GroupedCommand(
        "serve",
        lead="Server",
        short_help="A local web page that runs a research and shows it live.",
        callback=_serve,
        params=[
            Option(
                ["--port"],
                type=click.IntRange(0, 65535),
                default=8000,
                group="Server",
                show_default=True,
                help="Port to listen on (0: any free port).",
            ),
            Option(
                ["--host"],
                default=None,
                group="Server",
                help="Address to listen on. [default: 127.0.0.1; anything else is "
                "reachable from other machines]",
            ),
            verbose_option(),
            *settings_options("serve"),
        ],
        help="Start a local web page that runs a research and shows it live.",
    )
    return [mcp, serve]
