"""What the command line prints from Python's logging: one line a warning, tracebacks with -v.

A page, search or model call that fails is recorded in the run (the report's Gaps) and
shown as a progress line; the log adds nothing a user needs to see by default. So
without ``--verbose`` a warning is one line on stderr (``sleuth: warning: …``, with the
exception's type and message but not its traceback), and sleuth's debug and info
records are not shown. ``--verbose`` shows sleuth's own records from DEBUG up, each
with its traceback when it has one. Other libraries' loggers stay at WARNING either way.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from sleuth._valid import valid_text

__all__ = ["cli_logging", "verbose_option"]


class _OneLine(logging.Formatter):
    """``sleuth: warning: message (ExcType: why)``: no traceback, no second line."""

    def format(self, record: logging.LogRecord) -> str:
        message = " ".join(record.getMessage().split())
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            why = " ".join(str(exc).split())
            message += f" ({type(exc).__name__}: {why})" if why else f" ({type(exc).__name__})"
        return f"sleuth: {record.levelname.lower()}: {message}"


_VERBOSE = logging.Formatter("sleuth: %(levelname)s %(name)s: %(message)s")


class _Stderr(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (tests swap it), never raising.

    Below WARNING, only sleuth's own records pass (a library such as bm25s may set its
    logger to DEBUG itself).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        ours = record.name == "sleuth" or record.name.startswith("sleuth.")
        return (ours or record.levelno >= logging.WARNING) and bool(super().filter(record))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = valid_text(self.format(record))
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:  # a log line must never end the run, nor print a traceback
            pass


_handler: _Stderr | None = None


@contextmanager
def cli_logging() -> Iterator[None]:
    """Log to stderr as described above while the block runs (one command of the CLI)."""
    global _handler
    root, ours = logging.getLogger(), logging.getLogger("sleuth")
    handler = _Stderr(logging.WARNING)
    handler.setFormatter(_OneLine())
    saved = (root.level, ours.level, _handler)
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    _handler = handler
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        ours.setLevel(saved[1])
        _handler = saved[2]


def _be_verbose(ctx: click.Context, param: click.Parameter, value: bool | None) -> None:
    from sleuth.cli._progress import VERBOSE_KEY

    if value:
        ctx.find_root().meta[VERBOSE_KEY] = True  # the progress prints every event
    if not value or _handler is None:
        return
    _handler.setLevel(logging.DEBUG)
    _handler.setFormatter(_VERBOSE)
    logging.getLogger("sleuth").setLevel(logging.DEBUG)


def verbose_option() -> click.Option:
    """``--verbose``/``-v``: sleuth's debug log, with tracebacks, on stderr."""
    from sleuth.cli._common import Option

    return Option(
        ["--verbose", "-v"],
        is_flag=True,
        default=False,
        expose_value=False,
        is_eager=True,
        callback=_be_verbose,
        group="Output",
        help="Show every progress event and sleuth's debug log on stderr, with tracebacks.",
    )
