"""The stdio loop of ``sleuth mcp``: FastMCP's, with text made valid both ways.

A request line holding a lone surrogate escape (``"\\ud800"``) would be dropped by the
SDK's JSON parser, and its caller would wait forever; a reply holding one could not be
encoded and would end the server for every client. :func:`run_stdio` guards both.
"""

from __future__ import annotations

import json
import re
import sys
from io import TextIOWrapper
from typing import IO, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.fastmcp import FastMCP
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage

from sleuth._valid import valid_data

__all__ = ["run_stdio"]

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _ValidLines:
    """The stdin the SDK reads: each JSON line's lone surrogates replaced first.

    The SDK parses a line with pydantic, whose JSON parser refuses a lone-surrogate
    escape (``"\\ud800"``) outright; the request is then dropped and its caller waits for
    a reply forever. Python's json reads such a line; its text is made valid and the line
    written again as JSON. Every other line passes untouched.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def readline(self) -> str:
        line = self._stream.readline()
        if not _SURROGATE_ESCAPE.search(line):
            return line
        try:
            return json.dumps(valid_data(json.loads(line))) + "\n"
        except (ValueError, RecursionError):
            return line  # not JSON at all: the SDK answers that itself


def _valid_message(message: SessionMessage) -> SessionMessage:
    """``message``, or a copy with valid text when it holds something JSON cannot encode."""
    try:
        message.message.model_dump_json(by_alias=True, exclude_none=True)
    except ValueError:  # pydantic's PydanticSerializationError: "surrogates not allowed"
        data = valid_data(message.message.model_dump(by_alias=True, exclude_none=True))
        return SessionMessage(JSONRPCMessage.model_validate(data), metadata=message.metadata)
    return message


async def _forward_valid(
    source: MemoryObjectReceiveStream[SessionMessage], sink: MemoryObjectSendStream[SessionMessage]
) -> None:
    async with source, sink:
        async for message in source:
            await sink.send(_valid_message(message))


async def run_stdio(server: FastMCP) -> None:
    """FastMCP's stdio loop, with :class:`_ValidLines` in front and a last guard behind:
    a message the SDK's writer could not encode would end the server for every client."""
    stdin = anyio.wrap_file(
        cast(
            IO[str],
            _ValidLines(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")),
        )
    )
    stdout = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8", errors="replace"))
    lowlevel = server._mcp_server  # what FastMCP.run_stdio_async runs (mcp 1.x)
    async with stdio_server(stdin, stdout) as (read, write):
        send, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(_forward_valid, outgoing, write)
            async with send:
                await lowlevel.run(read, send, lowlevel.create_initialization_options())
