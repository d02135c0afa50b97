"""Extraction: bytes in, readable text out. Pure functions, no I/O but the worker pool.

    from sleuth.extraction import extract
    doc = extract(html, url="https://example.com/post")   # Extracted(text, title, date)

:mod:`~sleuth.extraction.decode` (charsets, binary sniffing), :mod:`~sleuth.extraction.html`
(hidden text, trafilatura, the block model's choice: :mod:`~sleuth.extraction.blocks` cuts
the page into blocks and describes them, :mod:`~sleuth.extraction.model` scores them),
:mod:`~sleuth.extraction.pdf`, :mod:`~sleuth.extraction.content` (a downloaded body by its
kind), :mod:`~sleuth.extraction.text` (the :class:`Extracted` record and its tidy-up).
:mod:`~sleuth.extraction.workers` runs extraction in worker processes, each page bounded
in time and memory.

``sleuth.extract`` as an attribute of the ``sleuth`` package is the function
:func:`extract`; import this package's modules by name (``from sleuth.extraction import
html``).
"""

from sleuth.extraction.decode import decode_body, looks_binary
from sleuth.extraction.html import extract
from sleuth.extraction.pdf import pdf_text
from sleuth.extraction.text import Extracted, ExtractError, normalize_text, truncate_text

__all__ = [
    "ExtractError",
    "Extracted",
    "decode_body",
    "extract",
    "looks_binary",
    "normalize_text",
    "pdf_text",
    "truncate_text",
]
